"""Modal RKDG on the parts of a partitioned plan, exchanging the halo's modes.

Each part (``meshorder reorder --partitions N``) runs the single-mesh DG solver
(:class:`~gpusolver.solvers.dg.solver.DGSolver`: its NumPy right-hand side or, on the
cupy backend, its kernels) on its part's mesh: its own elements first, in plan order, then
the halo's (every element of another part within two faces). Before each stage's
right-hand side the halo's modal coefficients are refreshed from the parts that own
them, through the same transports as the finite-volume solver (:mod:`gpusolver.parallel`):
``loopback`` for every part in one process, ``mpi-host`` and ``nccl`` one part per MPI
rank. An own element's right-hand side reads its face neighbours' traces (the first
halo layer) and, in Navier-Stokes, their BR2 liftings, which read nothing further out:
so one exchange per stage gives the one-part answer. The faces on the outside of the
halo (marker ``unmarked``) take extrapolated states; they touch no own element.

In the kernels (the cupy backend, or :meth:`PartitionedDG.fuse`) each stage's exchange
overlaps with the part's work that reads no halo state: the volume terms of the own
elements (in Navier-Stokes only of those with no face on the halo) and the fluxes of the
faces between them. The part's interior faces are ordered for it (:data:`FACE_KINDS`);
faces between two halo elements and the halo's own rows are not computed.

Global steps are the minimum over all parts; residual norms, wall loads and the bad-element
check come from the device in one transfer and are summed over all parts once per step
(:class:`gpusolver.solvers.parts.Parts`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.integrators.explicit import TABLEAUX, keeping_first, runge_kutta
from gpusolver.layout.parts import PartCells, file_facets
from gpusolver.parallel import Loopback, halo_lists
from gpusolver.physics.boundary import BoundarySpec, check_markers
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.fused import FusedDG, HaloSplit
from gpusolver.solvers.dg.fused_parts import FusedDGPartsSteps
from gpusolver.solvers.dg.solver import EXACT, DGSolver
from gpusolver.solvers.parts import Parts, PerPart
from meshorder import Topology
from meshorder.pipeline import DEFAULT_FACES, PlanOptions, make_plan
from meshorder.plan import PlanPart
from meshorder.topology import UNMARKED_NAME

#: The condition of the faces on the outside of a part's halo.
HALO_RIM = "supersonic-outflow"


class PartitionedDG(Parts):
    """Explicit Runge-Kutta DG steps on the parts of a partitioned plan.

    Parameters
    ----------
    parts : list of meshorder.plan.PlanPart
        The parts this process computes: one under MPI, every part with ``loopback``.
    gas : Gas
    boundaries : dict
        Condition per marker of the whole mesh, as for :class:`DGSolver` (periodic
        markers are not supported across parts).
    transport : callable, optional
        Makes the transport from the parts' halo lists (default
        :class:`~gpusolver.parallel.Loopback`).
    degree, flux, integrator, cfl, exact, reference_area, local_time_step, \
shock_capturing, backend
        As for :class:`DGSolver`.
    overlap : bool
        In the kernels: compute what reads no halo state while the halo is in flight
        (False: after the exchange).
    faces : str
        meshorder's face order inside each part. (The part's elements are numbered in
        plan order, so each face's first element is its lower one and greedy faces add
        into one element several times in a warp; ``strided`` faces do not, but read
        more scattered memory: on two H100s greedy parts were 7% faster.)
    """

    dtype = np.dtype(np.float64)
    #: No vortex-corrected far field here (checkpoints record it as 0).
    circulation = 0.0

    def __init__(self, parts: list[PlanPart], gas: Gas, boundaries: dict, *,
                 transport=None, degree: int = 1, flux: str = "rusanov",
                 integrator: str = "rk4", cfl: float = 0.5, exact: Callable | None = None,
                 reference_area: float = 1.0, local_time_step: bool = False,
                 shock_capturing: bool = False, backend: str = "numpy", overlap: bool = True,
                 faces: str = DEFAULT_FACES):
        if integrator not in TABLEAUX:
            raise ConfigError(f"unknown integrator {integrator!r}; valid: {', '.join(TABLEAUX)}")
        specs = {name: value if value == EXACT or isinstance(value, BoundarySpec)
                 else BoundarySpec.parse(name, value) for name, value in boundaries.items()}
        if any(spec != EXACT and spec.condition.name == "periodic" for spec in specs.values()):
            raise ConfigError("periodic boundaries are not supported across parts yet")
        check_markers(parts[0].boundary_markers, specs)
        self.parts, self.local = parts, [part.mesh.part for part in parts]
        self.n_cells = parts[0].n_cells
        self.gas, self.cfl, self.reference_area = gas, cfl, reference_area
        self.stages, self.local_time_step = TABLEAUX[integrator], local_time_step
        self.solvers, self.layouts, self._splits = [], [], []
        for part in parts:
            solver, layout, split = _part_solver(part, specs, gas, faces, degree=degree,
                                                 flux=flux, integrator=integrator, cfl=cfl,
                                                 exact=exact,
                                                 reference_area=reference_area,
                                                 local_time_step=local_time_step,
                                                 shock_capturing=shock_capturing,
                                                 backend=backend)
            self.solvers.append(solver)
            self.layouts.append(layout)
            self._splits.append(split)
        self.backend = self.solvers[0].backend
        self.overlap = overlap
        #: Every local part's exchange lists.
        self.halos = halo_lists(dict(zip(self.local, self.layouts, strict=True)), parts[0].send)
        self.transport = (transport or Loopback)(self.halos)
        #: Steps in the kernels, the exchange overlapped (None: array code, or the
        #: modal filter's steps: each right-hand side in the kernels after the exchange).
        self.fused_steps: FusedDGPartsSteps | None = None
        if all(solver.fused is not None for solver in self.solvers):
            self.fuse()
        self.wall_markers = [name for name, spec in specs.items()
                             if spec != EXACT and spec.condition.wall]
        self._start_loads()

    @property
    def time(self) -> float:
        """Physical time (that of every part's solver: their exact boundary states)."""
        return self.solvers[0].time

    @time.setter
    def time(self, value: float) -> None:
        for solver in self.solvers:
            solver.time = value

    @property
    def states(self) -> list:
        """Each local part's modal coefficients ``(n_vars, n_modes, n_local)``."""
        return [solver.u for solver in self.solvers]

    @states.setter
    def states(self, states: list) -> None:
        self._gathered = None
        for solver, u in zip(self.solvers, states, strict=True):
            solver.u = u

    def time_step(self) -> float:
        """The largest stable global step at the CFL number (over all parts)."""
        steps = [float(self.backend.to_host(solver.local_time_steps()[:layout.n_own]).min())
                 for solver, layout in zip(self.solvers, self.layouts, strict=True)]
        return float(self.transport.minimum(np.array([min(steps)]))[0])

    def step(self, dt: float | None = None) -> np.ndarray:
        """Advance every part by ``dt`` (default: the CFL number's, per element with
        ``local_time_step``); the RMS over all elements of the mean ``dU/dt`` per variable
        at the step's start.

        Raises
        ------
        SolverDivergedError
            If an own element's mean state is non-finite or non-physical in any part.
        """
        local = dt is None and self.local_time_step
        if dt is None and not local:
            dt = self.time_step()
        if self.fused_steps is not None:
            self.states = self.fused_steps(self.states, None if local else dt, self.overlap)
            first_rates = [steps.first_rate for steps in self.fused_steps.parts]
            first_flux = [steps.wall_flux for steps in self.fused_steps.parts]
        else:
            first_rates, first_flux = self._arrays_step(local, dt)
        self.time += 0.0 if local else dt
        xp, bad_cells, squares = self.backend.xp, [], []
        for solver, layout, rate in zip(self.solvers, self.layouts, first_rates, strict=True):
            invalid = self.gas.invalid(solver.cell_averages()[:, :layout.n_own])
            bad_cells.append(xp.where(invalid.any(), xp.argmax(invalid), layout.n_own)
                             .reshape(1))
            squares.append((solver.cell_averages(rate)[:, :layout.n_own] ** 2).sum(axis=1))
        return self._finish_on_device(bad_cells, squares, first_flux)

    def _arrays_step(self, local: bool, dt: float) -> tuple[list, list]:
        """One Runge-Kutta step of every part in array code (each right-hand side, the
        kernels' where the solver has them, after the stage's exchange), the modal filter
        applied; the first stage's rates and boundary fluxes, per part."""
        steps = (PerPart(solver.local_time_steps() for solver in self.solvers) if local
                 else dt)
        offsets = iter([0.0 if local else stage.time * dt for stage in self.stages])

        def rate(states: PerPart) -> PerPart:
            offset = next(offsets)
            for solver in self.solvers:
                solver.stage_offset = offset
            self.transport.exchange(states)
            return PerPart(solver.rate(u if solver.filter is None else solver.filter(u))
                           for solver, u in zip(self.solvers, states, strict=True))

        rate, first_flux = keeping_first(rate, lambda: [solver.boundary_flux
                                                        for solver in self.solvers])
        states, first_rates = runge_kutta(self.stages, PerPart(self.states), rate, steps)
        self.states = [u if solver.filter is None else solver.filter(u)
                       for solver, u in zip(self.solvers, states, strict=True)]
        for solver in self.solvers:
            solver.stage_offset = 0.0
        return first_rates, first_flux[0]

    def fuse(self) -> None:
        """Compute the right-hand sides in the DG kernels (on the numpy backend compiled
        for the CPU: how the tests check the GPU path without a GPU), each part's in two
        pieces about its halo exchange (:meth:`FusedDG.split_at_halo`)."""
        for solver, split in zip(self.solvers, self._splits, strict=True):
            if solver.fused is None:
                solver.fused = FusedDG(solver, solver.backend)
            solver.fused.split_at_halo(split)
        if all(solver.filter is None for solver in self.solvers):
            self.fused_steps = FusedDGPartsSteps([solver.fused for solver in self.solvers],
                                                 self.stages, self.transport)

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the modal coefficients of every element from the file's cell order (as
        :meth:`DGSolver.set_conserved`: a lower degree's start this one)."""
        self._gathered = None
        for solver, part in zip(self.solvers, self.parts, strict=True):
            solver.set_conserved(np.asarray(u)[..., part.mesh.file_cells])

    def primitive(self) -> np.ndarray:
        """Primitive element means ``(n_vars, n_cells)`` in the file's cell order (every
        process calls it: a global sum)."""
        return self.gas.to_primitive(self._gather_cells(
            [solver.cell_averages() for solver in self.solvers]))

    def high_order_view(self) -> tuple[np.ndarray, list, np.ndarray] | None:
        """The own elements of every part cut into sub-cells, as
        :meth:`DGSolver.high_order_view`, gathered on the root (None elsewhere; every
        process calls it)."""
        views = self.transport.gather([solver.high_order_view(layout.n_own)
                                       for solver, layout in zip(self.solvers, self.layouts,
                                                                 strict=True)])
        if views is None:
            return None
        points, blocks, states, first = [], [], [], 0
        for process in views:
            for xy, cells, w in process:
                points.append(xy)
                blocks += [(shape, nodes + first) for shape, nodes in cells]
                states.append(w)
                first += len(xy)
        return np.concatenate(points), blocks, np.concatenate(states, axis=1)


def _part_solver(part: PlanPart, specs: dict, gas: Gas, faces: str,
                 **options) -> tuple[DGSolver, PartCells, HaloSplit]:
    """The DG solver of one part's mesh (own elements first, in plan order, then the halo's;
    the halo's outer faces extrapolated; faces of each kind in meshorder's order ``faces``),
    the part's cells, and what of its right-hand side reads no halo state."""
    mesh = part.mesh
    topology = Topology(mesh.mesh)
    own = part.own()
    halo = np.setdiff1d(np.arange(mesh.mesh.n_cells), own)
    order = np.concatenate([own, halo[np.argsort(mesh.cells[halo])]])
    plan, kinds = _faces_by_halo(make_plan(mesh.mesh, PlanOptions(faces=faces),
                                           topology=topology, cell_order=order), len(own))
    markers = plan.boundary_ranges()
    boundaries = {name: specs[name] for name in markers if name != UNMARKED_NAME}
    if UNMARKED_NAME in markers:
        boundaries[UNMARKED_NAME] = BoundarySpec.parse(UNMARKED_NAME, HALO_RIM)
    solver = DGSolver(mesh.mesh, gas, boundaries, plan=plan, topology=topology, **options)
    ni = plan.n_interior_faces
    cells = PartCells(geometry=solver.layout, cells=mesh.cells[order],
                      file_cells=mesh.file_cells[order], n_own=len(own),
                      facets=file_facets(mesh, topology.face_facet[plan.face_order[ni:]]),
                      own_boundary=np.flatnonzero(plan.face_cells[ni:, 0] < len(own)))
    return solver, cells, _halo_split(plan, len(own), kinds, solver.viscous is not None)


#: The kinds of a part's interior faces, in the order :func:`_faces_by_halo` puts them.
FACE_KINDS = ("deep", "own", "interface", "halo")


def _faces_by_halo(plan, n_own: int):
    """``plan`` (own cells first) with its interior faces in the order of
    :data:`FACE_KINDS`: between two own elements with no face on the halo, between two
    other own ones, between an own and a halo element, between two halo elements (the
    plan's order inside each); and the number of faces of each kind."""
    ni = plan.n_interior_faces
    left, right = plan.face_cells[:ni].T
    own_left, own_right = left < n_own, right < n_own
    next_to_halo = np.zeros(plan.n_cells, dtype=bool)
    next_to_halo[left[own_left & ~own_right]] = True
    next_to_halo[right[own_right & ~own_left]] = True
    deep = ~next_to_halo[left] & ~next_to_halo[right]
    kind = np.where(own_left & own_right, np.where(deep, 0, 1),
                    np.where(own_left | own_right, 2, 3))
    order = np.concatenate([np.argsort(kind, kind="stable"), np.arange(ni, plan.n_faces)])
    return (plan.replace(face_order=plan.face_order[order], face_cells=plan.face_cells[order]),
            np.bincount(kind, minlength=len(FACE_KINDS)))


def _halo_split(plan, n_own: int, kinds: np.ndarray, viscous: bool) -> HaloSplit:
    """What of a part's right-hand side reads no halo state (:class:`HaloSplit`), its
    interior faces ordered by :func:`_faces_by_halo` (``kinds``: their counts): in Euler
    every own element's volume term and the faces between own elements; in Navier-Stokes
    only those of own elements with no face on the halo (the others' liftings read it)."""
    deep_faces, own_faces, interface_end = np.cumsum(kinds)[:3]
    if not viscous:
        return HaloSplit(n_own, np.ones(n_own, dtype=bool), int(own_faces), int(own_faces),
                         int(interface_end))
    left, right = plan.face_cells[own_faces:interface_end].T
    deep = np.ones(n_own, dtype=bool)
    deep[np.where(left < n_own, left, right)] = False
    return HaloSplit(n_own, deep, int(deep_faces), int(own_faces), int(interface_end))
