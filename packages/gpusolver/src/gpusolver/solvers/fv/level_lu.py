"""Exact LU of a cell-coupled sparse matrix on the backend, by breadth-first levels of cells.

Number the cells by their breadth-first distance from a set of seed cells (a boundary's,
say): a face joins cells of one level or of two neighbouring levels, so a matrix whose
entries couple only a cell with itself and its face neighbours (the first-order implicit
operator, a turbulence scalar's matrix) is **block tridiagonal** in those levels, with
dense blocks as wide as a level's unknowns. Block cyclic reduction (Hockney 1965; Buzbee,
Golub & Nielson 1970) factorises and solves it exactly in ``log2(levels)`` stages, each a
handful of batched dense operations (inverses and products of every block of the stage at
once): tens of launches where a sparse triangular solve has thousands of dependent rows.
Its cost grows with the levels' width cubed, so it suits two-dimensional meshes (a
level's width grows as the square root of the cells) and leaves three-dimensional ones to
other solvers (:func:`level_cost` says what a mesh would take).

At each stage the even blocks ``e`` are eliminated and the odd ``k`` kept:

    B'_k = B_k - A_k B_(k-1)^-1 C_(k-1) - C_k B_(k+1)^-1 A_(k+1),
    A'_k = -A_k B_(k-1)^-1 A_(k-1),   C'_k = -C_k B_(k+1)^-1 C_(k+1),

with ``A`` a level's coupling to the level before, ``B`` its own block, ``C`` its coupling
to the next. The solve reduces the right-hand side the same way, solves the last block and
substitutes back stage by stage. Inverting dense blocks with partial pivoting is no
less exact than a sparse LU of the same matrix where the blocks are well conditioned, as
the implicit operators' diagonal-heavy blocks are; a test compares the two.

On CuPy the solve runs in the kernels of ``kernels/level_lu.cu`` (:class:`KernelSolve`):
three launches a stage on buffers kept between solves, where CuPy's batched products
and slices took about 90 launches and 1.5-2 ms a solve, launch-bound, on 2-D meshes
(H200); so does the factorisation of levels up to 96 unknowns wide (a turbulence
scalar's: :class:`KernelFactorise`, three launches a stage). The array code is the NumPy
reference.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from meshorder.graph import bfs_levels
from meshorder.topology import CSR


@dataclass(frozen=True)
class CellLevels:
    """Breadth-first levels of the cells and each cell's place in its level.

    Attributes
    ----------
    level : numpy.ndarray
        ``(n_cells,)`` distance of each cell from the seeds, in faces.
    position : numpy.ndarray
        ``(n_cells,)`` rank of each cell among the cells of its level.
    width : int
        Cells in the widest level.
    """

    level: np.ndarray
    position: np.ndarray
    width: int

    @property
    def n_levels(self) -> int:
        """How many levels there are."""
        return int(self.level.max()) + 1

    @classmethod
    def from_seeds(cls, graph: CSR, seeds: np.ndarray) -> CellLevels:
        """The levels of ``graph``'s nodes from ``seeds``.

        Raises
        ------
        ValueError
            If a cell cannot be reached from the seeds.
        """
        level = bfs_levels(graph, seeds)
        if (level < 0).any():
            raise ValueError(f"cell {int(np.argmax(level < 0))} is not connected to the "
                             "seeds of the levels")
        order = np.argsort(level, kind="stable")
        counts = np.bincount(level)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        position = np.empty(len(level), dtype=np.int64)
        position[order] = np.arange(len(level)) - np.repeat(starts, counts)
        return cls(level, position, int(counts.max()))


def level_cost(levels: CellLevels, n_vars: int) -> int:
    """Entries of the dense blocks a factorisation holds: about ``5 n_levels W^2`` for
    ``W = width * n_vars`` (what the stages keep for the solves), a measure of memory and
    of a solve's work."""
    width = levels.width * n_vars
    return 5 * levels.n_levels * width * width


def narrowest_levels(graph: CSR, seed_sets: Sequence[np.ndarray]) -> CellLevels:
    """Of the levels from each set of seed cells, those whose blocks hold the fewest
    entries (:func:`level_cost`).

    Examples
    --------
    A 3 x 4 grid of cells (numbered row by row): from its left column the levels are
    its four columns, three cells wide; from its top row, its three rows, four wide. The
    columns' blocks hold fewer entries (4 x 3^2 against 3 x 4^2):

    >>> pairs = [(r * 4 + c, r * 4 + c + 1) for r in range(3) for c in range(3)]
    >>> pairs += [(r * 4 + c, r * 4 + c + 4) for r in range(2) for c in range(4)]
    >>> left, right = (np.array(side) for side in zip(*pairs))
    >>> graph = CSR.from_pairs(left, right, 12)
    >>> levels = narrowest_levels(graph, [np.array([0, 4, 8]), np.array([0, 1, 2, 3])])
    >>> levels.n_levels, levels.width
    (4, 3)
    """
    candidates = [CellLevels.from_seeds(graph, seeds) for seeds in seed_sets]
    return min(candidates, key=lambda levels: level_cost(levels, 1))


class LevelLU:
    """Block cyclic reduction of the matrices of one sparsity pattern (module docstring).

    Parameters
    ----------
    levels : CellLevels
        The cells' levels; every entry must couple cells at most one level apart.
    row_cells, col_cells : numpy.ndarray
        ``(n_blocks,)`` the cells of each ``n_vars x n_vars`` block of the pattern
        (unknowns numbered cell-major within a cell: variable ``a`` of cell ``c``).
    n_vars : int
    backend : gpusolver.backends.Backend
    dtype : numpy dtype
        Of the factors.
    kernels : bool, optional
        Factorise and solve in the kernels (:class:`KernelFactorise`, where levels are
        at most :attr:`KernelFactorise.MAX_GPU_WIDTH` unknowns wide, and
        :class:`KernelSolve`; on NumPy compiled for the CPU) rather than in array code; by
        default on CuPy only.

    Raises
    ------
    ValueError
        If an entry couples cells more than one level apart.
    """

    def __init__(self, levels: CellLevels, row_cells: np.ndarray, col_cells: np.ndarray,
                 n_vars: int, backend, dtype=np.float64, kernels: bool | None = None):
        self.backend, self.dtype, self.n_vars = backend, np.dtype(dtype), n_vars
        kernels = backend.name == "cupy" if kernels is None else kernels
        level, position = levels.level, levels.position
        self.n_levels, self.width = levels.n_levels, levels.width * n_vars
        step = level[col_cells] - level[row_cells]
        if (abs(step) > 1).any():
            at = int(np.argmax(abs(step) > 1))
            raise ValueError(f"cells {int(row_cells[at])} and {int(col_cells[at])} are "
                             f"{int(abs(step[at]))} levels apart: the matrix is not block "
                             "tridiagonal in these levels")
        width, n_levels = self.width, self.n_levels
        # an odd count of levels stacked (an identity level after an even count's last):
        # every kept level of the first stage has two neighbours
        stacked = n_levels | 1
        a = np.arange(n_vars)
        # flat index of entry (a, b) of each block in the (3, stacked, W, W) stack of the
        # couplings to the level before (0), within (1) and to the level after (2)
        row = position[row_cells] * n_vars
        col = position[col_cells] * n_vars
        block_start = ((step + 1) * stacked + level[row_cells]) * width * width
        index = (block_start[None, None] + (row[None, None] + a[:, None, None]) * width
                 + col[None, None] + a[None, :, None])
        self._entries = backend.asarray(index.reshape(-1))
        # the unused rows of narrower levels and the identity level: 1 on the diagonal, so
        # every block inverts
        used = np.bincount(level, minlength=stacked) * n_vars
        pad_level = np.repeat(np.arange(stacked), width - used)
        pad_row = np.concatenate([np.arange(u, width) for u in used])
        self._padding = backend.asarray((stacked + pad_level) * width * width
                                        + pad_row * (width + 1))
        # where each unknown (variable a of cell c, numbered a * n_cells + c) sits in the
        # (n_levels, W) right-hand side
        slot = level[None] * width + position[None] * n_vars + a[:, None]
        self._slots = backend.asarray(slot.reshape(-1))
        self.n_unknowns = slot.size
        self._kernel_solve = (KernelSolve(backend, self.dtype, self._slots, width)
                              if kernels else None)
        self._kernel_factorise = (KernelFactorise(backend, self.dtype, stacked, width)
                                  if kernels and KernelFactorise.fits(backend, width)
                                  else None)

    def factorise(self, blocks, slot: Hashable | None = None) -> Callable:
        """The solve of the matrix whose blocks (``(n_vars, n_vars, n_blocks)`` on the
        backend, in the pattern's order) are ``blocks``: a map of a ``(n_vars, n_cells)``
        array to the solution of the same shape, on the backend.

        ``slot`` names the factorisation where the kernels factorise: a factorisation of
        the same slot reuses its buffers (the solve returned before then solves with the
        new one); None: buffers of its own.

        Raises
        ------
        numpy.linalg.LinAlgError
            If a block is singular (NumPy; CuPy returns non-finite factors instead).
        """
        xp = self.backend.xp
        values = xp.asarray(blocks, dtype=self.dtype).reshape(-1)
        if self._kernel_factorise is not None:
            stages, last = self._kernel_factorise.factorise(values, self._entries,
                                                            self._padding, slot)
            return self._kernel_solve.solver(stages, last)
        width, n = self.width, self.n_levels | 1
        stack = xp.zeros(3 * n * width * width, dtype=self.dtype)
        self.backend.scatter["add"](stack, self._entries, values)
        stack[self._padding] = 1.0
        before, own, after = stack.reshape(3, n, width, width)
        stages = []
        while len(own) > 1:
            if len(own) % 2 == 0:  # an identity level at the end: every kept level has two
                before, own, after = (xp.concatenate([x, _blocks(xp, 1, width, x.dtype, eye)])
                                      for x, eye in ((before, False), (own, True),
                                                     (after, False)))
            inverse = self.backend.inverse(own[0::2])
            kept_before, kept_after = before[1::2], after[1::2]
            towards_before = kept_before @ inverse[:-1]   # A_k B_(k-1)^-1
            towards_after = kept_after @ inverse[1:]      # C_k B_(k+1)^-1
            eliminated_before, eliminated_after = before[0::2], after[0::2]
            own = (own[1::2] - towards_before @ eliminated_after[:-1]
                   - towards_after @ eliminated_before[1:])
            # a kept level's couplings side by side, to multiply its two neighbours at
            # once; the same for an eliminated level's back-substitution
            stages.append((inverse, xp.concatenate([kept_before, kept_after], axis=2),
                           xp.concatenate([inverse @ eliminated_before,
                                           inverse @ eliminated_after], axis=2)))
            before = -(towards_before @ eliminated_before[:-1])
            after = -(towards_after @ eliminated_after[1:])
        last = self.backend.inverse(own)
        if self._kernel_solve is not None:
            return self._kernel_solve.solver(stages, last)
        return self._solver(stages, last)

    def _solver(self, stages: list, last) -> Callable:
        """The solve of the factorisation's ``stages`` (each: its eliminated levels'
        inverses, its kept levels' couplings, its back-substitution's blocks) and the
        ``last`` level's inverse. Each stage's levels number one more than twice its
        kept ones (an identity level pads an even count); a level's two neighbours are
        two consecutive rows of a vector, read as one row of twice the width."""
        xp, slots, width = self.backend.xp, self._slots, self.width
        dtype, n_levels = self.dtype, self.n_levels

        def neighbours(rows, count: int):
            """``count`` rows ``(rows[j], rows[j + 1])`` of ``rows`` ``(m, width)``."""
            item = rows.itemsize
            return xp.lib.stride_tricks.as_strided(rows, (count, 2 * width, 1),
                                                   (width * item, item, item))

        def solve(rhs):
            b = xp.zeros((len(stages[0][0]) * 2 - 1 if stages else 1, width), dtype=dtype)
            b.reshape(-1)[slots] = rhs.reshape(-1)
            reduced = []  # per stage: B_e^-1 b_e of its eliminated levels
            for inverse, couple, _ in stages:
                z = xp.matmul(inverse, b[0::2, :, None])[..., 0]
                reduced.append(z)
                kept = len(couple)
                nxt = xp.zeros((kept | 1, width), dtype=dtype)  # padded where even
                xp.subtract(b[1::2], xp.matmul(couple, neighbours(z, kept))[..., 0],
                            out=nxt[:kept])
                b = nxt
            # the solution of each stage's levels, between two zero rows
            x = xp.zeros((3, width), dtype=dtype)
            x[1] = (last[0] @ b[0, :, None])[:, 0]
            for (_, couple, back), z in zip(stages[::-1], reduced[::-1], strict=True):
                kept, levels = len(couple), 2 * len(couple) + 1
                out = xp.zeros((levels + 2, width), dtype=dtype)
                inner = out[1:levels + 1]
                xp.subtract(z, xp.matmul(back, neighbours(x, len(z)))[..., 0],
                            out=inner[0::2])
                inner[1::2] = x[1:kept + 1]
                x = out
            return x[1:n_levels + 1].reshape(-1)[slots].reshape(rhs.shape).astype(
                rhs.dtype, copy=False)
        return solve


class KernelSolve:
    """:meth:`LevelLU.factorise`'s solve in the kernels of ``kernels/level_lu.cu``, the
    array code's steps (:meth:`LevelLU._solver`) on buffers made once per pattern: each
    stage's reduced right-hand side, its eliminated levels' ``B_e^-1 b_e`` and its
    solution rows. The rows that must stay zero (narrow levels' padding, an even count's
    identity level, the zero rows around a stage's solution) are never written. Every
    factorisation of the pattern shares the buffers (SST's two scalars, each with its own
    factorisation): solves run one at a time, on the current stream, each returning a new
    array.

    Parameters
    ----------
    backend : gpusolver.backends.Backend
    dtype : numpy dtype
        Of the factors and the work.
    slots : array
        Each unknown's place in the ``(n_levels, width)`` rows (backend, int64).
    width : int
        Unknowns in a level's rows.
    """

    #: Threads a block.
    BLOCK = 256

    def __init__(self, backend, dtype, slots, width: int):
        from gpusolver.backends.cuda import real_type

        self.backend, self.dtype, self.slots = backend, np.dtype(dtype), slots
        self.width = width
        #: Threads that share a block's row: a warp on the GPU, one on the CPU.
        self.lanes = 32 if backend.name == "cupy" else 1
        real = real_type(self.dtype)
        names = (f"block_products<{real}, {self.lanes}>", f"move_slots<{real}>",
                 f"copy_rows<{real}>")
        kernels = backend.kernels(__package__, "kernels/level_lu.cu", names)
        self._products, self._move, self._copy = (kernels[name] for name in names)
        self._buffers: tuple | None = None

    def _work(self, stages: list) -> tuple:
        """The buffers (rows per stage and the last one, reduced rows per stage,
        solution rows per stage and the last level's), zero, made on the first solve."""
        if self._buffers is None:
            xp, width = self.backend.xp, self.width
            rows = [xp.zeros((len(inverse) * 2 - 1, width), dtype=self.dtype)
                    for inverse, _, _ in stages]
            rows.append(xp.zeros((len(stages[-1][1]) | 1 if stages else 1, width),
                                 dtype=self.dtype))
            reduced = [xp.zeros((len(inverse), width), dtype=self.dtype)
                       for inverse, _, _ in stages]
            solutions = [xp.zeros((2 * len(couple) + 3, width), dtype=self.dtype)
                         for _, couple, _ in stages]
            solutions.append(xp.zeros((3, width), dtype=self.dtype))
            self._buffers = rows, reduced, solutions
        return self._buffers

    def _product(self, blocks, x, x_stride: int, y, y_offset: int, y_stride: int,
                 c=None, c_offset: int = 0, c_stride: int = 0) -> None:
        """``y`` rows ``k`` (from ``y_offset``, ``y_stride`` apart) ``= c_k - blocks_k v_k``
        (or ``blocks_k v_k`` without ``c``), ``v_k`` the ``cols`` entries of ``x`` from
        ``k x_stride``."""
        count, rows, cols = blocks.shape
        threads = count * rows * self.lanes
        i64 = np.int64
        self._products(((threads + self.BLOCK - 1) // self.BLOCK,), (self.BLOCK,), (
            blocks, np.int32(rows), np.int32(cols), x, i64(x_stride),
            y if c is None else c, i64(c_offset), i64(c_stride), np.int32(c is not None),
            y, i64(y_offset), i64(y_stride), i64(count)))

    def _moved(self, rows, offset: int, values, to_rows: bool) -> None:
        n = len(values)
        self._move(((n + self.BLOCK - 1) // self.BLOCK,), (self.BLOCK,),
                   (rows, np.int64(offset), self.slots, values, np.int64(n),
                    np.int32(to_rows)))

    def solver(self, stages: list, last) -> Callable:
        """The solve of the factorisation ``stages``, ``last`` (see
        :meth:`LevelLU._solver`): :meth:`solve` bound to them."""
        for inverse, couple, back in stages:
            for blocks in (inverse, couple, back):
                if not blocks.flags.c_contiguous:
                    raise ValueError("a stage's blocks must be C-contiguous")
        return functools.partial(self.solve, stages, last)

    def solve(self, stages: list, last, rhs):
        """The solution of the factorisation ``stages``, ``last`` for ``rhs``
        ``(n_vars, n_cells)``: a new array of ``rhs``'s shape and dtype."""
        xp, width = self.backend.xp, self.width
        rows, reduced, solutions = self._work(stages)
        values = xp.ascontiguousarray(rhs.reshape(-1), dtype=self.dtype)
        self._moved(rows[0], 0, values, True)
        for s, (inverse, couple, _) in enumerate(stages):
            # B_e^-1 b_e of the eliminated (even) levels; the kept levels' rows less
            # their couplings to their two neighbours' B^-1 b
            self._product(inverse, rows[s], 2 * width, reduced[s], 0, width)
            self._product(couple, reduced[s], width, rows[s + 1], 0, width,
                          c=rows[s], c_offset=width, c_stride=2 * width)
        x = solutions[-1]
        self._product(last, rows[-1], width, x, width, width)
        for s in range(len(stages) - 1, -1, -1):
            _, couple, back = stages[s]
            out, kept = solutions[s], len(couple)
            # between the zero rows: eliminated levels (odd rows), kept ones (even)
            self._product(back, x, width, out, width, 2 * width, c=reduced[s],
                          c_stride=width)
            self._copy((((kept * width) + self.BLOCK - 1) // self.BLOCK,), (self.BLOCK,),
                       (x, np.int64(width), np.int64(width), out, np.int64(2 * width),
                        np.int64(2 * width), np.int64(width), np.int64(kept)))
            x = out
        solution = xp.empty(len(values), dtype=self.dtype)
        self._moved(x, width, solution, False)
        return solution.reshape(rhs.shape).astype(rhs.dtype, copy=False)


#: Fields of one job of ``block_jobs`` (``kernels/level_lu.cu``): offset and row stride of
#: the output ``C`` and of ``D``, ``A1``, ``B1``, ``A2``, ``B2`` (offset -1: no such term),
#: then the signs of the two products.
JOB_FIELDS = 14
#: Rows and columns of the corner of a job's block that one thread computes.
JOB_TILE = 4


def _job(out: tuple[int, int], base: tuple[int, int] | None = None,
         first: tuple | None = None, second: tuple | None = None) -> list[int]:
    """One job ``C = D + s1 A1 B1 + s2 A2 B2``: ``out`` and ``base`` (offset, row stride),
    each product ``(sign, (a offset, a stride), (b offset, b stride))`` or None."""
    fields = [*out, *(base or (-1, 0))]
    for product in (first, second):
        fields += [*product[1], *product[2]] if product else [-1, 0, -1, 0]
    return fields + [product[0] if product else 0 for product in (first, second)]


class KernelFactorise:
    """:meth:`LevelLU.factorise`'s elimination in the kernels of ``kernels/level_lu.cu``:
    three launches a stage (the eliminated levels' inverses, then the products that need
    only them, then the kept levels' new blocks), each stage's products one list of jobs
    made once per pattern, every block in one workspace per factorisation ``slot``, where
    CuPy's batched products, slices and copies take about 17 launches and allocations a
    stage (TMR's flat plate: its nu_tilde matrix's factorisation about 7 ms of a step's
    25-30, H200). The workspace holds each stage's levels (before, own, after: an odd
    count, an identity level after an even one), its inverses, couplings and
    back-substitution blocks (:meth:`LevelLU._solver`), and the two products of each kept
    level's couplings with its neighbours' inverses.

    Parameters
    ----------
    backend : gpusolver.backends.Backend
    dtype : numpy dtype
    stacked : int
        Levels of the first stage (odd).
    width : int
        Unknowns in a level's rows.
    """

    #: Threads a block.
    BLOCK = 256

    #: The most unknowns of a level's rows that the GPU factorises in these kernels: a
    #: thread's products run at about 3 TFLOP/s in fp64, where CuPy's (cuBLAS's) are
    #: faster but cost a launch and an allocation each. Scalar patterns of 176 levels,
    #: H200, 2026-11-29 (each against CuPy's array code): 64 wide 1.66 ms against 5.36,
    #: 96 wide 3.75 against 7.16, 128 wide 7.54 against 7.02; the dense inverses, the same
    #: kernel in both, took 1.2, 2.7 and 5.6 ms of them.
    MAX_GPU_WIDTH = 96

    @classmethod
    def fits(cls, backend, width: int) -> bool:
        """Whether these kernels factorise levels ``width`` unknowns wide (always on
        NumPy, whose inverses are LAPACK's; on the GPU up to :attr:`MAX_GPU_WIDTH`)."""
        return backend.name != "cupy" or width <= cls.MAX_GPU_WIDTH

    def __init__(self, backend, dtype, stacked: int, width: int):
        from gpusolver.backends.cuda import real_type

        self.backend, self.dtype, self.width = backend, np.dtype(dtype), width
        block = width * width
        self.size = 0

        def take(blocks: int) -> int:
            start, self.size = self.size, self.size + blocks * block
            return start

        #: Per stage: its (odd) level count and the offsets of its levels (before, own,
        #: after), inverses, couplings, back-substitution blocks and products.
        self.stages: list[dict] = []
        count = stacked
        while True:
            levels = take(3 * count)
            stage = {"count": count, "before": levels, "own": levels + count * block,
                     "after": levels + 2 * count * block}
            self.stages.append(stage)
            if count == 1:
                break
            eliminated, kept = (count + 1) // 2, (count - 1) // 2
            stage |= {"inverse": take(eliminated), "couple": take(2 * kept),
                      "back": take(2 * eliminated), "towards_before": take(kept),
                      "towards_after": take(kept)}
            count = kept | 1
        self.last = take(1)
        #: Per stage but the last, its two launches' jobs (on the backend).
        self.jobs = [tuple(backend.asarray(np.array(jobs, dtype=np.int64).reshape(-1))
                           for jobs in self._stage_jobs(stage, after))
                     for stage, after in itertools.pairwise(self.stages)]
        # the identity levels after an even count of kept levels (stages past the first)
        self._identity = np.concatenate([np.zeros(0, np.int64)] + [
            stage["own"] + (stage["count"] - 1) * block + np.arange(width) * (width + 1)
            for before, stage in itertools.pairwise(self.stages)
            if stage["count"] > (before["count"] - 1) // 2])
        name = f"block_jobs<{real_type(self.dtype)}>"
        self._kernel = backend.kernels(__package__, "kernels/level_lu.cu", (name,))[name]
        self._workspaces: dict = {}

    def _stage_jobs(self, stage: dict, after: dict) -> tuple[list, list]:
        """The jobs of one stage's two launches (its products that need the inverses, and
        those that need those products), writing the next stage's levels ``after``."""
        w, block = self.width, self.width * self.width

        def at(name: str, k: int, stride: int = 1) -> tuple[int, int]:
            return stage[name] + k * stride * block, w

        first, second = [], []
        for k in range(stage["count"] // 2):  # kept levels: 2k + 1 of the stage's
            first += [_job(at("towards_before", k), first=(1, at("before", 2 * k + 1),
                                                           at("inverse", k))),
                      _job(at("towards_after", k), first=(1, at("after", 2 * k + 1),
                                                          at("inverse", k + 1))),
                      _job((stage["couple"] + 2 * k * block, 2 * w), at("before", 2 * k + 1)),
                      _job((stage["couple"] + 2 * k * block + w, 2 * w),
                           at("after", 2 * k + 1))]
            second += [
                _job((after["own"] + k * block, w), at("own", 2 * k + 1),
                     (-1, at("towards_before", k), at("after", 2 * k)),
                     (-1, at("towards_after", k), at("before", 2 * k + 2))),
                _job((after["before"] + k * block, w),
                     first=(-1, at("towards_before", k), at("before", 2 * k))),
                _job((after["after"] + k * block, w),
                     first=(-1, at("towards_after", k), at("after", 2 * k + 2)))]
        for e in range((stage["count"] + 1) // 2):  # eliminated levels: 2e
            first += [_job((stage["back"] + 2 * e * block, 2 * w),
                           first=(1, at("inverse", e), at("before", 2 * e))),
                      _job((stage["back"] + 2 * e * block + w, 2 * w),
                           first=(1, at("inverse", e), at("after", 2 * e)))]
        return first, second

    def _workspace(self, slot: Hashable | None):
        """The slot's workspace (a new one for None), its identity levels set."""
        work = self._workspaces.get(slot) if slot is not None else None
        if work is None:
            work = self.backend.xp.zeros(self.size, dtype=self.dtype)
            work[self.backend.asarray(self._identity)] = 1.0
            if slot is not None:
                self._workspaces[slot] = work
        return work

    def _invert(self, work, source: int, stride: int, out: int, count: int) -> None:
        """``count`` inverses of the blocks at ``source`` (``stride`` apart) into ``out``."""
        w = self.width
        if self.backend.name == "cupy":
            from gpusolver.backends.cuda import invert_strided

            invert_strided(work[source:], stride, work[out:], w * w, count, w)
            return
        blocks = work[source:source + (count - 1) * stride + w * w]
        matrices = np.lib.stride_tricks.as_strided(
            blocks, (count, w, w), (stride * blocks.itemsize, w * blocks.itemsize,
                                    blocks.itemsize))
        work[out:out + count * w * w] = np.linalg.inv(matrices).reshape(-1)

    def _launch(self, work, jobs) -> None:
        tiles = -(-self.width // JOB_TILE)
        threads = (len(jobs) // JOB_FIELDS) * tiles * tiles
        if threads:
            self._kernel(((threads + self.BLOCK - 1) // self.BLOCK,), (self.BLOCK,),
                         (work, jobs, np.int32(self.width), np.int64(len(jobs) // JOB_FIELDS)))

    def factorise(self, values, entries, padding, slot: Hashable | None) -> tuple[list, object]:
        """The stages and the last level's inverse (views of the slot's workspace) of the
        matrix whose entries ``values`` go to ``entries`` of the first stage's levels
        (``padding``: their diagonal ones)."""
        w, block = self.width, self.width * self.width
        work = self._workspace(slot)
        first = self.stages[0]
        work[:3 * first["count"] * block] = 0.0
        self.backend.scatter["add"](work, entries, values)
        work[padding] = 1.0
        stages = []
        for stage, (products, news) in zip(self.stages[:-1], self.jobs, strict=True):
            eliminated, kept = (stage["count"] + 1) // 2, stage["count"] // 2
            self._invert(work, stage["own"], 2 * block, stage["inverse"], eliminated)
            self._launch(work, products)
            self._launch(work, news)
            stages.append((
                work[stage["inverse"]:stage["inverse"] + eliminated * block].reshape(
                    eliminated, w, w),
                work[stage["couple"]:stage["couple"] + 2 * kept * block].reshape(kept, w, 2 * w),
                work[stage["back"]:stage["back"] + 2 * eliminated * block].reshape(
                    eliminated, w, 2 * w)))
        self._invert(work, self.stages[-1]["own"], block, self.last, 1)
        return stages, work[self.last:self.last + block].reshape(1, w, w)


def _blocks(xp, count: int, width: int, dtype, identity: bool):
    """``count`` zero (or identity) ``width x width`` blocks."""
    blocks = xp.zeros((count, width, width), dtype=dtype)
    if identity:
        blocks[:, xp.arange(width), xp.arange(width)] = 1.0
    return blocks
