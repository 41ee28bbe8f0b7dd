"""Matrix-free LU-SGS implicit pseudo-time stepping on hyperplanes.

One step solves ``(V / dt + J) dU = R(U)`` approximately, where ``J`` is the
Jacobian of a first-order Rusanov-type flux (Sharov & Nakahashi 1998, Blazek
sec. 6.2.4). Off-diagonal blocks act on the neighbour's change through the flux
Jacobian product ``(dF/dU)(U_j) . n dU_j`` (:meth:`Gas.euler_flux_jvp`), so no matrix
is stored and the sweeps are linear in the right-hand side (a fixed preconditioner
for Newton-Krylov); the diagonal is the scalar

    D_i = V_i / dt_i + 1/2 sum_f (omega lambda_c + 2 lambda_v)_f A_f

with ``lambda_c = |u . n| + c`` and ``lambda_v`` the viscous spectral radius.
The forward sweep visits cells in increasing plan order and the backward sweep in
decreasing order; cells of one wavefront level (hyperplane) do not depend on each
other and are updated together, which is exactly the sequential sweep. Boundary
faces enter the diagonal only (their ghost change is lagged). With the fused kernels
each level is one launch of ``kernels/lusgs.cu`` (compiled as C++ on the numpy
backend); otherwise array code.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from gpusolver.backends.cuda import real_type
from gpusolver.layout.geometry import FVGeometry
from gpusolver.layout.slots import face_slots
from gpusolver.solvers.fv.discretisation import Discretisation
from meshorder import hyperplanes
from meshorder.hyperplanes import Levels
from meshorder.permutation import group_of
from meshorder.plan import Plan
from meshorder.topology import CSR

#: Default over-relaxation of the convective spectral radius (1 <= omega <= 2).
OMEGA = 1.5


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


def cell_slots(host: FVGeometry) -> CellSlots:
    """Tabulate the interior faces of each cell (host arrays), from :func:`face_slots`."""
    ni, n = host.n_interior, host.n_cells
    left, right = host.left[:ni], host.right[:ni]
    table = face_slots(left, right, n, ni)  # f: cell is left of f, ni + f: right, 2 ni: none
    used = table < 2 * ni
    sign = np.where(table < ni, 1.0, -1.0)
    faces = np.arange(ni)
    face = np.concatenate([faces, faces, [0]])[table]
    other = np.concatenate([right, left, [0]])[table]
    neighbour = np.where(used, other, np.arange(n)[:, None])
    normal = np.where(used, host.normal[:, face] * sign, 0.0)
    area = np.where(used, host.area[face], 0.0)
    return CellSlots(neighbour, face, normal, area)


@dataclass(frozen=True)
class SweepLevel:
    """One hyperplane of a sweep, on the backend: its cells and their upstream slots.

    ``area`` is zero in slots that are not upstream, so they contribute nothing.
    """

    cells: object
    neighbour: object
    normal: object
    area: object


def sweep_levels(host: FVGeometry, plan: Plan | None = None) -> tuple[Levels, Levels]:
    """Forward and backward wavefront levels of the cell graph in plan order.

    The plan's hyperplanes when it has them (``meshorder reorder --hyperplanes``),
    computed here otherwise.
    """
    if plan is not None and plan.forward_order.size:
        return (_levels(plan.forward_order, plan.forward_offsets),
                _levels(plan.backward_order, plan.backward_offsets))
    ni = host.n_interior
    graph = CSR.from_pairs(host.left[:ni], host.right[:ni], host.n_cells)
    return hyperplanes.sweep_levels(graph)


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
        Sweep with one kernel launch per level; by default when the discretisation
        runs fused kernels.
    """

    def __init__(self, discretisation: Discretisation, host: FVGeometry, omega: float = OMEGA,
                 plan: Plan | None = None, kernels: bool | None = None):
        self.discretisation = d = discretisation
        self.omega = omega
        backend, dtype = d.backend, d.dtype
        slots = cell_slots(host)
        levels = sweep_levels(host, plan)
        self.slot_face = backend.asarray(slots.face)
        self.kernels = (LevelKernels(d, slots, levels)
                        if (d.fused is not None if kernels is None else kernels) else None)
        if self.kernels is None:
            self.forward, self.backward = (
                [self._level(slots, level.order[a:b], backward, backend, dtype)
                 for a, b in zip(level.offsets[:-1], level.offsets[1:], strict=True)]
                for level, backward in zip(levels, (False, True), strict=True))

    @staticmethod
    def _level(slots: CellSlots, cells: np.ndarray, backward: bool, backend, dtype
               ) -> SweepLevel:
        neighbour = slots.neighbour[cells]
        upstream = neighbour > cells[:, None] if backward else neighbour < cells[:, None]
        return SweepLevel(backend.asarray(cells), backend.asarray(neighbour),
                          backend.asarray(slots.normal[:, cells], dtype),
                          backend.asarray(np.where(upstream, slots.area[cells], 0.0), dtype))

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
        face_lambda = d.face_spectral_radius(u, self.omega, speeds=speeds)
        diagonal = g.volume / dt + 0.5 * d.accumulator.combine(face_lambda * g.area,
                                                                face_lambda * g.area)
        return LUSGSOperator(self, d.gas.to_primitive(u), diagonal, face_lambda[self.slot_face])

    def __call__(self, u, residual, dt, speeds=None):
        """The change ``dU`` of one implicit step: the sweeps applied to ``R(u)``."""
        return self.operator(u, dt, speeds)(residual)


class LUSGSOperator:
    """Forward and backward sweeps at one frozen state: a linear map of right-hand sides."""

    def __init__(self, lusgs: LUSGS, w, diagonal, slot_lambda):
        self.lusgs, self.w, self.diagonal, self.slot_lambda = lusgs, w, diagonal, slot_lambda

    def _off_diagonal(self, du, level: SweepLevel):
        """``1/2 sum_upstream A_f (dF/dU(U_j) . n - lambda_f) dU_j`` of a level's cells."""
        gas = self.lusgs.discretisation.gas
        du_n = du[:, level.neighbour]
        change = (gas.euler_flux_jvp(self.w[:, level.neighbour], du_n, level.normal)
                  - self.slot_lambda[level.cells] * du_n)
        return 0.5 * (change * level.area).sum(axis=-1)

    def __call__(self, rhs):
        """``dU`` with ``(D + L) D^-1 (D + U) dU = rhs``, swept level by level."""
        if self.lusgs.kernels is not None:
            return self.lusgs.kernels.sweep(self.w, self.diagonal, self.slot_lambda, rhs)
        xp = self.lusgs.discretisation.backend.xp
        diagonal = self.diagonal
        du_star = xp.zeros_like(rhs)
        for level in self.lusgs.forward:
            cells = level.cells
            du_star[:, cells] = (rhs[:, cells] - self._off_diagonal(du_star, level)
                                 ) / diagonal[cells]
        du = du_star.copy()
        for level in self.lusgs.backward:
            cells = level.cells
            du[:, cells] = du_star[:, cells] - self._off_diagonal(du, level) / diagonal[cells]
        return du


class LevelKernels:
    """The sweeps as one kernel launch per level (``kernels/lusgs.cu``).

    Parameters
    ----------
    discretisation : Discretisation
    slots : CellSlots
        Host tables of every cell's interior faces.
    levels : tuple of Levels
        Forward and backward wavefront levels.
    """

    BLOCK = 256

    def __init__(self, discretisation: Discretisation, slots: CellSlots, levels):
        d = self.discretisation = discretisation
        backend, dtype = d.backend, d.dtype
        asarray = backend.asarray  # C-contiguous: what the kernels index
        self.n_cells, self.width = slots.neighbour.shape
        self.neighbour = asarray(slots.neighbour, np.int32)
        self.normal = asarray(slots.normal, dtype)
        self.area = asarray(slots.area, dtype)
        self.levels = [(asarray(level.order, np.int32), level.offsets.tolist())
                       for level in levels]
        real = real_type(dtype)
        names = tuple(f"sweep_kernel<{real}, {d.gas.dim}, {flag}>" for flag in ("false", "true"))
        compiled = backend.kernels(__package__, "kernels/lusgs.cu", names)
        self.launch = [compiled[name] for name in names]
        self.gamma = dtype.type(d.gas.gamma)

    def sweep(self, w, diagonal, slot_lambda, rhs):
        """Forward then backward sweep of ``rhs`` at primitive states ``w``."""
        backend = self.discretisation.backend
        xp = backend.xp
        w, diagonal, rhs, slot_lambda = (backend.asarray(a)
                                         for a in (w, diagonal, rhs, slot_lambda))
        du_star = xp.zeros_like(rhs)
        self._sweep(0, w, diagonal, slot_lambda, rhs, du_star)
        du = du_star.copy()
        self._sweep(1, w, diagonal, slot_lambda, du_star, du)
        return du

    def _sweep(self, backward: int, w, diagonal, slot_lambda, base, out) -> None:
        cells, offsets = self.levels[backward]
        tables = (np.int32(self.n_cells), np.int32(self.width), self.neighbour, self.normal,
                  self.area, slot_lambda, w, diagonal, base, out, self.gamma)
        for first, last in itertools.pairwise(offsets):
            n = last - first
            if n == 0:
                continue
            self.launch[backward](((n + self.BLOCK - 1) // self.BLOCK,), (self.BLOCK,),
                                  (cells[first:last], np.int32(n), *tables))
