"""Face-flux kernels (``kernels/face_flux.cu``) under every accumulation strategy.

The Rusanov face-flux pass that ``gpusolver bench`` times; the sources are compiled
lazily through :mod:`gpusolver.backends.cuda`, and nothing here runs at import time.
"""

from __future__ import annotations

import itertools

import numpy as np

from gpusolver.backends import get_backend
from gpusolver.backends.cuda import check, grid, load_kernel
from gpusolver.layout.slots import face_slots
from gpusolver.layout.strategies import STRATEGIES as ALL_STRATEGIES
from meshorder.blocks import build_face_blocks

#: Every strategy of :data:`gpusolver.layout.strategies.STRATEGIES` has a face-flux kernel.
STRATEGIES = tuple(ALL_STRATEGIES)

#: Most faces per cell of the ``gather`` kernel (hexahedra).
MAX_GATHER_FACES = 6


def kernel(name: str, dtype):
    """The compiled ``<name>_<f32|f64>`` kernel of ``kernels/face_flux.cu``."""
    return load_kernel(__package__, "kernels/face_flux.cu", name, dtype)


def face_flux(state, residual, left, right, normal, area, gamma: float,
              block: int = 256) -> None:
    """Launch the atomic Rusanov face-flux kernel (adds into ``residual``) on CuPy arrays.

    Checks dtypes (state, residual, normal, area alike; cells int32) and
    contiguity, and casts scalars to the kernel's types.
    """
    dtype = state.dtype
    for array, what in ((residual, "residual"), (normal, "normal"), (area, "area")):
        check(array, dtype, what)
    check(state, dtype, "state")
    check(left, np.int32, "left")
    check(right, np.int32, "right")
    n_faces, n_cells = len(left), state.shape[1]
    kernel("face_flux_atomic", dtype)(
        grid(n_faces, block), (block,),
        (state, residual, left, right, normal, area, np.int32(n_faces), np.int32(n_cells),
         dtype.type(gamma)))


class FaceFlux:
    """The Rusanov face-flux pass under one strategy, with its device arrays prepared.

    Parameters
    ----------
    faces : FaceLayout
        Faces in plan order (interior first, then boundary), new cell numbers.
    n_cells : int
    strategy : str
        One of :data:`STRATEGIES`.
    colour_order, colour_offsets : numpy.ndarray, optional
        The plan's face colouring (needed for ``colour``).
    block : int
        Threads per block (faces per block for ``block-colour`` and ``block-atomic``).
    tables : dict, optional
        Host tables (block colouring, cell slots) built here are stored in and taken
        from this dict, so that runners on the same faces in other precisions or
        strategies share them.
    """

    def __init__(self, faces, n_cells: int, strategy: str, colour_order=None,
                 colour_offsets=None, block: int = 256, tables: dict | None = None):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        has_colours = colour_order is not None and len(colour_order) > 0
        if strategy == "colour":
            if not has_colours:
                raise ValueError("strategy 'colour' needs the plan's face colours")
            faces = faces.permuted(colour_order)
            self.ranges = [(int(a), int(b)) for a, b in itertools.pairwise(colour_offsets)]
        tables = {} if tables is None else tables
        if strategy in ("block-colour", "block-atomic") and ("blocks", block) not in tables:
            tables["blocks", block] = build_face_blocks(faces.left, faces.right, n_cells, block)
        if strategy in ("reduce", "gather"):
            if "slots" not in tables:
                tables["slots"] = face_slots(faces.left.astype(np.int64),
                                             faces.right.astype(np.int64), n_cells,
                                             int(np.count_nonzero(faces.right >= 0)))
            width = tables["slots"].shape[1]
            if strategy == "gather" and width > MAX_GATHER_FACES:
                raise ValueError(f"strategy 'gather' handles cells of at most "
                                 f"{MAX_GATHER_FACES} faces, this mesh has {width}")
        cupy = get_backend("cupy").xp  # host tables built and checked; the rest is device set-up

        self.strategy, self.block, self.n_cells = strategy, block, n_cells
        self.dtype = faces.normal.dtype
        self.n_faces = faces.n_faces
        self.arrays = [cupy.asarray(a) for a in (faces.left, faces.right, faces.normal,
                                                 faces.area)]
        self.extra = 0
        if strategy in ("block-colour", "block-atomic"):
            self._prepare_blocks(cupy, tables["blocks", block])
        if strategy in ("reduce", "gather"):
            self.slots = cupy.asarray(np.ascontiguousarray(tables["slots"].T, dtype=np.int32))
            self.extra = self.slots.nbytes
        if strategy == "reduce":
            self.scratch = cupy.empty((5, self.n_faces), dtype=self.dtype)
            self.extra += 2 * self.scratch.nbytes

    def _prepare_blocks(self, cupy, blocks) -> None:
        self.blocks = blocks
        self.block_arrays = [cupy.asarray(a) for a in (blocks.cell_offsets, blocks.cells,
                                                       blocks.local_left, blocks.local_right,
                                                       blocks.side_offsets, blocks.sides)]
        # the states of the block's cells and the fluxes of its faces
        self.shared_bytes = 5 * (blocks.max_block_cells + self.block) * self.dtype.itemsize
        self.block_kernel = kernel("face_flux_blocks" if self.strategy == "block-colour"
                                   else "face_flux_blocks_atomic", self.dtype)
        if self.block > self.block_kernel.max_threads_per_block:
            raise ValueError(f"block {self.block} exceeds the "
                             f"{self.block_kernel.max_threads_per_block} threads this kernel "
                             f"can launch in {self.dtype}")
        # above 48 KiB a kernel must opt in to dynamic shared memory (Hopper: 227 KiB)
        self.block_kernel.max_dynamic_shared_size_bytes = max(
            self.block_kernel.max_dynamic_shared_size_bytes, self.shared_bytes)
        self.block_order = cupy.asarray(blocks.block_order)
        # one launch per block colour; block-atomic: every block in one launch, in order
        # (its kernel takes blocks by blockIdx and does not read block_order)
        self.launch_offsets = ([0, blocks.n_blocks] if self.strategy == "block-atomic"
                               else blocks.block_offsets.tolist())
        # beyond the minimum: the cell and face-side tables, and states and residuals of
        # cells that several blocks touch (each block moves its own copy)
        self.extra = (blocks.cells.nbytes + blocks.side_offsets.nbytes + blocks.sides.nbytes
                      + (len(blocks.cells) - self.n_cells) * 5 * 3 * self.dtype.itemsize
                      - self.n_faces * 4)  # 2 x int16 local cells replace 2 x int32

    def __call__(self, state, residual, gamma: float) -> None:
        """Add the face fluxes of ``state`` into ``residual`` (both ``(5, n_cells)``)."""
        check(state, self.dtype, "state")
        check(residual, self.dtype, "residual")
        common = (np.int32(self.n_faces), np.int32(self.n_cells), self.dtype.type(gamma))
        block = self.block
        if self.strategy == "atomic":
            kernel("face_flux_atomic", self.dtype)(
                grid(self.n_faces, block), (block,), (state, residual, *self.arrays, *common))
        elif self.strategy in ("block-colour", "block-atomic"):
            b = self.blocks
            extra = (np.int32(b.max_block_cells), np.int32(b.block_size))
            for first, last in itertools.pairwise(self.launch_offsets):
                self.block_kernel((last - first,), (block,),
                                  (state, residual, self.block_order[first:last],
                                   *self.block_arrays, *self.arrays[2:], *common, *extra),
                                  shared_mem=self.shared_bytes)
        elif self.strategy == "colour":
            launch = kernel("face_flux_colour", self.dtype)
            for first, last in self.ranges:
                launch(grid(last - first, block), (block,),
                       (state, residual, *self.arrays, *common, np.int32(first),
                        np.int32(last)))
        elif self.strategy == "gather":
            kernel("face_flux_gather", self.dtype)(
                grid(self.n_cells, block), (block,),
                (state, residual, self.slots, np.int32(self.slots.shape[0]), *self.arrays,
                 *common))
        else:
            kernel("face_flux_store", self.dtype)(
                grid(self.n_faces, block), (block,), (state, self.scratch, *self.arrays,
                                                       *common))
            kernel("cell_gather", self.dtype)(
                grid(self.n_cells, block), (block,),
                (self.scratch, self.slots, residual, np.int32(self.slots.shape[0]),
                 np.int32(self.n_faces), np.int32(self.n_cells)))

    def extra_bytes(self) -> int:
        """Bytes moved beyond the minimum model: scratch, slot tables, block cell lists."""
        return self.extra
