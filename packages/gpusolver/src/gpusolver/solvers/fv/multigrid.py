"""Agglomeration multigrid for steady states: the full approximation scheme (FAS).

An LU-SGS step on the mesh damps the errors a few cells long; the long ones (the
circulation of a wing, the far field settling) it removes slowly. Multigrid moves
them to coarser levels of agglomerated cells (:mod:`meshorder.agglomeration`,
:mod:`gpusolver.layout.agglomeration`), where they are short and an LU-SGS step of the
first-order scheme damps them at a fraction of the cost (Jameson 1983; Mavriplis and
Venkatakrishnan 1996 for agglomerated unstructured meshes).

After each fine step the cycle restricts the state (volume-weighted mean) and the
residual (sum) to the next level and solves there

    R_c(u_c) + P_c = 0,   P_c = sum R_f(u_f) - R_c(mean u_f),

so that the coarse problem is driven by the fine residual only (it is zero when the
fine one is), by one LU-SGS step and the corrections of the levels below it (V cycle;
W: twice per level). The coarse change ``u_c - mean u_f`` is added to the cells of each
coarse cell. Safeguards of a transonic start: a coarse step that makes a state invalid
is dropped, and so is the correction of a fine cell it would make invalid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusolver.backends.cuda import grid, real_type
from gpusolver.backends.graphs import StepGraphs
from gpusolver.errors import ConfigError
from gpusolver.integrators.relaxation import MAX_UPDATE, relaxed_update
from gpusolver.layout.agglomeration import coarse_geometry
from gpusolver.layout.geometry import FVGeometry
from gpusolver.solvers.fv.discretisation import Discretisation
from gpusolver.solvers.fv.fused import (
    FROZEN,
    NO_BAD_CELL,
    NULL,
    VENKATAKRISHNAN,
    limiter_input,
)
from gpusolver.solvers.fv.lusgs import LUSGS, FusedLUSGS
from meshorder.agglomeration import hierarchy
from meshorder.hyperplanes import colour_sweeps
from meshorder.topology import CSR

#: Cycles: how many times each coarse level is smoothed and corrected from below.
CYCLES = {"v": 1, "w": 2}


@dataclass
class CoarseLevel:
    """One coarse level: its first-order system, its LU-SGS step and the cell map.

    Attributes
    ----------
    host : FVGeometry
        Its geometry as NumPy arrays.
    discretisation : Discretisation
    lusgs : LUSGS
    steps : FusedLUSGS or None
        Whole steps in kernels (with a forcing term) when the discretisation has them.
    coarse : array
        Coarse cell (of this level) of each cell of the level above, on the backend.
    finer_volume : array
        Volumes of the cells of the level above.
    """

    host: FVGeometry
    discretisation: Discretisation
    lusgs: LUSGS
    steps: FusedLUSGS | None
    coarse: object
    finer_volume: object


class Multigrid:
    """FAS coarse-level corrections of the states of one fine discretisation.

    Parameters
    ----------
    fine : Discretisation
        The mesh's system (any order).
    host : FVGeometry
        Its geometry as NumPy arrays.
    levels : int
        Most coarse levels (fewer when the mesh runs out of cells, see
        :func:`meshorder.agglomeration.hierarchy`).
    cycle : str
        ``v`` or ``w`` (:data:`CYCLES`).
    colours : bool
        Coarse LU-SGS sweeps by cell colours (else hyperplanes).
    coarse_cells : list of numpy.ndarray, optional
        The levels' cell maps (:meth:`meshorder.plan.Plan.coarse_levels`, the first
        ``levels`` of them are used); made here when not given.
    coarse_colours : list of numpy.ndarray, optional
        With ``colours``: the cell colours of the levels of ``coarse_cells``
        (:meth:`meshorder.plan.Plan.coarse_colours`); coloured here when not given.
    max_update : float or None
        The relaxation of the coarse levels' updates
        (:func:`~gpusolver.integrators.relaxation.relaxed_update`).

    Raises
    ------
    ConfigError
        For periodic boundaries (not agglomerated yet), viscous flow (coarse viscous
        operators not yet right) or an unknown cycle.
    """

    def __init__(self, fine: Discretisation, host: FVGeometry, levels: int, cycle: str = "v",
                 colours: bool = False, coarse_cells: list[np.ndarray] | None = None,
                 coarse_colours: list[np.ndarray] | None = None,
                 max_update: float | None = MAX_UPDATE):
        if cycle not in CYCLES:
            raise ConfigError(f"unknown multigrid cycle {cycle!r}; valid: {', '.join(CYCLES)}")
        names = list(host.markers)
        specs = {name: b.spec for name, b in zip(names, fine.boundaries, strict=True)}
        periodic = [name for name, spec in specs.items() if spec.condition.name == "periodic"]
        if periodic:
            raise ConfigError(f"multigrid does not agglomerate periodic boundaries yet "
                              f"({', '.join(periodic)}); set multigrid = 0")
        if fine.viscous:  # tried: a laminar cylinder diverged with it (docs/validation.md)
            raise ConfigError("multigrid runs the Euler equations so far; set multigrid = 0 "
                              "for navier-stokes")
        self.fine, self.passes, self.max_update = fine, CYCLES[cycle], max_update
        backend = fine.backend
        if not coarse_cells:
            coarse_colours = None  # the colours of given levels only
            ni = host.n_interior
            coarse_cells = hierarchy(CSR.from_pairs(host.left[:ni], host.right[:ni],
                                                    host.n_cells), levels)
        strategy = "atomic" if fine.accumulator_name == "colour" else fine.accumulator_name
        scheme = fine.scheme.first_order()
        kernels = "fused" if fine.fused is not None else "arrays"
        self.levels: list[CoarseLevel] = []
        finer = host
        for k, coarse in enumerate(coarse_cells[:levels]):
            geometry = coarse_geometry(finer, coarse)
            d = Discretisation(geometry, fine.gas, scheme, specs, strategy, backend,
                               fine.dtype, kernels)
            sweeps = (colour_sweeps(coarse_colours[k]) if colours and coarse_colours
                      else None)
            lusgs = LUSGS(d, geometry, colours=colours, levels=sweeps)
            steps = (FusedLUSGS(d.fused, lusgs.kernels, forcing=True, max_update=max_update)
                     if lusgs.kernels is not None else None)
            self.levels.append(CoarseLevel(geometry, d, lusgs, steps, backend.asarray(coarse),
                                           backend.asarray(finer.volume, fine.dtype)))
            finer = geometry
        fused = fine.fused is not None and all(level.steps for level in self.levels)
        #: The cycle in kernels, recorded as one CUDA graph (None: array code).
        self.kernels = MultigridKernels(self) if fused and self.levels else None

    @property
    def n_cells(self) -> list[int]:
        """Cells of each coarse level."""
        return [level.discretisation.geometry.n_cells for level in self.levels]

    def correct(self, u, cfl: float):
        """``u`` (a state of the fine system) corrected from the coarse levels.

        ``cfl``: the CFL number of the coarse LU-SGS steps (local time steps).
        """
        for level in self.levels:
            level.discretisation.circulation = self.fine.circulation
        if not self.levels:
            return u
        if self.kernels is not None:
            return self.kernels.correct(u, cfl)
        residual = self.fine.residual(u)
        return self._prolong(self.levels[0], u, self._coarse_change(0, u, residual, cfl))

    # ------------------------------------------------------------------ cycle
    def _coarse_change(self, k: int, u, residual, cfl: float):
        """The change of level ``k``'s state (from the restriction of ``u``, whose
        residual plus forcing is ``residual``) by its steps and the levels below."""
        level = self.levels[k]
        d = level.discretisation
        start = self._restrict(level, u * level.finer_volume) / d.geometry.volume
        forcing = self._restrict(level, residual) - d.residual(start)
        state = start
        for _ in range(self.passes):
            state = self._smooth(level, state, forcing, cfl)
            if k + 1 < len(self.levels):
                below = self.levels[k + 1]
                change = self._coarse_change(k + 1, state, d.residual(state) + forcing, cfl)
                state = self._prolong(below, state, change)
        return state - start

    def _restrict(self, level: CoarseLevel, values):
        """Sums of ``values`` ``(n_vars, n_finer)`` over each coarse cell of ``level``."""
        d = level.discretisation
        total = d.backend.xp.zeros((values.shape[0], d.geometry.n_cells), dtype=values.dtype)
        d.backend.scatter["add"](total, level.coarse, values)
        return total

    def _prolong(self, level: CoarseLevel, u, change):
        """``u`` plus the coarse ``change`` of each cell's coarse cell, where the result
        stays a valid state."""
        xp = level.discretisation.backend.xp
        new = u + xp.take(change, level.coarse, axis=1)
        bad = level.discretisation.gas.invalid(new)
        return xp.where(bad[None], u, new)

    def _smooth(self, level: CoarseLevel, u, forcing, cfl: float):
        """One LU-SGS step of ``R(u) + forcing = 0`` (dropped if it fails)."""
        if level.steps is not None:
            level.steps.forcing[...] = forcing
            new, _, bad_cell = level.steps(u, cfl)
            return u if bad_cell is not None else new.copy()
        d = level.discretisation
        speeds = d.face_wave_speeds(u)
        dt = cfl * d.geometry.volume / d.spectral_radius(u, speeds)
        new, _ = relaxed_update(d.gas, u, level.lusgs(u, d.residual(u) + forcing, dt, speeds),
                                self.max_update)
        return u if bool(d.gas.invalid(new).any()) else new


#: Threads per block of the transfer kernels (``kernels/multigrid.cu``).
BLOCK = 256


class MultigridKernels:
    """:meth:`Multigrid.correct` in kernels: the fine residual, the transfers
    (``kernels/multigrid.cu``) and every coarse level's residual and LU-SGS step, all in
    buffers of their own, recorded as one CUDA graph per limiter mode and replayed.

    Parameters
    ----------
    multigrid : Multigrid
        Its fine discretisation and coarse levels run fused kernels.
    """

    def __init__(self, multigrid: Multigrid):
        self.multigrid = mg = multigrid
        f = mg.fine.fused
        self.backend, self.xp, dtype = f.backend, f.xp, f.dtype
        xp, shape = self.xp, (f.n_vars, f.n_cells)
        self.u_in, self.u_out, self.residual = (xp.empty(shape, dtype) for _ in range(3))
        self.phi = xp.ones(shape, dtype)  # the fine limiter, when computed
        self.buffers = []
        for level in mg.levels:
            n = (f.n_vars, level.discretisation.geometry.n_cells)
            self.buffers.append({name: xp.empty(n, dtype)
                                 for name in ("u_sum", "r_sum", "start", "state", "residual")}
                                | {"coarse": self.backend.asarray(level.coarse, np.int32)})
        real, dim = real_type(dtype), mg.fine.geometry.dim
        names = (f"restrict_kernel<{real}, {dim}>", f"prolong_kernel<{real}, {dim}>",
                 f"select_kernel<{real}>")
        compiled = self.backend.kernels(__package__, "kernels/multigrid.cu", names)
        self.restrict, self.prolong, self.select = (compiled[name] for name in names)
        self.gamma = dtype.type(mg.fine.gas.gamma)
        self.graphs = StepGraphs(self.backend)

    def correct(self, u, cfl: float):
        """``u`` corrected from the coarse levels (a buffer of this object, rewritten by
        the next call)."""
        mg = self.multigrid
        phi, mode = limiter_input(mg.fine)
        phi = self.phi if phi is None else phi
        with self.graphs.stream:
            self.u_in[...] = u
            for level in mg.levels:
                level.steps.cfl.fill(cfl)
                level.discretisation.fused.update_far_field()
        mg.fine.fused.update_far_field()
        self.graphs.run((id(phi), mode), lambda: self._launches(phi, mode))
        self.backend.synchronize()  # the next step reads u_out on another stream
        if mg.fine.fused.limited and mode != FROZEN:
            mg.fine.limiter_values = phi
        return self.u_out

    def _launches(self, phi, mode: int) -> None:
        f = self.multigrid.fine.fused
        source = f.face_pass(self.u_in, phi, mode, NULL, speed=False)
        f.update(source, residual_out=self.residual)
        self._level(0, self.u_in, self.residual)
        b = self.buffers[0]
        self._transfer(self.prolong, f.n_cells, b, self.u_in, b["state"], b["start"],
                       self.u_out)

    def _level(self, k: int, u, residual) -> None:
        """Level ``k``'s state in its ``state`` buffer: restriction of ``u`` (whose
        residual plus forcing is ``residual``), steps and corrections from below."""
        mg, xp = self.multigrid, self.xp
        level, b = mg.levels[k], self.buffers[k]
        f, steps = level.discretisation.fused, level.steps
        b["u_sum"].fill(0)
        b["r_sum"].fill(0)
        self._transfer(self.restrict, u.shape[1], b, level.finer_volume, u, residual,
                       b["u_sum"], b["r_sum"])
        xp.divide(b["u_sum"], f.volume, out=b["start"])
        f.update(f.face_pass(b["start"], NULL, VENKATAKRISHNAN, NULL, speed=False),
                 residual_out=b["residual"])
        xp.subtract(b["r_sum"], b["residual"], out=steps.forcing)
        current = b["start"]
        for _ in range(mg.passes):
            first, new = steps.states
            first[...] = current
            steps._launches(first, new, True, NULL, VENKATAKRISHNAN)
            self.select(grid(first.size, BLOCK), (BLOCK,),
                        (np.int32(first.size), steps.bad_cell, np.int32(NO_BAD_CELL), new,
                         first, b["state"]))
            current = b["state"]
            if k + 1 < len(mg.levels):
                f.update(f.face_pass(current, NULL, VENKATAKRISHNAN, NULL, speed=False),
                         residual_out=b["residual"])
                b["residual"] += steps.forcing
                self._level(k + 1, current, b["residual"])
                below = self.buffers[k + 1]
                self._transfer(self.prolong, current.shape[1], below, current,
                               below["state"], below["start"], current)

    def _transfer(self, kernel, n_fine: int, b: dict, *arrays) -> None:
        """Launch a restriction or prolongation between ``n_fine`` cells and ``b``'s level."""
        n_coarse = b["start"].shape[1]
        extra = (self.gamma,) if kernel is self.prolong else ()
        kernel(grid(n_fine, BLOCK), (BLOCK,),
               (np.int32(n_fine), np.int32(n_coarse), b["coarse"], *arrays, *extra))
