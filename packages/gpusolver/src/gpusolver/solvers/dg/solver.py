"""Modal RKDG on a whole mesh or on the parts of a partitioned plan.

A whole mesh is a run of one part: :class:`DGSolver` always steps a list of local parts,
each a :class:`~gpusolver.solvers.dg.discretisation.DGDiscretisation` (its NumPy
right-hand side or, on the cupy backend, its kernels), and a transport
(:mod:`gpusolver.parallel`). Given a mesh, it holds one part with every element its own;
given the parts of a partitioned plan (``meshorder reorder --partitions N``), each
part's mesh: its own elements first, in plan order, then the halo's (every element of
another part within two faces). Before each stage's right-hand side the halo's modal
coefficients are refreshed from the parts that own them: ``loopback`` for every part in
one process, ``mpi-host`` and ``nccl`` one part per MPI rank. An own element's
right-hand side reads its face neighbours' traces (the first halo layer) and, in
Navier-Stokes, their BR2 liftings, which read nothing further out: so one exchange per
stage gives the one-part answer. The faces on the outside of the halo (marker
``unmarked``) take extrapolated states; they touch no own element.

In the kernels (the cupy backend, or :meth:`DGSolver.fuse`) each stage's exchange
overlaps with the part's work that reads no halo state: the volume terms of the own
elements (in Navier-Stokes only of those with no face on the halo) and the fluxes of the
faces between them. The part's interior faces are ordered for it (:data:`FACE_KINDS`);
faces between two halo elements and the halo's own rows are not computed.

Global steps are the minimum over all parts; residual norms and the bad-element check are
summed over all parts once per step, the wall loads when asked
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
from gpusolver.solvers.dg.discretisation import EXACT, DGDiscretisation
from gpusolver.solvers.dg.fused import FusedDG, HaloSplit
from gpusolver.solvers.dg.fused_parts import FusedDGPartsSteps
from gpusolver.solvers.dg.layout import DGLayout
from gpusolver.solvers.parts import Parts, PerPart, halo_sends, shared
from meshorder import Mesh
from meshorder.pipeline import DEFAULT_FACES, PlanOptions, make_plan
from meshorder.plan import Plan, PlanPart
from meshorder.topology import UNMARKED_NAME

#: The condition of the faces on the outside of a part's halo.
HALO_RIM = "supersonic-outflow"


class DGSolver(Parts):
    """Explicit Runge-Kutta modal DG steps on a whole mesh or on mesh parts.

    Parameters
    ----------
    mesh : Mesh or list of meshorder.plan.PlanPart
        The whole mesh (one part), or the parts this process computes: one under MPI,
        every part with ``loopback``.
    gas : Gas
    boundaries : dict
        Condition per marker of the whole mesh, as for
        :class:`~gpusolver.solvers.dg.discretisation.DGDiscretisation` (periodic markers
        are not supported across parts).
    degree, flux, cfl, exact, shock_capturing, backend
        As for :class:`~gpusolver.solvers.dg.discretisation.DGDiscretisation`.
    plan : Plan, optional
        Whole mesh: element and face order (default: meshorder's).
    integrator : str
        ``rk4`` or ``ssprk3``.
    reference_area : float
        Length that force coefficients are divided by.
    local_time_step : bool
        Each element at its own stable step (steady states; no time passes), or one
        global step.
    transport : callable, optional
        Parts: makes the transport from the parts' halo lists (default
        :class:`~gpusolver.parallel.Loopback`).
    overlap : bool
        Parts, in the kernels: compute what reads no halo state while the halo is in
        flight (False: after the exchange).
    faces : str
        Parts: meshorder's face order inside each part. (The part's elements are numbered
        in plan order, so each face's first element is its lower one and greedy faces
        add into one element several times in a warp; ``strided`` faces do not, but read
        more scattered memory: on two H100s greedy parts were 7% faster.)

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> square = {m: "farfield" for m in ("left", "right", "bottom", "top")}
    >>> solver = DGSolver(grid_mesh(3, 3, "triangle"), Gas(dim=2, mach=0.5), square, degree=2)
    >>> bool(solver.step(0.01).max() < 1e-12)  # free stream is preserved
    True
    """

    dtype = np.dtype(np.float64)
    #: No vortex-corrected far field here (checkpoints record it as 0).
    circulation = 0.0
    bad_state = "the mean state of element"
    advice = "lower the CFL number"

    def __init__(self, mesh: Mesh | list[PlanPart], gas: Gas, boundaries: dict, *,
                 degree: int = 1, flux: str = "rusanov", plan: Plan | None = None,
                 integrator: str = "rk4",
                 cfl: float = 0.5, exact: Callable | None = None, reference_area: float = 1.0,
                 local_time_step: bool = False, shock_capturing: bool = False,
                 backend: str = "numpy", transport=None, overlap: bool = True,
                 faces: str = DEFAULT_FACES):
        if integrator not in TABLEAUX:
            raise ConfigError(f"unknown integrator {integrator!r}; valid: {', '.join(TABLEAUX)}")
        specs = {name: value if value == EXACT or isinstance(value, BoundarySpec)
                 else BoundarySpec.parse(name, value) for name, value in boundaries.items()}
        options = dict(degree=degree, flux=flux, cfl=cfl, exact=exact,
                       shock_capturing=shock_capturing, backend=backend)
        splits = [None]
        if isinstance(mesh, Mesh):
            plan = plan or make_plan(mesh)
            d = DGDiscretisation(mesh, gas, specs, plan=plan, **options)
            self.discretisations, self.layouts = [d], [_whole(d.layout, plan)]
            self.mesh, self.parts, self.local, send = mesh, [], [0], {}
            self.n_cells = mesh.n_cells
        else:
            if any(spec != EXACT and spec.condition.name == "periodic"
                   for spec in specs.values()):
                raise ConfigError("periodic boundaries are not supported across parts yet")
            check_markers(mesh[0].boundary_markers, specs)
            built = [_part_discretisation(part, specs, gas, faces, **options) for part in mesh]
            self.discretisations = [d for d, _, _ in built]
            self.layouts = [layout for _, layout, _ in built]
            splits = [split for _, _, split in built]
            self.parts, self.local = mesh, [part.mesh.part for part in mesh]
            send, self.n_cells = halo_sends(mesh), mesh[0].n_cells
        self._splits = splits
        self.gas, self.reference_area = gas, reference_area
        self.stages, self.local_time_step = TABLEAUX[integrator], local_time_step
        self.backend = self.discretisations[0].backend
        self.overlap = overlap
        #: Every local part's exchange lists.
        self.halos = halo_lists(dict(zip(self.local, self.layouts, strict=True)), send)
        self.transport = (transport or Loopback)(self.halos)
        #: Steps in the kernels, the exchange overlapped (None: array code, or the
        #: modal filter's steps: each right-hand side in the kernels after the exchange).
        self.fused_steps: FusedDGPartsSteps | None = None
        if all(d.fused is not None for d in self.discretisations):
            self.fuse()
        self.wall_markers = [name for name, spec in specs.items()
                             if spec != EXACT and spec.condition.wall]
        self._start_loads()

    # ------------------------------------------------------------------ one local part
    @property
    def discretisation(self) -> DGDiscretisation:
        """The discretisation of the one local part (the whole mesh)."""
        (d,) = self.discretisations
        return d

    @property
    def layout(self) -> DGLayout:
        """The element layout of the one local part (the whole mesh: plan order)."""
        return self.discretisation.layout

    @property
    def u(self):
        """The modal coefficients of the one local part, plan order."""
        return self.discretisation.u

    @u.setter
    def u(self, value) -> None:
        self.states = [value]

    # ------------------------------------------------------------------ every part
    cfl = shared("cfl", "The CFL number of the time steps.")
    time = shared("time", "Physical time (that of every part: their exact boundary states).")

    @property
    def states(self) -> list:
        """Each local part's modal coefficients ``(n_vars, n_modes, n_local)``."""
        return [d.u for d in self.discretisations]

    @states.setter
    def states(self, states: list) -> None:
        self._gathered = None
        for d, u in zip(self.discretisations, states, strict=True):
            d.u = u

    def time_step(self) -> float:
        """The largest stable global step at the CFL number (over all parts)."""
        steps = [float(self.backend.to_host(d.local_time_steps()[:layout.n_own]).min())
                 for d, layout in zip(self.discretisations, self.layouts, strict=True)]
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
        return self.advance(1, dt)

    def advance(self, steps: int, dt: float | None = None) -> np.ndarray:
        """Take ``steps`` steps of ``dt`` (default: as :meth:`step`; a global step is
        computed once) and return the last one's residual norms, as :meth:`step` does.

        Only the last step checks the state and reads norms back to the host: on a GPU
        the others queue their kernels without waiting. A state that went bad earlier
        stays bad (non-finite), so the last check still catches it.
        """
        local = dt is None and self.local_time_step
        if dt is None and not local:
            dt = self.time_step()
        for _ in range(steps - 1):
            self._runge_kutta(local, dt)
            self.iteration += 1
        first_rates, first_flux = self._runge_kutta(local, dt)
        xp, bad_cells, squares = self.backend.xp, [], []
        for d, layout, rate in zip(self.discretisations, self.layouts, first_rates,
                                   strict=True):
            invalid = self.gas.invalid(d.cell_averages()[:, :layout.n_own])
            bad_cells.append(xp.where(invalid.any(), xp.argmax(invalid), layout.n_own)
                             .reshape(1))
            squares.append((d.cell_averages(rate)[:, :layout.n_own] ** 2).sum(axis=1))
        return self._finish_on_device(bad_cells, squares, first_flux)

    def _runge_kutta(self, local: bool, dt) -> tuple[list, list]:
        """One step of every part (in the kernels or array code); the first stage's
        rates and boundary fluxes, per part."""
        if self.fused_steps is not None:
            self.states = self.fused_steps(self.states, None if local else dt, self.overlap)
            first_rates = [steps.first_rate for steps in self.fused_steps.parts]
            first_flux = [steps.wall_flux for steps in self.fused_steps.parts]
        else:
            first_rates, first_flux = self._arrays_step(local, dt)
        self.time += 0.0 if local else dt
        return first_rates, first_flux

    def _arrays_step(self, local: bool, dt: float) -> tuple[list, list]:
        """One Runge-Kutta step of every part in array code (each right-hand side, the
        kernels' where the discretisation has them, after the stage's exchange), the
        modal filter applied; the first stage's rates and boundary fluxes, per part."""
        steps = PerPart(d.local_time_steps() for d in self.discretisations) if local else dt
        offsets = iter([0.0 if local else stage.time * dt for stage in self.stages])

        def rate(states: PerPart) -> PerPart:
            offset = next(offsets)
            for d in self.discretisations:
                d.stage_offset = offset
            self.transport.exchange(states)
            return PerPart(d.rate(u if d.filter is None else d.filter(u))
                           for d, u in zip(self.discretisations, states, strict=True))

        rate, first_flux = keeping_first(rate, lambda: [d.boundary_flux
                                                        for d in self.discretisations])
        states, first_rates = runge_kutta(self.stages, PerPart(self.states), rate, steps)
        self.states = [u if d.filter is None else d.filter(u)
                       for d, u in zip(self.discretisations, states, strict=True)]
        for d in self.discretisations:
            d.stage_offset = 0.0
        return first_rates, first_flux[0]

    def advance_to(self, final_time: float) -> int:
        """Step at the CFL number up to ``final_time`` (the last step shortened); returns
        the number of steps."""
        steps = 0
        while self.time < final_time * (1 - 1e-12):
            self.step(min(self.time_step(), final_time - self.time))
            steps += 1
        return steps

    def fuse(self) -> None:
        """Compute the right-hand sides in the DG kernels (on the numpy backend compiled
        for the CPU: how the tests check the GPU path without a GPU); a part's in two
        pieces about its halo exchange (:meth:`FusedDG.split_at_halo`)."""
        for d, split in zip(self.discretisations, self._splits, strict=True):
            if d.fused is None:
                d.fused = FusedDG(d, d.backend)
            if split is not None:
                d.fused.split_at_halo(split)
        self.fused_steps = None
        if all(d.filter is None for d in self.discretisations):
            self.fused_steps = FusedDGPartsSteps([d.fused for d in self.discretisations],
                                                 self.stages, self.transport)

    # ------------------------------------------------------------------ states and views
    def set_conserved(self, u: np.ndarray) -> None:
        """Set the modal coefficients of every element from the file's cell order (as
        :meth:`DGDiscretisation.set_conserved`: a lower degree's start this one)."""
        self._gathered = None
        if self.mesh is not None:
            self.discretisation.set_conserved(u)
            return
        for d, part in zip(self.discretisations, self.parts, strict=True):
            d.set_conserved(np.asarray(u)[..., part.mesh.file_cells])

    def primitive(self) -> np.ndarray:
        """Primitive element means ``(n_vars, n_cells)`` in the file's cell order (every
        process calls it: a global sum)."""
        return self.gas.to_primitive(self._gather_cells(self._field_arrays()[0]))

    def _field_arrays(self) -> tuple[list, list[dict]]:
        """Per local part its elements' means (no model fields)."""
        return [d.cell_averages() for d in self.discretisations], [{} for _ in self.layouts]

    def high_order_view(self) -> tuple[np.ndarray, list, np.ndarray] | None:
        """The own elements of every part cut into sub-cells, as
        :meth:`DGDiscretisation.high_order_view`, gathered on the root (None elsewhere;
        every process calls it)."""
        views = self.transport.gather([d.high_order_view(layout.n_own) for d, layout
                                       in zip(self.discretisations, self.layouts, strict=True)])
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


def _whole(layout: DGLayout, plan: Plan) -> PartCells:
    """The whole mesh as one part: every element its own, no halo."""
    n, ni = layout.n_elements, layout.n_interior
    return PartCells(geometry=layout, cells=np.arange(n), file_cells=layout.cell_order,
                     mesh_cells=np.arange(n), n_own=n, facets=plan.face_facet[ni:],
                     own_boundary=np.arange(len(layout.left) - ni))


def _part_discretisation(part: PlanPart, specs: dict, gas: Gas, faces: str,
                         **options) -> tuple[DGDiscretisation, PartCells, HaloSplit]:
    """The DG discretisation of one part's mesh (own elements first, in plan order, then the halo's;
    the halo's outer faces extrapolated; faces of each kind in meshorder's order ``faces``),
    the part's cells, and what of its right-hand side reads no halo state."""
    mesh = part.mesh
    own = part.own()
    halo = np.setdiff1d(np.arange(mesh.mesh.n_cells), own)
    order = np.concatenate([own, halo[np.argsort(mesh.cells[halo])]])
    plan, kinds = _faces_by_halo(make_plan(mesh.mesh, PlanOptions(faces=faces),
                                           cell_order=order), len(own))
    markers = plan.boundary_ranges()
    boundaries = {name: specs[name] for name in markers if name != UNMARKED_NAME}
    if UNMARKED_NAME in markers:
        boundaries[UNMARKED_NAME] = BoundarySpec.parse(UNMARKED_NAME, HALO_RIM)
    d = DGDiscretisation(mesh.mesh, gas, boundaries, plan=plan, **options)
    ni = plan.n_interior_faces
    cells = PartCells(geometry=d.layout, cells=mesh.cells[order],
                      file_cells=mesh.file_cells[order], mesh_cells=order, n_own=len(own),
                      facets=file_facets(mesh, plan.face_facet[ni:]),
                      own_boundary=np.flatnonzero(plan.face_cells[ni:, 0] < len(own)))
    return d, cells, _halo_split(plan, len(own), kinds, d.viscous is not None)


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
    return (plan.with_face_order(order),
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
