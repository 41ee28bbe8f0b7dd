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
W: twice per level; ``auto``: V, and on 2-D meshes W from where the solver finds the
residual stalled, :meth:`Multigrid.deepen`). The coarse change ``u_c - mean u_f`` is
added to the cells of each coarse cell. Safeguards of a transonic start: a coarse step
that makes a state invalid is dropped, and so is the correction of a fine cell it would
make invalid.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from gpusolver.backends.cuda import grid, real_type
from gpusolver.backends.graphs import StepGraphs, graphs_for_exchanges
from gpusolver.errors import ConfigError
from gpusolver.integrators.relaxation import MAX_UPDATE, relaxed_update
from gpusolver.layout.agglomeration import coarse_geometry
from gpusolver.layout.geometry import FVGeometry
from gpusolver.parallel import Halo, coarse_halo
from gpusolver.solvers.fv.discretisation import Discretisation
from gpusolver.solvers.fv.fused import (
    FROZEN,
    NO_BAD_CELL,
    NULL,
    VENKATAKRISHNAN,
    limiter_input,
)
from gpusolver.solvers.fv.lusgs import LUSGS, OMEGA, FusedLUSGS, own_levels
from meshorder.agglomeration import MIN_COARSE_CELLS, agglomerate, coarse_graph, hierarchy
from meshorder.hyperplanes import colour_sweeps
from meshorder.part_refine import CELL_CHILDREN
from meshorder.topology import CSR

#: Cycles: how many times each coarse level is smoothed and corrected from below.
CYCLES = {"v": 1, "w": 2}

#: The cycle that starts as V and, on meshes of :data:`AUTO_W_DIMS`, turns W where the
#: solver finds the residual stalled.
AUTO_CYCLE = "auto"

#: Where an ``auto`` cycle may turn W: 2-D, where the W cycle took every mesh of the
#: robustness corpus six orders down (TMR's 225x65 C-grid and SU2's inviscid cylinder only
#: with it). Not in 3-D: on the generator's prism-layer wing the V cycle converged where
#: a W cycle diverged and a turn to W at the first stall held the residual near one order
#: (H200, 2026-11-28, docs/validation.md).
AUTO_W_DIMS = (2,)


@dataclass
class CoarseLevel:
    """One coarse level of one mesh part: its first-order system, its LU-SGS step and
    the cell map.

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
    n_own : int or None
        A mesh part's level: its cells ``[0, n_own)`` are its own and swept, the rest
        (its halo) hold its neighbours' coarse cells, exchanged (None: the whole mesh).
    """

    host: FVGeometry
    discretisation: Discretisation
    lusgs: LUSGS
    steps: FusedLUSGS | None
    coarse: object
    finer_volume: object
    n_own: int | None = None


@dataclass(frozen=True)
class PartHalos:
    """The mesh parts of this process, for coarse levels across parts.

    Attributes
    ----------
    n_own : list of int
        Each local part's own cells (its first cells; the rest are its halo).
    halos : dict of int to Halo
        The local parts' exchange lists (part -> :class:`~gpusolver.parallel.Halo`),
        in the order of ``n_own``.
    transport : object
        The transport of the parts' states (:mod:`gpusolver.parallel`).
    """

    n_own: list[int]
    halos: dict[int, Halo]
    transport: object


class Multigrid:
    """FAS coarse-level corrections of the states of the mesh, or of its parts.

    On the whole mesh the levels are the plan's (or made here). On parts, each part
    agglomerates its own cells apart from the other parts' (faces between its own cells
    only), and the coarse cells of its halo are its neighbours' own coarse cells: every
    level exchanges its halo like the mesh (after the restriction and after each step),
    so the parts together smooth one coarse level whose cells do not cross a part's
    edge, as a whole mesh agglomerated within the parts would.

    Parameters
    ----------
    fines : list of Discretisation
        The system of each local part (the whole mesh: one; any order).
    hosts : list of FVGeometry
        Their geometries as NumPy arrays.
    levels : int
        Most coarse levels (fewer when the mesh, or the parts together, run out of cells, see
        :func:`meshorder.agglomeration.hierarchy`).
    cycle : str
        ``v`` or ``w`` (:data:`CYCLES`), or ``auto`` (:data:`AUTO_CYCLE`: V until
        :meth:`deepen`, which turns it W on 2-D meshes).
    colours : bool
        Coarse LU-SGS sweeps by cell colours (else hyperplanes).
    coarse_cells : list of numpy.ndarray, optional
        The whole mesh: the levels' cell maps (:meth:`meshorder.plan.Plan.coarse_levels`,
        the first ``levels`` of them are used); made here when not given.
    coarse_colours : list of numpy.ndarray, optional
        With ``colours``: the cell colours of the levels of ``coarse_cells``
        (:meth:`meshorder.plan.Plan.coarse_colours`); coloured here when not given.
    max_update : float or None
        The relaxation of the coarse levels' updates and of their corrections to the
        finer levels (:func:`~gpusolver.integrators.relaxation.relaxed_update`).
    parts : PartHalos, optional
        Mesh parts (``coarse_cells`` ignored).
    omega : float
        The coarse LU-SGS steps' over-relaxation (:class:`~gpusolver.solvers.fv.lusgs.LUSGS`).
    turbulent : bool
        The fine levels run RANS: their coarse levels take the Euler operator, with the
        turbulence model's scalars frozen on the fine level.
    parents : list of list of numpy.ndarray, optional
        Parts refined on their ranks: per local part, the maps of its refinement's
        generations (:func:`refined_parents`), coarse levels on top of the ``levels``
        agglomerated ones: each own cell's parent, each parent's parent, down to the mesh
        as read, which ``levels`` levels agglomerate as they would the mesh unrefined.
        Without it the parts agglomerate their own cells on every level.

    Raises
    ------
    ConfigError
        For periodic boundaries (not agglomerated yet), laminar viscous flow (neither
        viscous nor inviscid coarse operators converged it) or an unknown cycle.
    """

    def __init__(self, fines: list[Discretisation], hosts: list[FVGeometry], levels: int,
                 cycle: str = "v", colours: bool = False,
                 coarse_cells: list[np.ndarray] | None = None,
                 coarse_colours: list[np.ndarray] | None = None,
                 max_update: float | None = MAX_UPDATE, parts: PartHalos | None = None,
                 omega: float = OMEGA, turbulent: bool = False,
                 parents: list[np.ndarray] | None = None):
        if cycle not in (*CYCLES, AUTO_CYCLE):
            raise ConfigError(f"unknown multigrid cycle {cycle!r}; valid: "
                              f"{', '.join((*CYCLES, AUTO_CYCLE))}")
        specs = [{name: b.spec for name, b in zip(host.markers, x.boundaries, strict=True)}
                 for x, host in zip(fines, hosts, strict=True)]
        periodic = sorted({name for part in specs for name, spec in part.items()
                           if spec.condition.name == "periodic"})
        if periodic:
            raise ConfigError(f"multigrid does not agglomerate periodic boundaries yet "
                              f"({', '.join(periodic)}); set multigrid = 0")
        fine = fines[0]
        if fine.viscous and not turbulent:
            raise ConfigError("multigrid runs the Euler equations and RANS so far (a laminar "
                              "cylinder at Re 20 diverged with viscous coarse levels and with "
                              "inviscid ones); set multigrid = 0 for laminar flow")
        # RANS: the coarse levels take the Euler operator (the forcing keeps the fine
        # answer unchanged); the model's scalars stay on the fine level
        coarse_gas = replace(fine.gas, reynolds=None)
        self.fines, self.max_update = fines, max_update
        #: The passes of each coarse level per cycle (:data:`CYCLES`).
        self.passes = CYCLES["v" if cycle == AUTO_CYCLE else cycle]
        #: The cycle may still turn W (:meth:`deepen`).
        self.adaptive = cycle == AUTO_CYCLE and fines[0].geometry.dim in AUTO_W_DIMS
        #: The weight of the coarse levels' correction of the fine state (:meth:`damp`).
        self.weight = 1.0
        backend = fine.backend
        if parts is not None:
            maps, owns, transports = _part_levels(hosts, parts, levels, backend, parents)
            coarse_colours = None
        else:
            if not coarse_cells:
                coarse_colours = None  # the colours of given levels only
                ni = hosts[0].n_interior
                coarse_cells = hierarchy(CSR.from_pairs(hosts[0].left[:ni], hosts[0].right[:ni],
                                                        hosts[0].n_cells), levels)
            maps = [list(coarse_cells[:levels])]
            owns = [[None] * len(maps[0])]
            transports = [None] * len(maps[0])
        strategy = "atomic" if fine.accumulator_name == "colour" else fine.accumulator_name
        scheme = fine.scheme.first_order()
        kernels = "fused" if all(x.fused is not None for x in fines) else "arrays"
        #: Per local part, its coarse levels (finest first).
        self.parts: list[list[CoarseLevel]] = []
        for x, host, part_specs, part_maps, part_owns in zip(fines, hosts, specs, maps, owns,
                                                             strict=True):
            # the levels' geometry summed on the backend (the fine one there already in
            # fp64 runs), each copied to the host once
            finer = x.geometry if x.dtype == np.float64 else host.to(backend, np.float64)
            mine = []
            for k, (coarse, n_own) in enumerate(zip(part_maps, part_owns, strict=True)):
                on_backend = coarse_geometry(finer, coarse)
                geometry = on_backend.on_host()
                d = Discretisation(geometry, coarse_gas, scheme, part_specs, strategy, backend,
                                   x.dtype, kernels)
                if n_own is not None:  # a part: its own coarse cells only
                    sweeps = own_levels(geometry, n_own, colours)
                    if d.fused is not None:
                        d.fused.n_active = n_own
                else:
                    sweeps = (colour_sweeps(coarse_colours[k]) if colours and coarse_colours
                              else None)
                lusgs = LUSGS(d, geometry, omega, colours=colours, levels=sweeps)
                steps = (FusedLUSGS(d.fused, lusgs.kernels, forcing=True,
                                    max_update=max_update)
                         if lusgs.kernels is not None else None)
                mine.append(CoarseLevel(geometry, d, lusgs, steps, backend.asarray(coarse),
                                        backend.asarray(finer.volume, x.dtype), n_own))
                finer = on_backend
            self.parts.append(mine)
        fused = kernels == "fused" and all(level.steps for mine in self.parts for level in mine)
        #: The cycle in kernels, recorded as one CUDA graph where the transport allows
        #: (None: array code). RANS: the fine residual reads the eddy viscosity from the
        #: fused residual's one buffer, loaded by each fused step.
        self.kernels = (MultigridKernels(self, transports[0]) if fused and self.levels
                        else None)
        #: Per coarse level, the transport of its states (None: nothing to exchange). Set
        #: after :attr:`kernels`: a NCCL communicator is destroyed only after every graph
        #: that recorded its operations (:func:`~gpusolver.backends.graphs.graphs_for_exchanges`),
        #: and these transports share the parts'.
        self.transports = transports

    def deepen(self) -> bool:
        """An ``auto`` cycle's turn from V to W on a 2-D mesh (:data:`AUTO_W_DIMS`), for
        good (True where it turned now): each coarse level smoothed and corrected twice."""
        if not self.adaptive or self.passes == CYCLES["w"]:
            return False
        self.passes = CYCLES["w"]
        return True

    def damp(self) -> float:
        """Halve the weight of the coarse levels' correction of the fine state; the new
        weight. A correction that overshoots flips the fine state back and forth from
        step to step (RANS, whose coarse levels take the Euler operator): a weight below
        one damps the flip, where a smaller CFL number does not."""
        self.weight *= 0.5
        return self.weight

    @property
    def fine(self) -> Discretisation:
        """The first local part's system (the whole mesh's)."""
        return self.fines[0]

    @property
    def levels(self) -> list[CoarseLevel]:
        """The first local part's coarse levels (the whole mesh's)."""
        return self.parts[0]

    @property
    def n_cells(self) -> list[int]:
        """Cells of each coarse level (of the first local part)."""
        return [level.discretisation.geometry.n_cells for level in self.levels]

    def correct(self, states: list, cfl: float) -> list:
        """``states`` (one of each local part's fine system; on parts, their halos
        exchanged) corrected from the coarse levels.

        ``cfl``: the CFL number of the coarse LU-SGS steps (local time steps).
        """
        for x, mine in zip(self.fines, self.parts, strict=True):
            for level in mine:
                level.discretisation.circulation = x.circulation
        if not self.levels:
            return states
        if self.kernels is not None:
            return self.kernels.correct(states, cfl)
        residuals = [x.residual(u) for x, u in zip(self.fines, states, strict=True)]
        changes = self._coarse_change(0, states, residuals, cfl)
        return [self._prolong(mine[0], u, self.weight * change)
                for mine, u, change in zip(self.parts, states, changes, strict=True)]

    # ------------------------------------------------------------------ cycle
    def _coarse_change(self, k: int, states: list, residuals: list, cfl: float) -> list:
        """The change of level ``k``'s state of each part (from the restriction of its
        ``states``, whose residuals plus forcing are ``residuals``) by its steps and the
        levels below."""
        levels = [mine[k] for mine in self.parts]
        starts = [self._restrict(level, u * level.finer_volume)
                  / level.discretisation.geometry.volume
                  for level, u in zip(levels, states, strict=True)]
        self._exchange(k, starts)
        forcings = [self._restrict(level, r) - level.discretisation.residual(start)
                    for level, r, start in zip(levels, residuals, starts, strict=True)]
        current = starts
        for _ in range(self.passes):
            current = [self._smooth(level, u, forcing, cfl)
                       for level, u, forcing in zip(levels, current, forcings, strict=True)]
            self._exchange(k, current)
            if k + 1 < len(self.levels):
                below = [mine[k + 1] for mine in self.parts]
                driven = [level.discretisation.residual(u) + forcing for level, u, forcing
                          in zip(levels, current, forcings, strict=True)]
                changes = self._coarse_change(k + 1, current, driven, cfl)
                current = [self._prolong(level, u, change)
                           for level, u, change in zip(below, current, changes, strict=True)]
        return [u - start for u, start in zip(current, starts, strict=True)]

    def _exchange(self, k: int, states: list) -> None:
        """Fill the halo of level ``k``'s states of the parts from their owners."""
        if self.transports[k] is not None:
            self.transports[k].exchange(states)

    def _restrict(self, level: CoarseLevel, values):
        """Sums of ``values`` ``(n_vars, n_finer)`` over each coarse cell of ``level``."""
        d = level.discretisation
        total = d.backend.xp.zeros((values.shape[0], d.geometry.n_cells), dtype=values.dtype)
        d.backend.scatter["add"](total, level.coarse, values)
        return total

    def _prolong(self, level: CoarseLevel, u, change):
        """``u`` plus the coarse ``change`` of each cell's coarse cell, relaxed per cell as
        an LU-SGS update is (:func:`relaxed_update` of :attr:`max_update`: a correction
        spread over a coarse cell can be far too large for the boundary layer's or a sharp
        trailing edge's cells in it); ``u`` where the result is not finite."""
        d = level.discretisation
        new, _ = relaxed_update(d.gas, u, d.backend.xp.take(change, level.coarse, axis=1),
                                self.max_update)
        return d.backend.xp.where(d.gas.invalid(new)[None], u, new)

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


def refined_parents(plan_cells: np.ndarray, children: int) -> list[np.ndarray]:
    """The coarse levels of a part refined on its rank: the generations of its
    refinement, finest first. The first level's map gives each own cell (own plan cells
    ``plan_cells``, ``children`` to a cell of the coarse plan) its parent, each deeper
    level's each parent its own parent, down to the mesh as read; each level numbers its
    cells from 0. A part owns a range of the coarse plan's cells and all their children
    (:func:`meshorder.part_refine.refine_part`, each cell of a generation splitting into
    :data:`~meshorder.part_refine.CELL_CHILDREN`), so every generation's cells are a range.

    >>> [m.tolist() for m in refined_parents(np.array([130, 131, 129, 128, 191, 136]), 64)]
    [[0, 0, 0, 0, 7, 1], [0, 0, 0, 0, 0, 0, 0, 0]]
    """
    values, maps = np.asarray(plan_cells), []  # the cells of the generation in hand
    while children > 1:
        parents = values // CELL_CHILDREN
        first = int(parents.min()) if len(parents) else 0
        maps.append(parents - first)
        values = np.arange(first, first + int(maps[-1].max(initial=-1)) + 1)
        children //= CELL_CHILDREN
    return maps


def _part_levels(hosts: list[FVGeometry], parts: PartHalos, levels: int, backend,
                 parents: list[np.ndarray] | None = None
                 ) -> tuple[list[list[np.ndarray]], list[list[int]], list]:
    """The coarse levels of mesh parts (see :class:`Multigrid`): per local part, each
    level's cell map and own coarse cells; per level, the transport of its states. As on
    the whole mesh, the levels stop where the parts together would have fewer than
    :data:`~meshorder.agglomeration.MIN_COARSE_CELLS` coarse cells. ``parents``: the
    maps of the refinement's generations, where the parts were refined on their ranks:
    levels on top of ``levels``."""
    transport, halos = parts.transport, parts.halos
    n_own, n_cells = list(parts.n_own), [host.n_cells for host in hosts]
    pairs = []  # each part's faces between two own cells
    for host, own in zip(hosts, n_own, strict=True):
        left, right = host.left[:host.n_interior], host.right[:host.n_interior]
        inside = (left < own) & (right < own)
        pairs.append((left[inside], right[inside]))
    generations = parents or [[] for _ in hosts]
    graphs = None
    maps, owns, transports = [[] for _ in hosts], [[] for _ in hosts], []
    for k in range(levels + len(generations[0])):
        if k < len(generations[0]):
            own_maps = [part[k] for part in generations]
        else:
            if graphs is None:  # made once, through the generations above, from the fine faces
                graphs = [_level_graph(a, b, functools.reduce(lambda cells, m: m[cells], part,
                                                              np.arange(own)))
                          for (a, b), part, own in zip(pairs, generations, parts.n_own,
                                                       strict=True)]
            own_maps = [agglomerate(graph) for graph in graphs]
        mine = sum(int(m.max()) + 1 for m in own_maps)
        if transport.sum(np.array([mine]))[0] < MIN_COARSE_CELLS:  # as on the whole mesh
            break
        numbers = [backend.asarray(np.concatenate([m, np.full(total - own, -1)])[None], np.float64)
                   for m, total, own in zip(own_maps, n_cells, n_own, strict=True)]
        # each halo cell learns its owner's coarse cell (buffers of their own: one row)
        transport.sibling(halos).exchange(numbers)
        coarse_halos = {}
        for i, (p, m) in enumerate(zip(halos, own_maps, strict=True)):
            cells, coarse_halos[p] = coarse_halo(
                halos[p], m, backend.to_host(numbers[i])[0, n_own[i]:], n_cells[i])
            maps[i].append(cells)
            owns[i].append(int(m.max()) + 1)
            n_cells[i] = int(cells.max()) + 1
        n_own = [mine[-1] for mine in owns]
        halos, transport = coarse_halos, transport.sibling(coarse_halos)
        transports.append(transport)
        if graphs is not None:
            graphs = [coarse_graph(graph, m) for graph, m in zip(graphs, own_maps, strict=True)]
    return maps, owns, transports


def _level_graph(left: np.ndarray, right: np.ndarray, cells: np.ndarray) -> CSR:
    """The graph of a level's own cells, two neighbours where a face between two own fine
    cells (``left``, ``right``) joins them; ``cells``: each own fine cell's cell on the
    level (the identity: the fine cells' own graph).

    >>> graph = _level_graph(np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([0, 0, 1, 1]))
    >>> graph.indptr.tolist(), graph.indices.tolist()
    ([0, 1, 2], [1, 0])
    """
    a, b = cells[left], cells[right]
    cut = a != b
    return CSR.from_pairs(a[cut], b[cut], int(cells.max()) + 1 if len(cells) else 0)


#: Threads per block of the transfer kernels (``kernels/multigrid.cu``).
BLOCK = 256


def residual_into(fused, state, out, phi=NULL, mode: int = VENKATAKRISHNAN) -> None:
    """The residual of a level's (or the fine mesh's) fused kernels at ``state`` into
    ``out``: the face pass (``phi``, ``mode``: its limiter, see
    :func:`~gpusolver.solvers.fv.fused.limiter_input`) and the cell update."""
    fused.update(fused.face_pass(state, phi, mode, NULL, speed=False), residual_out=out)


@dataclass
class _PartBuffers:
    """One local part's buffers of the kernels' cycle: the fine state in and out, its
    residual and limiter, and per coarse level its sums, states and cell map."""

    u_in: object
    u_out: object
    residual: object
    phi: object
    levels: list[dict]


class MultigridKernels:
    """:meth:`Multigrid.correct` in kernels: the fine residual, the transfers
    (``kernels/multigrid.cu``) and every coarse level's residual and LU-SGS step, all in
    buffers of their own, recorded as one CUDA graph per cycle and limiter mode and replayed (on
    parts, where the transport's exchange can be recorded: NCCL's).

    Parameters
    ----------
    multigrid : Multigrid
        Its fine discretisations and coarse levels run fused kernels.
    transport : object or None
        The transport of its first coarse level (None: the whole mesh, nothing to
        exchange): the cycle is recorded where its exchanges can be.
    """

    def __init__(self, multigrid: Multigrid, transport=None):
        self.multigrid = mg = multigrid
        f = mg.fine.fused
        self.backend, self.xp, dtype = f.backend, f.xp, f.dtype
        xp = self.xp
        self.parts = []
        for x, mine in zip(mg.fines, mg.parts, strict=True):
            shape = (x.fused.n_vars, x.fused.n_cells)
            levels = [{name: xp.empty((x.fused.n_vars, level.discretisation.geometry.n_cells),
                                      dtype)
                       for name in ("u_sum", "r_sum", "start", "state", "residual")}
                      | {"coarse": self.backend.asarray(level.coarse, np.int32)}
                      for level in mine]
            self.parts.append(_PartBuffers(*(xp.empty(shape, dtype) for _ in range(3)),
                                           xp.ones(shape, dtype),  # the limiter, if computed
                                           levels))
        real, dim = real_type(dtype), mg.fine.geometry.dim
        names = (f"restrict_kernel<{real}, {dim}>", f"prolong_kernel<{real}, {dim}>",
                 f"select_kernel<{real}>")
        compiled = self.backend.kernels(__package__, "kernels/multigrid.cu", names)
        self.restrict, self.prolong, self.select = (compiled[name] for name in names)
        self.gamma = dtype.type(mg.fine.gas.gamma)
        #: The prolongation's relaxation bound (:attr:`Multigrid.max_update`; inf: none).
        self.limit = dtype.type(np.inf if mg.max_update is None else mg.max_update)
        self.graphs = (StepGraphs(self.backend) if transport is None
                       else graphs_for_exchanges(self.backend, transport))

    def correct(self, states: list, cfl: float) -> list:
        """``states`` corrected from the coarse levels (buffers of this object, rewritten
        by the next call)."""
        mg = self.multigrid
        inputs = [limiter_input(x) for x in mg.fines]
        phis = [part.phi if phi is None else phi
                for part, (phi, _) in zip(self.parts, inputs, strict=True)]
        modes = [mode for _, mode in inputs]
        with self.graphs.stream:
            for part, u in zip(self.parts, states, strict=True):
                part.u_in[...] = u
            for mine in mg.parts:
                for level in mine:
                    level.steps.cfl.fill(cfl)
                    level.discretisation.fused.update_far_field()
        for x in mg.fines:
            x.fused.update_far_field()
        key = (mg.passes, mg.weight,
               *((id(phi), mode) for phi, mode in zip(phis, modes, strict=True)))
        self.graphs.run(key, lambda: self._launches(phis, modes))
        self.backend.synchronize()  # the next step reads u_out on another stream
        for x, phi, mode in zip(mg.fines, phis, modes, strict=True):
            if x.fused.limited and mode != FROZEN:
                x.limiter_values = phi
        return [part.u_out for part in self.parts]

    def _launches(self, phis: list, modes: list) -> None:
        for x, part, phi, mode in zip(self.multigrid.fines, self.parts, phis, modes,
                                      strict=True):
            residual_into(x.fused, part.u_in, part.residual, phi, mode)
        self._level(0, [part.u_in for part in self.parts],
                    [part.residual for part in self.parts])
        for part in self.parts:
            self.prolong_into(part.levels[0], part.u_in, part.u_out,
                              weight=self.multigrid.weight)

    # ------------------------------------------------------------------ the cycle's pieces
    def restrict_into(self, level: CoarseLevel, b: dict, state, residual) -> None:
        """``level``'s sums of the finer ``state`` (volume-weighted) and ``residual`` into
        ``b``'s ``u_sum`` and ``r_sum``, and its mean state into ``b["start"]``."""
        b["u_sum"].fill(0)
        b["r_sum"].fill(0)
        self._transfer(self.restrict, state.shape[1], b, level.finer_volume, state, residual,
                       b["u_sum"], b["r_sum"])
        self.xp.divide(b["u_sum"], level.discretisation.fused.volume, out=b["start"])

    def smooth_into(self, level: CoarseLevel, b: dict, state) -> None:
        """One LU-SGS step of ``level`` from ``state`` (its forcing set) into
        ``b["state"]``; ``state`` itself where the step leaves a bad cell."""
        steps = level.steps
        first, new = steps.states
        first[...] = state
        steps._launches(first, new, True, NULL, VENKATAKRISHNAN)
        self.select(grid(first.size, BLOCK), (BLOCK,),
                    (np.int32(first.size), steps.bad_cell, np.int32(NO_BAD_CELL), new, first,
                     b["state"]))

    def prolong_into(self, b: dict, state, out, weight: float = 1) -> None:
        """``out`` = the finer ``state`` plus ``weight`` times the change of ``b``'s level
        (``b["state"] - b["start"]``) of each cell's coarse cell, relaxed."""
        self._transfer(self.prolong, state.shape[1], b, state, b["state"], b["start"], out,
                       weight=weight)

    def _level(self, k: int, states: list, residuals: list) -> None:
        """Level ``k``'s state of each part in its ``state`` buffer: restriction of its
        ``states`` (whose residuals plus forcing are ``residuals``), steps and
        corrections from below."""
        mg, xp = self.multigrid, self.xp
        levels = [mine[k] for mine in mg.parts]
        buffers = [part.levels[k] for part in self.parts]
        for level, b, u, residual in zip(levels, buffers, states, residuals, strict=True):
            self.restrict_into(level, b, u, residual)
        mg._exchange(k, [b["start"] for b in buffers])
        for level, b in zip(levels, buffers, strict=True):
            residual_into(level.discretisation.fused, b["start"], b["residual"])
            xp.subtract(b["r_sum"], b["residual"], out=level.steps.forcing)
        current = [b["start"] for b in buffers]
        for _ in range(mg.passes):
            for level, b, u in zip(levels, buffers, current, strict=True):
                self.smooth_into(level, b, u)
            current = [b["state"] for b in buffers]
            mg._exchange(k, current)
            if k + 1 < len(mg.levels):
                for level, b in zip(levels, buffers, strict=True):
                    residual_into(level.discretisation.fused, b["state"], b["residual"])
                    b["residual"] += level.steps.forcing
                self._level(k + 1, current, [b["residual"] for b in buffers])
                for part, u in zip(self.parts, current, strict=True):
                    self.prolong_into(part.levels[k + 1], u, u)

    def _transfer(self, kernel, n_fine: int, b: dict, *arrays, weight=1) -> None:
        """Launch a restriction or prolongation between ``n_fine`` cells and ``b``'s level
        (a prolongation adds ``weight`` times the coarse change)."""
        n_coarse = b["start"].shape[1]
        extra = ((self.gamma, self.limit, self.gamma.dtype.type(weight))
                 if kernel is self.prolong else ())
        kernel(grid(n_fine, BLOCK), (BLOCK,),
               (np.int32(n_fine), np.int32(n_coarse), b["coarse"], *arrays, *extra))
