"""Matrix-free LU-SGS implicit pseudo-time stepping on hyperplanes.

One step solves ``(V / dt + J) dU = R(U)`` approximately, where ``J`` is the
Jacobian of a first-order Rusanov-type flux (Sharov & Nakahashi 1998, Blazek
sec. 6.2.4). Off-diagonal blocks act on the neighbour's change through the flux
Jacobian product ``(dF/dU)(U_j) . n dU_j`` (:meth:`Gas.euler_flux_jvp`), so no matrix
is stored and the sweeps are linear in the right-hand side (a fixed preconditioner
for Newton-Krylov); the diagonal is the scalar

    D_i = V_i / dt_i + 1/2 sum_f (omega lambda_c + 2 lambda_v)_f A_f

with ``lambda_c = |u . n| + c`` and ``lambda_v`` the viscous spectral radius.
The sweeps visit the plan's levels in turn: hyperplanes (the forward sweep in
increasing plan order, the backward one in decreasing order; cells of one level do not
depend on each other and are updated together, which is exactly the sequential
sweep) or cell colours (``meshorder reorder --sweep-colours``: Gauss-Seidel in colour
order, a few wide levels). Either way a cell's upstream neighbours are those in
earlier levels of the sweep. Boundary
faces enter the diagonal only (their ghost change is lagged). With the fused kernels
each level is one launch of ``kernels/lusgs.cu`` (compiled as C++ on the numpy
backend), and :class:`FusedLUSGS` runs a whole step (residual, time step, diagonal,
sweeps and update) in kernels recorded as one CUDA graph; otherwise array code.

Line-implicit sweeps (:func:`line_sweeps`, ``[run] line_implicit``) take levels of whole
lines of strongly coupled cells (:mod:`meshorder.lines`): a line's cells share a level
and are solved together, the diagonal replaced by the block tridiagonal ``T`` of the
diagonal and the blocks between neighbours along the line, so one step is
``(T + L) T^-1 (T + U) dU = R`` (block Thomas per line: a padded table in the array code;
in the kernels each line's block LU once a step, a thread a line, which both sweeps
substitute with).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass

import numpy as np

from gpusolver.backends.cuda import real_type
from gpusolver.integrators.relaxation import MAX_UPDATE
from gpusolver.layout.geometry import FVGeometry
from gpusolver.layout.slots import face_slots
from gpusolver.solvers.fv.discretisation import IMPLICIT_VISCOUS_FACTOR, Discretisation
from gpusolver.solvers.fv.fused import NULL, VENKATAKRISHNAN, FusedResidual, FusedSteps
from meshorder import hyperplanes
from meshorder.hyperplanes import Levels
from meshorder.lines import LINE_RATIO, LineLevels, implicit_lines, line_levels
from meshorder.permutation import group_of
from meshorder.plan import Plan
from meshorder.topology import CSR

#: Default over-relaxation of the convective spectral radius (1 <= omega <= 2).
OMEGA = 1.5

#: Kinds of sweep levels: hyperplanes (the sequential sweep in plan order) or cell
#: colours (multicolour sweeps: a few wide levels, the fast choice on GPUs).
SWEEPS = ("hyperplanes", "colours")

#: Implicit lines cross no face whose normal is further than this (degrees) from the line
#: joining its cells' centroids. Without it, lines on 3.3M-cell ONERA M6 meshes ran on
#: around the sharp trailing edge (80 cells: the upper and the lower surface's layers in
#: one line) and the residual stalled 2 orders down on two meshes of three (the third held
#: 1e-2 of its first for 1,000 steps); with it the longest line is one stack of layers
#: (40), the third fell to 1.3e-3 by step 250, and two more meshes (3.2M and 5.1M cells)
#: converged 6 orders (H200, 2026-11-29; 30 and 15 degrees: within 3% of 45 at step 1,500).
LINE_MAX_ANGLE = 45.0


@dataclass(frozen=True)
class CellSlots:
    """Interior faces of every cell as a dense ``(n_cells, width)`` table.

    Attributes
    ----------
    neighbour : array
        Cell across each slot; the cell itself in unused slots.
    face : array
        Face of each slot (0 in unused slots).
    normal : array
        ``(dim, n_cells, width)`` unit normal pointing out of the cell.
    area : array
        Face area; 0 in unused slots, so they contribute nothing.
    """

    neighbour: np.ndarray
    face: np.ndarray
    normal: np.ndarray
    area: np.ndarray


def cell_slots(host: FVGeometry, xp=np) -> CellSlots:
    """Tabulate the interior faces of each cell, from :func:`face_slots`, in the array
    module ``xp`` (CuPy: on the GPU, where the kernels' sweep tables are packed)."""
    ni, n = host.n_interior, host.n_cells
    left, right = xp.asarray(host.left[:ni]), xp.asarray(host.right[:ni])
    table = face_slots(left, right, n, ni, xp)  # f: cell is left of f, ni + f: right, 2 ni: none
    used = table < 2 * ni
    sign = xp.where(table < ni, 1.0, -1.0)
    faces = xp.arange(ni)
    face = xp.concatenate([faces, faces, xp.zeros(1, dtype=faces.dtype)])[table]
    other = xp.concatenate([right, left, xp.zeros(1, dtype=left.dtype)])[table]
    neighbour = xp.where(used, other, xp.arange(n)[:, None])
    normal = xp.where(used, xp.asarray(host.normal)[:, face] * sign, 0.0)
    area = xp.where(used, xp.asarray(host.area)[face], 0.0)
    return CellSlots(neighbour, face, normal, area)


@dataclass(frozen=True)
class SweepLevel:
    """One level of a sweep, on the backend: its cells and their upstream faces.

    The upstream faces are listed as pairs: ``row`` (the cell's position in ``cells``),
    ``neighbour`` (the upstream cell), ``face``, the ``normal`` out of the cell and half
    the face ``area`` (each face enters a sweep once, from its downstream cell). On a
    level of lines, ``lines`` holds them for the block tridiagonal solves.
    """

    cells: object
    row: object
    neighbour: object
    face: object
    normal: object
    half_area: object
    lines: LineTable | None = None


@dataclass(frozen=True)
class LineTable:
    """A level's lines of more than one cell padded to a table ``(n_lines, longest)`` for
    Thomas's algorithm (a line of one cell is divided by its diagonal).

    ``row``: each cell's position in the level's ``cells`` (-1 pads); ``face``,
    ``half_area`` and ``normal`` ``(dim, n_lines, longest)``: the face between it and the
    cell before it along the line, half its area and its normal out of the cell (0 at a
    line's first cell and in pads).
    """

    row: object
    face: object
    half_area: object
    normal: object


def line_faces(slots: CellSlots, order, line_offsets, xp=np):
    """The face between each cell of ``order`` and the one before it in its line (lines
    start at ``line_offsets``), its area and its unit normal out of the cell: -1, 0 and 0
    at each line's first cell."""
    order = xp.asarray(order)
    before = xp.concatenate([order[:1], order[:-1]])
    match = slots.neighbour[order] == before[:, None]
    match[xp.asarray(line_offsets[:-1])] = False
    slot = match.argmax(axis=1)
    joined = match.any(axis=1)
    return (xp.where(joined, slots.face[order, slot], -1),
            xp.where(joined, slots.area[order, slot], 0.0),
            xp.where(joined, slots.normal[:, order, slot], 0.0))


def sweep_levels(host: FVGeometry, plan: Plan | None = None, colours: bool = False
                 ) -> tuple[Levels, Levels]:
    """Forward and backward sweep levels of the cell graph in plan order.

    The plan's levels when it has them (``meshorder reorder --hyperplanes``, or
    ``--sweep-colours``); computed here otherwise: hyperplanes, or cell colours.
    """
    if plan is not None and plan.forward_order.size:
        return (_levels(plan.forward_order, plan.forward_offsets),
                _levels(plan.backward_order, plan.backward_offsets))
    ni = host.n_interior
    graph = CSR.from_pairs(host.left[:ni], host.right[:ni], host.n_cells)
    return hyperplanes.colour_levels(graph) if colours else hyperplanes.sweep_levels(graph)


def own_levels(host: FVGeometry, n_own: int, colours: bool = False) -> tuple[Levels, Levels]:
    """Sweep levels of the first ``n_own`` cells only (a mesh part's own cells): the rest
    (its halo) are in no level and never upstream, so their change stays zero and the
    coupling across parts is lagged (block Jacobi between parts, Gauss-Seidel inside)."""
    ni = host.n_interior
    left, right = host.left[:ni], host.right[:ni]
    inside = (left < n_own) & (right < n_own)
    graph = CSR.from_pairs(left[inside], right[inside], n_own)
    levels = hyperplanes.colour_levels(graph) if colours else hyperplanes.sweep_levels(graph)
    never = np.full(host.n_cells - n_own, np.iinfo(np.int64).max)
    return tuple(Levels(np.concatenate([lv.level, never]), lv.order, lv.offsets)
                 for lv in levels)


def _line_table(slots: CellSlots, level: LineLevels, k: int, backend, dtype) -> LineTable:
    """The lines of more than one cell of level ``k`` as a padded :class:`LineTable`."""
    cells = level.order[level.offsets[k]:level.offsets[k + 1]]
    starts = level.line_offsets[level.level_lines[k]:level.level_lines[k + 1] + 1]
    lengths = np.diff(starts)
    column = np.arange(starts[-1] - starts[0]) - np.repeat(starts[:-1] - starts[0], lengths)
    table = np.full((len(lengths), int(lengths.max(initial=1))), -1)
    table[np.repeat(np.arange(len(lengths)), lengths), column] = np.arange(len(cells))
    table = table[lengths > 1]
    face, area, normal = line_faces(slots, cells, starts - starts[0])
    padded, used = np.maximum(table, 0), table >= 0
    return LineTable(backend.asarray(table),
                     backend.asarray(np.where(used, np.maximum(face[padded], 0), 0)),
                     backend.asarray(np.where(used, 0.5 * area[padded], 0.0), dtype),
                     backend.asarray(np.where(used, normal[:, padded], 0.0), dtype))


def line_sweeps(host: FVGeometry, n_own: int | None = None, ratio: float = LINE_RATIO,
                max_angle: float = LINE_MAX_ANGLE) -> tuple[LineLevels, LineLevels]:
    """Forward and backward sweep levels over the implicit lines of ``host``
    (:func:`meshorder.lines.implicit_lines`: chains of cells whose faces across are
    ``ratio`` times heavier than their others, as in a boundary layer) coloured so that
    no two lines of a level touch; a line's cells are solved together.

    With ``n_own``, the lines of a mesh part's first ``n_own`` cells only; the rest (its
    halo) are in no level, as in :func:`own_levels`. A face whose normal is more than
    ``max_angle`` degrees from the line joining its two centroids joins no line.
    """
    ni = host.n_interior
    n = host.n_cells if n_own is None else n_own
    left, right = np.asarray(host.left[:ni]), np.asarray(host.right[:ni])
    inside = (left < n) & (right < n)
    left, right = left[inside], right[inside]
    centroid = np.asarray(host.centroid)
    joining = centroid[:, right] - centroid[:, left]
    distance = np.linalg.norm(joining, axis=0)
    weight = np.asarray(host.area)[:ni][inside] / distance
    cosine = np.abs(np.sum(np.asarray(host.normal)[:, :ni][:, inside] * joining, axis=0)) / distance
    joinable = cosine >= np.cos(np.radians(max_angle)) - 1e-12
    levels = line_levels(implicit_lines(left, right, weight, n, ratio, joinable), left, right)
    never = np.full(host.n_cells - n, np.iinfo(np.int64).max)
    return tuple(LineLevels(np.concatenate([lv.level, never]), lv.order, lv.offsets,
                            lv.line_offsets, lv.level_lines) for lv in levels)


def is_upstream(level_of, neighbour, cells):
    """Whether each neighbour ``(m, width)`` of ``cells`` comes before its cell in a sweep
    whose cells are in levels ``level_of``: in an earlier level (never the cell itself,
    in unused slots)."""
    return level_of[neighbour] < level_of[cells][:, None]


def _levels(order: np.ndarray, offsets: np.ndarray) -> Levels:
    return Levels(group_of(order, offsets), np.asarray(order, dtype=np.int64),
                  np.asarray(offsets, dtype=np.int64))


class LUSGS:
    """LU-SGS sweeps for one discretisation.

    Parameters
    ----------
    discretisation : Discretisation
    host : FVGeometry
        The same geometry as NumPy arrays.
    omega : float
        Over-relaxation of the convective spectral radius in the implicit operator.
    plan : Plan, optional
        Its hyperplanes are the sweeps' levels when it has them.
    kernels : bool, optional
        Sweep with one kernel launch per level (the discretisation's fused kernels
        must exist); by default when the discretisation runs fused kernels.
    colours : bool
        Without the plan's levels: sweep by cell colours rather than hyperplanes.
    levels : tuple of Levels, optional
        The forward and backward levels to sweep, given (e.g. :func:`own_levels` of a
        mesh part); they take precedence over the plan's.
    lines : tuple of LineLevels, optional
        Sweep these levels of lines (:func:`line_sweeps`) instead, solving each line's
        cells together; the point levels above stay the turbulence model's.
    """

    def __init__(self, discretisation: Discretisation, host: FVGeometry, omega: float = OMEGA,
                 plan: Plan | None = None, kernels: bool | None = None, colours: bool = False,
                 levels: tuple[Levels, Levels] | None = None,
                 lines: tuple[LineLevels, LineLevels] | None = None):
        self.discretisation = d = discretisation
        self.omega = omega
        backend, dtype = d.backend, d.dtype
        #: The forward and backward levels of single cells.
        self.point_levels = levels or sweep_levels(host, plan, colours)
        #: The forward and backward sweeps' levels (of lines, or :attr:`point_levels`).
        self.levels = levels = lines or self.point_levels
        #: Number of levels of the forward and backward sweeps (launches per sweep).
        self.n_levels = tuple(level.n_levels for level in levels)
        self._host = host
        fused = d.fused is not None if kernels is None else kernels
        slots = cell_slots(host, backend.xp if fused else np)
        self.kernels = LevelKernels(d.fused, slots, levels, omega) if fused else None
        if self.kernels is None:
            self.forward, self.backward = (
                [self._level(slots, level, k, backend, dtype) for k in range(level.n_levels)]
                for level in levels)
            if self.lines:  # the backward sweep's levels are the forward's lines reversed:
                # one table (and one factorisation a step) for both
                forward = levels[0]
                tables = [_line_table(slots, forward, k, backend, dtype)
                          for k in range(forward.n_levels)]
                self.forward = [dataclasses.replace(level, lines=table)
                                for level, table in zip(self.forward, tables, strict=True)]
                self.backward = [dataclasses.replace(level, lines=table)
                                 for level, table in zip(self.backward, tables[::-1],
                                                         strict=True)]

    @property
    def lines(self) -> bool:
        """Whether the sweeps solve lines of cells (:func:`line_sweeps`)."""
        return isinstance(self.levels[0], LineLevels)

    def point_tables(self) -> list[SweepTables] | None:
        """The kernels' sweep tables of single cells (the turbulence model's): the
        sweeps' own, or beside levels of lines packed here for :attr:`point_levels`;
        None without the kernels."""
        if self.kernels is None:
            return None
        if not self.lines:
            return self.kernels.sweeps
        backend, dtype = self.discretisation.backend, self.discretisation.dtype
        slots = cell_slots(self._host, backend.xp)
        return [sweep_tables(slots, level, backend, dtype) for level in self.point_levels]

    @staticmethod
    def _level(slots: CellSlots, level: Levels, k: int, backend, dtype) -> SweepLevel:
        cells = level.order[level.offsets[k]:level.offsets[k + 1]]
        row, slot = np.nonzero(is_upstream(level.level, slots.neighbour[cells], cells))
        at = cells[row], slot
        return SweepLevel(backend.asarray(cells), backend.asarray(row),
                          backend.asarray(slots.neighbour[at]), backend.asarray(slots.face[at]),
                          backend.asarray(slots.normal[:, at[0], at[1]], dtype),
                          backend.asarray(0.5 * slots.area[at], dtype))

    def operator(self, u, dt, speeds=None) -> LUSGSOperator:
        """The sweeps' approximate inverse of ``V / dt + J`` at the state ``u``.

        Parameters
        ----------
        u : array
            ``(n_vars, n_cells)`` conserved state.
        dt : array
            Local (per cell) or global pseudo-time step.
        speeds : WaveSpeeds, optional
            The face wave speeds of ``u``, if already computed for the time step.
        """
        d = self.discretisation
        g = d.geometry
        speeds = d.face_wave_speeds(u) if speeds is None else speeds
        face_lambda = d.face_spectral_radius(u, self.omega, speeds=speeds)
        diagonal = g.volume / dt + 0.5 * d.accumulator.combine(face_lambda * g.area,
                                                                face_lambda * g.area)
        if self.kernels is not None:
            speed = d.backend.xp.concatenate([s * g.area for s in speeds if s is not None])
            return functools.partial(self.kernels.sweep, u, diagonal, speed)
        return LUSGSOperator(self, d.gas.to_primitive(u), diagonal, face_lambda)

    def __call__(self, u, residual, dt, speeds=None):
        """The change ``dU`` of one implicit step: the sweeps applied to ``R(u)``."""
        return self.operator(u, dt, speeds)(residual)


class LUSGSOperator:
    """Forward and backward sweeps at one frozen state: a linear map of right-hand sides.

    On levels of lines each line's block LU is made at its first use and serves both
    sweeps and every later application (a Newton-Krylov preconditioner's)."""

    def __init__(self, lusgs: LUSGS, w, diagonal, face_lambda):
        self.lusgs, self.w, self.diagonal, self.face_lambda = lusgs, w, diagonal, face_lambda
        self._line_factors: dict[int, tuple] = {}  # by id of the LineTable

    def _off_diagonal(self, du, level: SweepLevel):
        """``1/2 sum_upstream A_f (dF/dU(U_j) . n - lambda_f) dU_j`` of a level's cells."""
        d = self.lusgs.discretisation
        du_n = du[:, level.neighbour]
        change = (d.gas.euler_flux_jvp(self.w[:, level.neighbour], du_n, level.normal)
                  - self.face_lambda[level.face] * du_n)
        change *= level.half_area
        total = d.backend.xp.zeros((du.shape[0], len(level.cells)), dtype=du.dtype)
        d.backend.scatter["add"](total, level.row, change)
        return total

    def _solve(self, level: SweepLevel, rhs):
        """``rhs`` of a level's cells divided by the diagonal, or on a level of lines by
        the block tridiagonal ``T`` along each line of more than one cell (block Thomas,
        the lines side by side, with :meth:`_factorise`'s factors)."""
        out = rhs / self.diagonal[level.cells]
        lines = level.lines
        if lines is None or not lines.row.shape[0]:
            return out
        lower, inverse, ratio = self._factorise(level)
        xp = self.lusgs.discretisation.backend.xp
        used = lines.row >= 0
        value = xp.where(used, rhs[:, xp.where(used, lines.row, 0)], 0.0)
        value = value.transpose(1, 2, 0)[..., None]
        for k in range(value.shape[1]):  # y_k = M_k^-1 (rhs_k - L_k y_(k-1))
            right = value[:, k] - lower[:, k] @ value[:, k - 1] if k else value[:, k]
            value[:, k] = inverse[:, k] @ right
        for k in range(value.shape[1] - 2, -1, -1):  # x_k = y_k - R_k x_(k+1)
            value[:, k] -= ratio[:, k] @ value[:, k + 1]
        out[:, lines.row[used]] = value[used][..., 0].T
        return out

    def _factorise(self, level: SweepLevel) -> tuple:
        """The block LU of a level's lines (made once): per position ``L_k`` (the block
        to the cell before it along the line), ``M_k^-1 = (D - L_k R_(k-1))^-1`` and
        ``R_k = M_k^-1 U_k`` (``U_k``: the block to the cell after it), each
        ``(n_lines, longest, n_vars, n_vars)``; ``D`` on the diagonal and between
        neighbours their off-diagonal blocks ``1/2 A_f (dF/dU(U_j) . n - lambda_f)``."""
        lines = level.lines
        if id(lines) in self._line_factors:
            return self._line_factors[id(lines)]
        xp = self.lusgs.discretisation.backend.xp
        n_vars = self.w.shape[0]
        used = lines.row >= 0
        cell = level.cells[xp.where(used, lines.row, 0)]
        lower = self._line_blocks(xp.concatenate([cell[:, :1], cell[:, :-1]], 1),
                                  lines.normal, lines.face, lines.half_area)
        after = xp.concatenate([cell[:, 1:], cell[:, -1:]], 1)
        shifted = [xp.concatenate([a[..., 1:], xp.zeros_like(a[..., :1])], -1)
                   for a in (lines.normal, lines.face, lines.half_area)]
        upper = self._line_blocks(after, -shifted[0], *shifted[1:])
        identity = xp.eye(n_vars, dtype=self.w.dtype)
        pivot = xp.where(used, self.diagonal[cell], 1.0)[..., None, None] * identity
        inverse, ratio = xp.empty_like(lower), xp.empty_like(lower)
        for k in range(lower.shape[1]):
            block = pivot[:, k] - lower[:, k] @ ratio[:, k - 1] if k else pivot[:, k]
            inverse[:, k] = xp.linalg.inv(block)
            ratio[:, k] = inverse[:, k] @ upper[:, k]
        self._line_factors[id(lines)] = lower, inverse, ratio
        return lower, inverse, ratio

    def _line_blocks(self, other, normal, face, half_area):
        """``1/2 A_f (dF/dU(U_other) . n - lambda_f)`` for each position of a line table
        ``(n_lines, longest, n_vars, n_vars)``, from the faces given (0 where the area is)."""
        xp = self.lusgs.discretisation.backend.xp
        gas = self.lusgs.discretisation.gas
        n_vars = self.w.shape[0]
        flat = other.ravel()
        w = self.w[:, flat]
        n = normal.reshape(normal.shape[0], -1)
        lam = (self.face_lambda[face] * half_area).ravel()
        blocks = xp.empty((flat.size, n_vars, n_vars), dtype=self.w.dtype)
        for v in range(n_vars):
            unit = xp.zeros((n_vars, flat.size), dtype=self.w.dtype)
            unit[v] = 1.0
            blocks[:, :, v] = (gas.euler_flux_jvp(w, unit, n) * half_area.ravel()
                               - lam * unit).T
        return blocks.reshape(*other.shape, n_vars, n_vars)

    def __call__(self, rhs):
        """``dU`` with ``(D + L) D^-1 (D + U) dU = rhs``, swept level by level (with
        ``T`` for ``D`` on levels of lines)."""
        xp = self.lusgs.discretisation.backend.xp
        du_star = xp.zeros_like(rhs)
        for level in self.lusgs.forward:
            cells = level.cells
            du_star[:, cells] = self._solve(level, rhs[:, cells]
                                            - self._off_diagonal(du_star, level))
        du = du_star.copy()
        for level in self.lusgs.backward:
            cells = level.cells
            du[:, cells] = du_star[:, cells] - self._solve(level,
                                                           self._off_diagonal(du, level))
        return du


@dataclass(frozen=True)
class SweepTables:
    """One sweep's cells and upstream slots packed in sweep order, for the kernels.

    Position ``i`` runs over the levels in turn; slot tables are ``(width, n_cells)``
    (``[k, i]``), normals times area ``(dim, width, n_cells)``. On levels of lines
    (:class:`~meshorder.lines.LineLevels`) also the positions where each line starts
    (``line_start``) and the lines of each level (``level_lines``).
    """

    cells: object
    upstream: object  # neighbour across the slot if it is upstream, else -1
    face: object
    normal_area: object
    offsets: list
    line_start: object = None
    level_lines: list | None = None


def sweep_tables(slots: CellSlots, level: Levels, backend, dtype) -> SweepTables:
    """Pack one sweep's slot tables (from :func:`cell_slots`, in the backend's array
    module) on the backend."""
    xp = backend.xp
    order = xp.asarray(level.order)
    neighbour = slots.neighbour[order]
    up = is_upstream(xp.asarray(level.level), neighbour, order)
    normal_area = slots.normal[:, order] * slots.area[order]
    lines = {}
    if isinstance(level, LineLevels):
        lines = {"line_start": backend.asarray(level.line_offsets, np.int32),
                 "level_lines": level.level_lines.tolist()}
    return SweepTables(backend.asarray(order, np.int32),
                       backend.asarray(xp.where(up, neighbour, -1).T, np.int32),
                       backend.asarray(xp.where(up, slots.face[order], 0).T, np.int32),
                       backend.asarray(xp.where(up, normal_area, 0.0).transpose(0, 2, 1), dtype),
                       level.offsets.tolist(), **lines)


def factor_starts(line_offsets: np.ndarray) -> tuple[np.ndarray, int]:
    """Where each line's block factors start among those of the lines longer than one
    cell (0 for a line of one cell, which has none), and how many cells have factors.

    Examples
    --------
    >>> starts, factored = factor_starts(np.array([0, 3, 4, 6, 7]))  # lengths 3, 1, 2, 1
    >>> starts.tolist(), factored
    ([0, 3, 3, 5], 5)
    """
    lengths = np.diff(np.asarray(line_offsets, dtype=np.int64))
    kept = np.where(lengths > 1, lengths, 0)
    starts = np.concatenate([[0], np.cumsum(kept)[:-1]]) if len(kept) else kept
    return starts, int(kept.sum())


class LevelKernels:
    """The sweeps as one kernel launch per level (``kernels/lusgs.cu``).

    They read the face wave speeds as the fused residual's face kernel stores them.

    Parameters
    ----------
    fused : FusedResidual
    slots : CellSlots
        Tables of every cell's interior faces, in the backend's array module.
    levels : tuple of Levels
        Forward and backward wavefront levels (of lines: each line's block LU once a
        step for both sweeps, then two launches a level, the cells' right-hand sides and
        the lines' substitutions).
    omega : float
        Over-relaxation of the convective spectral radius.
    """

    BLOCK = 256
    LINE_BLOCK = 128
    #: Slots per cell above which several threads share each cell of a point sweep on
    #: the GPU (``LANES`` of ``kernels/lusgs.cu``): multigrid's agglomerated levels have
    #: 17-30. On the ONERA M6's levels of 221k, 12.6k and 511 cells a coarse LU-SGS step
    #: took 0.97, 0.88 and 0.69 ms with a thread a cell, 1.07, 0.15 and 0.13 ms with a
    #: warp a cell, 0.67 ms on the first with eight threads a cell (H200, 2026-11-30,
    #: ``scripts/time_multigrid_cycle.py``): a warp on levels of up to
    #: :attr:`WARP_CELLS` cells, :attr:`LARGE_LEVEL_LANES` threads on larger ones.
    LANE_SLOTS = 8
    WARP_CELLS = 50_000
    LARGE_LEVEL_LANES = 8

    def __init__(self, fused: FusedResidual, slots: CellSlots, levels, omega: float = OMEGA):
        if fused is None:
            raise ValueError("the LU-SGS level kernels need the fused residual's tables")
        self.fused = fused
        backend, dtype = fused.backend, fused.dtype
        self.sweeps = [sweep_tables(slots, level, backend, dtype) for level in levels]
        self.lines = self.sweeps[0].line_start is not None
        real, viscous = real_type(dtype), "true" if fused.viscous else "false"
        width, line = slots.neighbour.shape[1], "true" if self.lines else "false"
        #: Threads a cell of the sweeps (several for wide cells on the GPU; see LANE_SLOTS).
        self.lanes = 1
        if backend.name == "cupy" and not self.lines and width > self.LANE_SLOTS:
            self.lanes = 32 if fused.n_cells <= self.WARP_CELLS else self.LARGE_LEVEL_LANES
        names = tuple(f"sweep_kernel<{real}, {fused.dim}, {width}, {flag}, {viscous}, {line}, "
                      f"{self.lanes}>" for flag in ("false", "true"))
        line_names = ((f"line_factor_kernel<{real}, {fused.dim}, {viscous}>",
                       *(f"line_kernel<{real}, {fused.dim}, {flag}>" for flag in ("false", "true")))
                      if self.lines else ())
        compiled = backend.kernels(__package__, "kernels/lusgs.cu", names + line_names)
        self.launch = [compiled[name] for name in names]
        if self.lines:  # each cell's right-hand side, and the lines' factors (L, M^-1, R)
            self.launch_factor = compiled[line_names[0]]
            self.launch_lines = [compiled[name] for name in line_names[1:]]
            xp, rows = backend.xp, self.sweeps[0].cells.size
            self.line_rhs = xp.empty((fused.n_vars, fused.n_cells), dtype)
            forward, backward = self.sweeps
            # the factorisation's faces: to the cell before along the line (0 at a start)
            face, area, normal = line_faces(slots, forward.cells, levels[0].line_offsets, xp)
            self.line_face = backend.asarray(xp.maximum(face, 0), np.int32)
            self.line_normal_area = backend.asarray(normal * area, dtype)
            origin, factored = factor_starts(levels[0].line_offsets)
            #: Three blocks (L, M^-1, R) per cell of the lines longer than one cell
            #: (a fifth of the cells of a 5M-cell prism-layer wing).
            self.line_blocks = xp.empty(3 * max(factored, 1) * fused.n_vars ** 2, dtype)
            position = np.empty(fused.n_cells, np.int64)
            position[backend.to_host(forward.cells)] = np.arange(rows)
            backward_starts = position[backend.to_host(
                backward.cells[backward.line_start[:-1]])]
            #: Per sweep, where each line's factors start in :attr:`line_blocks`: the
            #: backward sweep's lines are the forward's, in another order.
            self.line_origin = tuple(
                backend.asarray(starts, np.int32) for starts in
                (origin, origin[np.searchsorted(levels[0].line_offsets, backward_starts)]))
        self.scalars = (dtype.type(omega), dtype.type(IMPLICIT_VISCOUS_FACTOR))

    def sweep(self, u, diagonal, speed, rhs):
        """Forward then backward sweep of ``rhs`` at the state ``u``.

        ``speed``: the face wave speeds times area (convective, then viscous).
        """
        backend = self.fused.backend
        u, diagonal, speed, rhs = (backend.asarray(a) for a in (u, diagonal, speed, rhs))
        du = backend.xp.empty_like(rhs)
        self.launches(u, diagonal, speed, rhs, du)
        return du

    def launches(self, u, diagonal, speed, rhs, du, u_new=NULL, bad_cell=NULL,
                 relaxed=NULL, max_update: float | None = MAX_UPDATE) -> None:
        """Both sweeps of ``rhs`` into ``du`` (the backward one in place); with ``u_new``
        also the relaxed update ``u_new = u + alpha du``
        (:func:`~gpusolver.integrators.relaxation.relaxed_update` of ``max_update``), the
        first non-finite cell into ``bad_cell`` and the count of relaxed cells added to
        ``relaxed``."""
        if self.lines:
            self.factorise_lines(u, diagonal, speed)
        self._sweep(0, u, diagonal, speed, rhs, du, NULL, NULL, NULL, np.inf)
        self._sweep(1, u, diagonal, speed, du, du, u_new, bad_cell, relaxed,
                    np.inf if max_update is None else max_update)

    def factorise_lines(self, u, diagonal, speed) -> None:
        """Every line's block LU at the state ``u``, for both sweeps (one launch)."""
        t, f = self.sweeps[0], self.fused
        n_lines = t.line_start.size - 1
        self.launch_factor(
            ((n_lines + self.LINE_BLOCK - 1) // self.LINE_BLOCK,), (self.LINE_BLOCK,),
            (np.int32(n_lines), np.int32(f.n_cells), np.int32(f.n_faces),
             np.int32(t.cells.size), t.line_start, self.line_origin[0], t.cells, self.line_face,
             self.line_normal_area, speed, *self.scalars, u, diagonal, self.line_blocks, f.gamma))

    def _sweep(self, backward: int, u, diagonal, speed, base, out, u_new, bad_cell, relaxed,
               limit: float) -> None:
        t = self.sweeps[backward]
        f = self.fused
        update = (u_new, bad_cell, relaxed, f.dtype.type(limit), f.gamma)
        arguments = (np.int32(f.n_cells), np.int32(f.n_faces), np.int32(t.cells.size), t.cells,
                     t.upstream, t.face,
                     t.normal_area, speed, *self.scalars, u, diagonal, base, out, *update,
                     self.line_rhs if self.lines else NULL)
        for k, (first, last) in enumerate(itertools.pairwise(t.offsets)):
            if last > first:
                threads = (last - first) * self.lanes
                self.launch[backward](((threads + self.BLOCK - 1) // self.BLOCK,),
                                      (self.BLOCK,),
                                      (np.int32(first), np.int32(last), *arguments))
            if self.lines and last > first:
                first_line, last_line = t.level_lines[k], t.level_lines[k + 1]
                self.launch_lines[backward](
                    ((last_line - first_line + self.LINE_BLOCK - 1) // self.LINE_BLOCK,),
                    (self.LINE_BLOCK,),
                    (np.int32(first_line), np.int32(last_line), np.int32(f.n_cells),
                     t.line_start, self.line_origin[backward], t.cells, u, diagonal,
                     self.line_blocks, self.line_rhs, base, out, *update))


class FusedLUSGS(FusedSteps):
    """Whole LU-SGS steps in kernels: gradients and face fluxes, the cell pass (residual,
    its norms, the local time step and the diagonal), both sweeps and the update,
    recorded as one CUDA graph per kind of step and replayed at any CFL number.

    Parameters
    ----------
    fused : FusedResidual
    kernels : LevelKernels
        The sweeps (of the same discretisation).
    graphs : bool
        See :class:`~gpusolver.solvers.fv.fused.FusedSteps`.
    forcing : bool
        Add :attr:`forcing` (set before each step) to the residual: the steps of
        ``R(u) + forcing = 0`` on a multigrid level.
    max_update : float or None
        The relaxation of each cell's update
        (:func:`~gpusolver.integrators.relaxation.relaxed_update`).
    """

    def __init__(self, fused: FusedResidual, kernels: LevelKernels, graphs: bool = True,
                 forcing: bool = False, max_update: float | None = MAX_UPDATE):
        super().__init__(fused, graphs)
        self.kernels, self.max_update = kernels, max_update
        shape, dtype = (fused.n_vars, fused.n_cells), fused.dtype
        #: The forcing term ``(n_vars, n_cells)`` (None: none).
        self.forcing = self.xp.zeros(shape, dtype) if forcing else None
        self.residual = self.xp.empty(shape, dtype)
        self.du = self.xp.empty(shape, dtype)
        self.diagonal = self.xp.empty(fused.n_cells, dtype)
        #: RANS: each face's mass flux at the step's start, for the turbulence model
        #: (made at the first step with an eddy viscosity; None: laminar).
        self.mass_flux = None
        #: RANS: the turbulence model's pass that takes each face's eddy viscosity at the
        #: step's start from the step's own gradients
        #: (:meth:`~gpusolver.solvers.fv.fused_turbulence.FusedScalarSteps.eddy_pass`), or
        #: None (laminar, or the eddy viscosity set before each step).
        self.eddy = None

    def _launches(self, u0, out, local: bool, phi, mode: int) -> None:
        f = self.fused
        self.reset_report()
        source = f.face_pass(u0, phi, mode, self.boundary_flux, speed=True,
                             mass_flux=NULL if self.mass_flux is None else self.mass_flux,
                             eddy=self.eddy)
        omega, implicit_factor = self.kernels.scalars
        f.update(source, residual_out=self.residual, stage=(None, 1, 1, 1),
                 implicit=(self.diagonal, omega, implicit_factor), cfl=self.cfl, dt=self.dt,
                 squares=self.squares)
        if self.forcing is not None:
            self.residual += self.forcing
        self.kernels.launches(u0, self.diagonal, f.speed, self.residual, self.du, out,
                              self.bad_cell, self.relaxed, self.max_update)

    def __call__(self, u, cfl: float, limiter=(None, VENKATAKRISHNAN)):
        """One step from ``u`` (not modified) at local time steps of CFL number ``cfl``;
        ``limiter`` from :func:`~gpusolver.solvers.fv.fused.limiter_input`. Returns
        ``(u_new, norms, bad_cell)`` as :meth:`~gpusolver.solvers.fv.fused.FusedSteps._step`
        (the norms are the RMS of ``R / V``). With a turbulence model's eddy viscosity
        (``d.eddy_viscosity``, or taken at ``u`` by :attr:`eddy`), reads it and sets
        ``d.mass_flux`` (of ``u``)."""
        f = self.fused
        with self.graphs.stream:
            turbulent = f.load_eddy_viscosity(self.eddy)
        if turbulent and self.mass_flux is None:
            self.mass_flux = self.xp.empty(f.n_faces, f.dtype)
        result = self._step(u, cfl, None, limiter)
        if turbulent:
            f.d.mass_flux = self.mass_flux
        return result
