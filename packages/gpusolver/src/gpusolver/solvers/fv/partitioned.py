"""The finite-volume solver on the parts of a partitioned plan, exchanging halos.

Explicit Runge-Kutta steps give the one-part answer at every step. LU-SGS steps sweep
each part's own cells (:func:`gpusolver.solvers.fv.lusgs.own_levels`) with the halo's
change taken as zero: Gauss-Seidel inside a part, block Jacobi between parts (the
coupling the LU-SGS papers use across GPUs). The steady state is the same; the steps to
it differ a little from one part's.

Each part (``meshorder reorder --partitions N``) runs the single-mesh discretisation on
its own cells plus a two-layer halo (:mod:`gpusolver.layout.parts`); before every
residual evaluation the halo states are refreshed from the parts that own them, by a
transport (:mod:`gpusolver.parallel`): ``loopback`` holds every part in one process
(the reference, and the test that the layout is exact), ``mpi-host`` and ``nccl`` one
part per MPI rank. Every global quantity (time step, residual norms, forces) goes
through the transport's ``sum``.

Explicit steps run in the fused kernels where the discretisation has them (the cupy
backend), each stage's exchange overlapped with the parts' interior
(:mod:`gpusolver.solvers.fv.fused_parts`); elsewhere in array code.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.errors import ConfigError, SolverDivergedError
from gpusolver.integrators.explicit import TABLEAUX, runge_kutta
from gpusolver.layout.parts import PartLayout, layout_of_part
from gpusolver.monitors.forces import Forces, forces_from_momentum, surface_pressure
from gpusolver.parallel import Loopback, halo_lists
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.discretisation import BoundarySpec, Discretisation, Scheme
from gpusolver.solvers.fv.fused import NO_BAD_CELL, FusedResidual
from gpusolver.solvers.fv.fused_parts import FusedPartsRungeKutta
from gpusolver.solvers.fv.lusgs import LUSGS, SWEEPS, FusedLUSGS, own_levels
from gpusolver.solvers.fv.solver import CFL_BACKOFF, RETRIES, ramped_cfl
from meshorder.plan import PlanPart


class PerPart(list):
    """One array per local part, with element-wise arithmetic (another ``PerPart`` pairs
    part by part, anything else applies to every part), so that the one Runge-Kutta loop
    (:func:`gpusolver.integrators.explicit.runge_kutta`) advances all parts."""

    def _apply(self, other, op) -> PerPart:
        if isinstance(other, PerPart):
            return PerPart(op(a, b) for a, b in zip(self, other, strict=True))
        return PerPart(op(a, other) for a in self)

    def __add__(self, other) -> PerPart:
        return self._apply(other, operator.add)

    def __mul__(self, other) -> PerPart:
        return self._apply(other, operator.mul)

    __radd__ = __add__
    __rmul__ = __mul__


class PartitionedSolver:
    """Explicit Runge-Kutta or LU-SGS steps on the parts of a partitioned plan.

    Parameters
    ----------
    parts : list of meshorder.plan.PlanPart
        The parts this process computes (:meth:`meshorder.Plan.part` or
        :func:`meshorder.plan.read_plan_part`): one under MPI, every part with the
        ``loopback`` transport. The whole mesh is never needed.
    gas : Gas
    boundaries : dict
        Condition per marker (as for :class:`gpusolver.solvers.fv.Solver`); periodic
        markers are not supported across parts.
    scheme : Scheme, optional
    integrator : str
        A name in :data:`gpusolver.integrators.explicit.TABLEAUX`, or ``lusgs``.
    cfl : float
        The CFL number (LU-SGS: the first one).
    cfl_max : float, optional
        LU-SGS: ramp the CFL number with the residual's fall up to this
        (:func:`~gpusolver.solvers.fv.solver.ramped_cfl`).
    sweeps : str
        LU-SGS levels inside each part: ``hyperplanes`` or ``colours``.
    backend, precision : str
    reference_area : float
    transport : callable, optional
        Makes the transport from the parts' halo lists: :class:`~gpusolver.parallel.Loopback`
        (default: every part in this process) or one of
        :func:`~gpusolver.parallel.make_transport` (this rank's part).
    kernels : str
        ``fused``: explicit steps in the fused kernels on the cupy backend; ``arrays``:
        array code.
    overlap : bool
        Fused steps: compute each part's interior while its halo is in flight.
    """

    def __init__(self, parts: list[PlanPart], gas: Gas, boundaries: dict, *,
                 scheme: Scheme | None = None, integrator: str = "rk4", cfl: float = 1.0,
                 cfl_max: float | None = None, sweeps: str = "hyperplanes",
                 backend: str = "numpy", precision: str = "fp64", reference_area: float = 1.0,
                 transport=None, kernels: str = "fused", overlap: bool = True):
        if integrator not in (*TABLEAUX, "lusgs"):
            raise ConfigError(f"partitioned runs take explicit or LU-SGS steps; "
                              f"time_integrator must be one of {', '.join(TABLEAUX)} or "
                              f"lusgs, not {integrator!r}")
        if sweeps not in SWEEPS:
            raise ConfigError(f"unknown sweeps {sweeps!r}; valid: {', '.join(SWEEPS)}")
        specs = {name: value if isinstance(value, BoundarySpec) else BoundarySpec.parse(name, value)
                 for name, value in boundaries.items()}
        if any(spec.condition.name == "periodic" or spec.params.get("vortex")
               for spec in specs.values()):
            raise ConfigError("periodic boundaries and vortex far fields are not supported "
                              "across parts yet")
        self.backend = get_backend(backend)
        self.dtype = np.dtype(PRECISIONS[precision])
        self.gas, self.cfl, self.reference_area = gas, cfl, reference_area
        #: :meth:`meshorder.Mesh.digest` of the whole mesh (checkpoints carry it).
        self.mesh_digest = parts[0].mesh_digest
        #: Number of cells of the whole mesh.
        self.n_cells = parts[0].n_cells
        self.stages = TABLEAUX.get(integrator)
        self.start_cfl, self.cfl_max = cfl, cfl_max
        #: The parts this process computes, their meshes and layouts.
        self.local = [part.mesh.part for part in parts]
        self.parts = parts
        self.layouts = [layout_of_part(part) for part in parts]
        #: Every local part's exchange lists.
        self.halos = halo_lists(dict(zip(self.local, self.layouts, strict=True)), parts[0].send)
        self.transport = (transport or Loopback)(self.halos)
        scheme = scheme or Scheme()
        self.discretisations = [
            Discretisation(layout.geometry, gas, scheme,
                           {name: specs[name] for name in layout.geometry.markers}, "atomic",
                           self.backend, self.dtype, kernels=kernels)
            for layout in self.layouts]
        self.overlap = overlap
        #: Explicit steps in the fused kernels (None: array code).
        self.fused_steps = None
        self.sweeps = sweeps
        #: LU-SGS sweeps of each local part's own cells (None: explicit steps).
        self.lusgs = self._lusgs() if integrator == "lusgs" else None
        #: Whole LU-SGS steps of each local part in the fused kernels (None: array code).
        self.fused_implicit = None
        self.wall_markers = [name for name, spec in specs.items() if spec.condition.wall]
        self.states = [self._uniform(layout) for layout in self.layouts]
        self.iteration = 0
        #: Local time steps only: no physical time passes.
        self.time = 0.0
        #: Checkpointed with the state; vortex far fields are not supported across parts.
        self.circulation = 0.0
        #: RMS density residual of the first step (the reference of ``residual_reduction``).
        self.first_residual: float | None = None
        #: Per local part and wall marker, the positions among the part's boundary
        #: faces of its own faces of that marker (their momentum fluxes are its loads).
        self._wall_faces = [self._own_wall_faces(layout) for layout in self.layouts]
        #: Per wall marker, the sum of its faces' normal times area over all parts.
        self._wall_normal_area = self._normal_areas()
        self._forces: dict[str, Forces] | None = None
        self._boundary_flux: list = []  # per local part, of the last step
        self._gathered: tuple[int, np.ndarray, dict | None] | None = None
        if all(d.fused is not None for d in self.discretisations):
            self.fuse()

    def _lusgs(self) -> list[LUSGS]:
        """LU-SGS sweeps of each local part's own cells (level kernels where the part's
        discretisation has fused kernels)."""
        return [LUSGS(d, layout.geometry,
                      levels=own_levels(layout.geometry, layout.n_own, self.sweeps == "colours"))
                for d, layout in zip(self.discretisations, self.layouts, strict=True)]

    def _own_wall_faces(self, layout: PartLayout) -> dict:
        geometry, own, positions = layout.geometry, layout.own_boundary, {}
        for name in self.wall_markers:
            first, end = geometry.markers.get(name, (0, 0))
            inside = (own >= first - geometry.n_interior) & (own < end - geometry.n_interior)
            positions[name] = self.backend.asarray(own[inside])
        return positions

    def _normal_areas(self) -> dict[str, np.ndarray]:
        """Per wall marker, the sum over all parts of its own faces' normal times area."""
        sums = np.zeros((len(self.wall_markers), self.gas.dim))
        for layout, walls in zip(self.layouts, self._wall_faces, strict=True):
            geometry, ni = layout.geometry, layout.geometry.n_interior
            for k, positions in enumerate(walls.values()):
                faces = ni + self.backend.to_host(positions)
                sums[k] += (geometry.normal[:, faces] * geometry.area[faces]).sum(axis=1)
        sums = self.transport.sum(sums)
        return dict(zip(self.wall_markers, sums, strict=True))

    def fuse(self) -> None:
        """Take steps in the fused kernels (on the numpy backend compiled for the CPU:
        how the tests check the GPU path without a GPU); each part's update kernel
        advances its own cells only."""
        fused = []
        for d, layout in zip(self.discretisations, self.layouts, strict=True):
            if d.fused is None:
                d.fused = FusedResidual(d, layout.geometry, "atomic")
            d.fused.n_active = layout.n_own
            fused.append(d.fused)
        if self.stages is not None:
            self.fused_steps = FusedPartsRungeKutta(fused, self.layouts, self.stages,
                                                    self.transport, self.overlap)
        else:
            if any(lusgs.kernels is None for lusgs in self.lusgs):
                self.lusgs = self._lusgs()
            self.fused_implicit = [FusedLUSGS(f, lusgs.kernels)
                                   for f, lusgs in zip(fused, self.lusgs, strict=True)]

    def use_transport(self, transport) -> None:
        """Exchange halos and sum through ``transport`` (a factory, as the constructor
        takes) from now on; the parts this process computes stay the same."""
        self.transport = transport(self.halos)
        if self.fused_steps is not None:
            self.fused_steps.transport = self.transport

    def _uniform(self, layout: PartLayout):
        w = np.repeat(self.gas.free_stream[:, None], len(layout.cells), axis=1)
        return self.backend.asarray(self.gas.to_conserved(w), self.dtype)

    @property
    def n_parts(self) -> int:
        """Number of parts (in all processes)."""
        return self.transport.n_parts

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the state from conserved values of every cell in the file's cell order."""
        self._gathered = None
        self.states = [self.backend.asarray(np.asarray(u)[:, layout.geometry.cell_order],
                                            self.dtype) for layout in self.layouts]

    @property
    def is_root(self) -> bool:
        """True in the one process that writes outputs."""
        return self.transport.is_root

    def conserved(self) -> np.ndarray:
        """Conserved state of every cell, in the file's cell order.

        Gathered from all parts by a global sum, once per iteration, with the walls'
        pressure coefficients of the last step (gathered on the root, for
        :meth:`surface_pressure`): under MPI every rank calls it at the same point, after
        which the root writes the outputs.
        """
        if self._gathered is not None and self._gathered[0] == self.iteration:
            return self._gathered[1]
        out = np.zeros((self.gas.n_vars, self.n_cells))
        for layout, state in zip(self.layouts, self.states, strict=True):
            out[:, layout.geometry.cell_order[:layout.n_own]] = self.backend.to_host(
                state[:, :layout.n_own])
        out = self.transport.sum(out)  # each cell from its one owner
        walls = self._gather_walls() if self._boundary_flux else None
        self._gathered = (self.iteration, out.astype(self.dtype), walls)
        return self._gathered[1]

    def primitive(self) -> np.ndarray:
        """Primitive state ``(rho, u, p)`` of every cell, in the file's cell order."""
        return self.gas.to_primitive(self.conserved().astype(np.float64))

    def step(self) -> np.ndarray:
        """One step of every part; the RMS of ``dU/dt`` per variable before it."""
        if self.lusgs is not None:
            return self._lusgs_step()
        if self.fused_steps is not None:
            return self._fused_step()
        self.transport.exchange(self.states)
        dt = PerPart(self.cfl * d.geometry.volume / d.spectral_radius(state)
                     for d, state in zip(self.discretisations, self.states, strict=True))
        boundary: list = []

        def rate(states: PerPart) -> PerPart:
            self.transport.exchange(states)
            rates = PerPart(d.residual(state) / d.geometry.volume
                            for d, state in zip(self.discretisations, states, strict=True))
            if not boundary:  # the first stage's, for the forces
                boundary.extend(d.boundary_flux for d in self.discretisations)
            return rates

        self.states, first_rates = runge_kutta(self.stages, PerPart(self.states), rate, dt)
        return self._finish(self._own_squares(first_rates), boundary)

    def _fused_step(self) -> np.ndarray:
        """One explicit step of every part in the fused kernels; what the step reports
        (residual sums, first bad cell, wall momentum) comes from the device in one
        transfer and is summed over all parts in one global sum."""
        states = self.fused_steps(self.states, self.cfl)
        xp, nv = self.backend.xp, self.gas.n_vars
        rows = []
        for steps, d, walls in zip(self.fused_steps.parts, self.discretisations,
                                   self._wall_faces, strict=True):
            momentum = [d.boundary_flux[1:-1, positions].sum(axis=1, dtype=np.float64)
                        for positions in walls.values()]
            rows.append(xp.concatenate([steps.bad_cell.astype(np.float64), steps.squares,
                                        *momentum]))
        local = self.backend.to_host(xp.stack(rows))
        bad_cells = [None if bad == NO_BAD_CELL else int(bad) for bad in local[:, 0]]
        norms = self._finish(local[:, 1:1 + nv].sum(axis=0),
                             [d.boundary_flux for d in self.discretisations],
                             momentum=local[:, 1 + nv:].sum(axis=0), bad_cells=bad_cells)
        self.states = states
        return norms

    def _bad_flags(self, bad_cells: list | None) -> np.ndarray:
        """Per part, the file number + 1 of its first bad cell (``bad_cells``: per local
        part, a local cell or None), 0 where none."""
        flags = np.zeros(self.n_parts)
        for p, layout, bad in zip(self.local, self.layouts, bad_cells or [None] * len(self.local),
                                  strict=True):
            if bad is not None:
                flags[p] = layout.geometry.cell_order[bad] + 1
        return flags

    def _raise_if_bad(self, flags: np.ndarray) -> None:
        """Raise :class:`SolverDivergedError` naming the first part's bad cell of the
        summed ``flags`` (see :meth:`_bad_flags`), if any."""
        if flags.any():
            cell = int(flags[flags > 0][0]) - 1
            raise SolverDivergedError(
                f"iteration {self.iteration + 1}: the solution at cell {cell} is non-finite "
                "or has non-positive density or pressure; lower the CFL number or use "
                "order = 1 to start", self.iteration + 1, cell)

    def _lusgs_step(self) -> np.ndarray:
        """One LU-SGS step of every part (retried at smaller CFL numbers if a state goes
        bad anywhere), in the fused kernels or array code, then the CFL ramp."""
        self.transport.exchange(self.states)
        if self.fused_implicit is not None:
            results = self._backing_off(self._fused_lusgs_attempt)
            self.states = [u_new for u_new, *_ in results]
            # each part's norms are the RMS over its own cells
            squares = sum(norms ** 2 * layout.n_own
                          for (_, norms, _), layout in zip(results, self.layouts, strict=True))
            boundary = [d.boundary_flux for d in self.discretisations]
        else:
            parts = [(d.face_wave_speeds(u), d.residual(u), d.boundary_flux)
                     for d, u in zip(self.discretisations, self.states, strict=True)]
            self.states = self._backing_off(lambda: self._arrays_lusgs_attempt(parts))
            squares = self._own_squares([residual / d.geometry.volume for d, (_, residual, _)
                                         in zip(self.discretisations, parts, strict=True)])
            boundary = [flux for *_, flux in parts]
        norms = self._finish(squares, boundary)
        if self.cfl_max is not None:
            self.cfl = ramped_cfl(self.start_cfl, self.cfl, norms[0] / self.first_residual,
                                  self.cfl_max)
        return norms

    def _backing_off(self, attempt):
        """``attempt()`` (returning its result and, per local part, its first bad own cell
        or None) at the CFL number, retried at smaller ones while any part in any process
        went bad; raises :class:`SolverDivergedError` naming a cell if it stays bad. One
        global sum per attempt: the parts' bad-cell flags."""
        for tries in range(RETRIES + 1):
            result, bad_cells = attempt()
            flags = self.transport.sum(self._bad_flags(bad_cells))
            if not flags.any() or tries == RETRIES:
                break
            self.cfl = max(self.cfl / CFL_BACKOFF, 1e-3)
        self._raise_if_bad(flags)
        return result

    def _fused_lusgs_attempt(self) -> tuple[list, list]:
        """Each part's fused LU-SGS step (halos current): ``(u_new, norms, bad_cell)`` per
        part, and the bad cells."""
        results = [steps(u, self.cfl)
                   for steps, u in zip(self.fused_implicit, self.states, strict=True)]
        return results, [bad for *_, bad in results]

    def _arrays_lusgs_attempt(self, parts: list) -> tuple[list, list]:
        """Each part's LU-SGS step in array code from its ``parts`` entry (wave speeds,
        residual, boundary flux): the new states, and the first bad own cell of each."""
        news, bad_cells = [], []
        for d, lusgs, u, layout, (speeds, residual, _) in zip(
                self.discretisations, self.lusgs, self.states, self.layouts, parts,
                strict=True):
            dt = self.cfl * d.geometry.volume / d.spectral_radius(u, speeds)
            news.append(u + lusgs(u, residual, dt, speeds))
            bad = np.flatnonzero(self.backend.to_host(self.gas.invalid(news[-1][:, :layout.n_own])))
            bad_cells.append(int(bad[0]) if len(bad) else None)
        return news, bad_cells

    def _own_squares(self, rates: list) -> np.ndarray:
        """Sums of the squared ``rates`` per variable over the local parts' own cells."""
        squares = np.zeros(self.gas.n_vars)
        for layout, rate in zip(self.layouts, rates, strict=True):
            own = self.backend.to_host(rate[:, :layout.n_own]).astype(np.float64)
            squares += (own ** 2).sum(axis=1)
        return squares

    def _finish(self, squares: np.ndarray, boundary: list, momentum: np.ndarray | None = None,
                bad_cells: list | None = None) -> np.ndarray:
        """Sum over all parts, in one global sum, the bad-cell flags (``bad_cells``: per
        local part; raises :class:`SolverDivergedError` if any), the rates' squares
        (``squares``: local sums over own cells) and the wall markers' momentum fluxes
        (``momentum``: local sums, by default from ``boundary``); count the step, keep the
        boundary fluxes (per local part) and the forces; the RMS of the rates."""
        dim, n_parts = self.gas.dim, self.n_parts
        if momentum is None:
            momentum = np.zeros((len(self.wall_markers), dim))
            for flux, walls in zip(boundary, self._wall_faces, strict=True):
                for k, positions in enumerate(walls.values()):
                    momentum[k] += self.backend.to_host(
                        flux[1:-1, positions].sum(axis=1, dtype=np.float64))
        total = self.transport.sum(np.concatenate([self._bad_flags(bad_cells), squares,
                                                   np.ravel(momentum)]))
        self._raise_if_bad(total[:n_parts])
        squares, momentum = total[n_parts:n_parts + len(squares)], total[n_parts + len(squares):]
        self.iteration += 1
        self._boundary_flux = boundary
        self._forces = forces_from_momentum(
            dict(zip(self.wall_markers, momentum.reshape(-1, dim), strict=True)),
            self._wall_normal_area, self.gas, self.reference_area)
        norms = np.sqrt(squares / self.n_cells)
        if self.first_residual is None:
            self.first_residual = float(norms[0])
        return norms

    def _gather_walls(self) -> dict[str, np.ndarray] | None:
        """Per wall marker, a row per face of every part (on the root; None elsewhere),
        in the mesh file's facet order: facet, face centre, pressure coefficient, and in
        2-D the face's two nodes (file numbers) and their coordinates."""
        dim, local = self.gas.dim, {}
        for name in self.wall_markers:
            rows = [np.zeros((0, 2 + dim + (2 + 2 * dim) * (dim == 2)))]
            for layout, part, flux, walls in zip(self.layouts, self.parts,
                                                 self._boundary_flux, self._wall_faces,
                                                 strict=True):
                geometry = layout.geometry
                if name not in geometry.markers:
                    continue
                centre, cp = surface_pressure(self.backend.to_host(flux), geometry, self.gas,
                                              name)
                own = self.backend.to_host(walls[name])
                within = own - (geometry.markers[name][0] - geometry.n_interior)
                columns = [layout.facets[own], centre[:, within].T, cp[within]]
                if dim == 2:
                    nodes = geometry.boundary_nodes[own][:, :2]
                    columns += [part.mesh.point_ids[nodes],
                                part.mesh.mesh.points[nodes, :2].reshape(len(own), 4)]
                rows.append(np.column_stack(columns))
            local[name] = np.concatenate(rows)
        gathered = self.transport.gather(local)
        if gathered is None:
            return None
        walls = {}
        for name in self.wall_markers:
            rows = np.concatenate([process[name] for process in gathered])
            walls[name] = rows[np.argsort(rows[:, 0], kind="stable")]
        return walls

    @property
    def has_loads(self) -> bool:
        """True once a step has been taken (wall forces and Cp are then known)."""
        return self._forces is not None

    def wall_forces(self) -> dict[str, Forces]:
        """Forces on the wall markers at the start of the last step (all parts)."""
        return self._forces

    def surface_pressure(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """Face centres ``(dim, m)`` and pressure coefficients of one wall marker, at the
        start of the step before the last :meth:`conserved` (which gathers them; on the
        root only), in the mesh file's facet order."""
        rows = self._wall_rows(marker)
        return rows[:, 1:1 + self.gas.dim].T, rows[:, 1 + self.gas.dim]

    def wall_edges(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """2-D: the nodes ``(m, 2)`` of the faces of :meth:`surface_pressure` (indices into
        the points returned second)."""
        node_columns = slice(4, 6)  # after facet, centre (2) and cp
        rows = self._wall_rows(marker)
        ids, nodes = np.unique(rows[:, node_columns].astype(np.int64), return_inverse=True)
        points = np.zeros((len(ids), 2))
        points[nodes.ravel()] = rows[:, 6:10].reshape(-1, 2)
        return nodes.reshape(-1, 2), points

    def _wall_rows(self, marker: str) -> np.ndarray:
        self.conserved()
        if self._gathered[2] is None:
            raise RuntimeError("the walls are gathered on the root process only")
        return self._gathered[2][marker]
