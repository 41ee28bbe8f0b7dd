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

from dataclasses import dataclass, replace

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.layout.agglomeration import coarse_geometry
from gpusolver.layout.geometry import FVGeometry
from gpusolver.solvers.fv.discretisation import Discretisation
from gpusolver.solvers.fv.lusgs import LUSGS, FusedLUSGS
from meshorder.agglomeration import hierarchy
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

    Raises
    ------
    ConfigError
        For periodic boundaries (not agglomerated yet) or an unknown cycle.
    """

    def __init__(self, fine: Discretisation, host: FVGeometry, levels: int, cycle: str = "v",
                 colours: bool = False, coarse_cells: list[np.ndarray] | None = None):
        if cycle not in CYCLES:
            raise ConfigError(f"unknown multigrid cycle {cycle!r}; valid: {', '.join(CYCLES)}")
        names = list(host.markers)
        specs = {name: b.spec for name, b in zip(names, fine.boundaries, strict=True)}
        periodic = [name for name, spec in specs.items() if spec.condition.name == "periodic"]
        if periodic:
            raise ConfigError(f"multigrid does not agglomerate periodic boundaries yet "
                              f"({', '.join(periodic)}); set multigrid = 0")
        self.fine, self.passes = fine, CYCLES[cycle]
        backend = fine.backend
        if not coarse_cells:
            ni = host.n_interior
            coarse_cells = hierarchy(CSR.from_pairs(host.left[:ni], host.right[:ni],
                                                    host.n_cells), levels)
        strategy = "atomic" if fine.accumulator_name == "colour" else fine.accumulator_name
        scheme = replace(fine.scheme, order=1)
        kernels = "fused" if fine.fused is not None else "arrays"
        self.levels: list[CoarseLevel] = []
        finer = host
        for coarse in coarse_cells[:levels]:
            geometry = coarse_geometry(finer, coarse)
            d = Discretisation(geometry, fine.gas, scheme, specs, strategy, backend,
                               fine.dtype, kernels)
            lusgs = LUSGS(d, geometry, colours=colours)
            steps = (FusedLUSGS(d.fused, lusgs.kernels, forcing=True)
                     if lusgs.kernels is not None else None)
            self.levels.append(CoarseLevel(geometry, d, lusgs, steps, backend.asarray(coarse),
                                           backend.asarray(finer.volume, fine.dtype)))
            finer = geometry

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
        new = u + level.lusgs(u, d.residual(u) + forcing, dt, speeds)
        return u if bool(d.gas.invalid(new).any()) else new

