"""What the solvers on mesh parts share: a step's report summed over all parts, the loads
of the walls, and the state and surface gathered for the outputs.

A solver on parts (:class:`gpusolver.solvers.fv.solver.Solver`,
:class:`gpusolver.solvers.dg.solver.DGSolver`; a whole mesh is their one part) computes
the parts this process holds (every part with the ``loopback`` transport, one under
MPI); each part's :class:`~gpusolver.layout.parts.PartCells` say which of its cells are
its own. Every
global quantity goes through the transport (:mod:`gpusolver.parallel`): one global sum
per step for the bad-cell flags and the residual's squares, and one for the walls'
momentum when the loads are asked for.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusolver.errors import SolverDivergedError
from gpusolver.layout.parts import PartCells
from gpusolver.monitors.forces import (
    Forces,
    forces_from_momentum,
    pressure_force,
    split_forces,
    surface_pressure,
    wall_edges,
)

#: A first step's density residual below this fraction of its largest residual is
#: not the reference of ramps and stops (the density of a uniform start in balance).
BALANCED = 1e-10


def shared(name: str, doc: str) -> property:
    """A property that every local part's discretisation holds alike: read from the
    first, set on all (``discretisations``)."""

    def get(solver):
        return getattr(solver.discretisations[0], name)

    def set_(solver, value) -> None:
        for d in solver.discretisations:
            setattr(d, name, value)

    return property(get, set_, doc=doc)


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


def halo_sends(parts: list) -> dict[tuple[int, int], np.ndarray]:
    """The halo lists of the local ``parts`` (:class:`meshorder.plan.PlanPart`) in one
    dict: a coarse plan's parts each hold all of them, a part refined on its rank
    (:func:`meshorder.part_refine.refine_part`) only its own."""
    return {pair: cells for part in parts for pair, cells in part.send.items()}


class Parts:
    """Mixin of a solver on parts.

    The solver sets ``layouts`` (a :class:`~gpusolver.layout.parts.PartCells` per local
    part), ``parts`` (their :class:`meshorder.plan.PlanPart`), ``local`` (their numbers),
    ``transport``, ``halos``, ``backend``, ``gas``, ``dtype``, ``n_cells``,
    ``wall_markers`` and ``reference_area``, has a ``states`` list (cells on the last
    axis), then calls :meth:`_start_loads`.
    """

    #: Explicit steps in the kernels with the exchange inside (a solver sets them where
    #: it has them; they exchange through their own ``use_transport``).
    fused_steps = None
    #: The whole mesh, where the solver holds it as its one part (outputs read it).
    mesh = None
    #: What a divergence names (then the cell's number in the mesh file), and its advice.
    bad_state = "the solution at cell"
    advice = "lower the CFL number or use order = 1 to start"

    def _start_loads(self) -> None:
        """Set up the walls' faces and the per-step records (after the attributes above)."""
        self.iteration = 0
        #: RMS density residual of the first step (the reference of ``residual_reduction``
        #: and CFL ramps; see :data:`BALANCED`).
        self.first_residual: float | None = None
        #: Per local part and wall marker, the positions among the part's boundary
        #: faces of its own faces of that marker (their momentum fluxes are its loads).
        self._wall_faces = [self._own_wall_faces(layout) for layout in self.layouts]
        #: Per wall marker, the sum of its faces' normal times area over all parts.
        self._wall_normal_area = self._normal_areas()
        self._forces: dict[str, Forces] | None = None
        self._boundary_flux: list = []  # per local part, of the last step
        # the last gathered state: (iteration, array or None, gathered on the root only)
        self._gathered: tuple[int, np.ndarray | None, bool] | None = None
        self._walls: tuple[int, dict | None] | None = None  # (iteration, the root's rows)
        #: Lines for the log: what the steps did to keep going (:meth:`take_notes`).
        self.notes: list[str] = []
        #: Cell fields of :meth:`diagnose` for the solution file (file order, on the root;
        #: empty unless a run was diagnosed), and per local part on its own cells.
        self.diagnostics: dict[str, np.ndarray] = {}
        self._part_diagnostics: list[dict[str, np.ndarray]] = [{} for _ in self.layouts]

    def take_notes(self) -> list[str]:
        """The lines the steps since the last call had for the log (actions they took)."""
        notes, self.notes = self.notes, []
        return notes

    def _own_wall_faces(self, layout: PartCells) -> dict:
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

    def use_transport(self, transport) -> None:
        """Exchange halos and sum through ``transport`` (a factory, as the constructor
        takes) from now on, in the steps in the kernels too (:attr:`fused_steps`, where a
        subclass has them); the parts this process computes stay the same."""
        self.transport = transport(self.halos)
        if self.fused_steps is not None:
            self.fused_steps.use_transport(self.transport)

    @property
    def n_parts(self) -> int:
        """Number of parts (in all processes)."""
        return self.transport.n_parts

    @property
    def is_root(self) -> bool:
        """True in the one process that writes outputs."""
        return self.transport.is_root

    @property
    def mesh_digest(self) -> str:
        """:meth:`meshorder.Mesh.digest` of the whole mesh (checkpoints carry it)."""
        return self.mesh.digest() if self.mesh is not None else self.parts[0].mesh_digest

    def _gather_cells(self, arrays: list, root_only: bool = False) -> np.ndarray | None:
        """Per local part an array whose last axis runs over its local cells -> the own
        cells' values of every part, in the file's cell order, fp64: in every process
        (one global sum: each cell from its one owner) or, ``root_only``, on the root
        alone (None elsewhere; each process sends its own cells only)."""
        if root_only:
            cells = np.concatenate([layout.file_cells[:layout.n_own]
                                    for layout in self.layouts])
            values = np.concatenate(self._own_values(arrays), axis=-1)
            return self.transport.gather_cells(cells, values, self.n_cells)
        out = None
        for layout, own in zip(self.layouts, self._own_values(arrays), strict=True):
            if out is None:
                out = np.zeros((*own.shape[:-1], self.n_cells))
            out[..., layout.file_cells[:layout.n_own]] = own
        return self.transport.sum(out)

    def _own_values(self, arrays: list) -> list[np.ndarray]:
        """Per local part, the own cells' values of its array of ``arrays`` (whose last
        axis runs over its local cells), on the host in fp64."""
        return [self._own(layout, array)
                for layout, array in zip(self.layouts, arrays, strict=True)]

    def _own(self, layout: PartCells, array) -> np.ndarray:
        """The own cells' values of a part's ``array`` (its local cells on the last axis),
        on the host in fp64."""
        return self.backend.to_host(array[..., :layout.n_own]).astype(np.float64, copy=False)

    def own_cells(self) -> list[np.ndarray]:
        """Per local part, the numbers of its own cells in the part's mesh, in the order
        of :meth:`own_fields`."""
        return [layout.mesh_cells[:layout.n_own] for layout in self.layouts]

    def own_fields(self) -> list[dict[str, np.ndarray]]:
        """Per local part, the cell fields of the solution file on its own cells (in the
        order of :meth:`own_cells`): the primitive state ``w``, the model's fields
        (:meth:`model_fields`) and those of :meth:`diagnose`, taken where the part is (no
        global gather)."""
        states, models = self._field_arrays()
        return [{"w": self.gas.to_primitive(self._own(layout, state))}
                | {name: self._own(layout, array) for name, array in model.items()}
                | diagnostics
                for layout, state, model, diagnostics in zip(
                    self.layouts, states, models, self._part_diagnostics, strict=True)]

    def _field_arrays(self) -> tuple[list, list[dict]]:
        """Per local part, the array of :meth:`primitive`'s conserved state (cells on its
        last axis) and the arrays of :meth:`model_fields` by name."""
        raise NotImplementedError

    def conserved(self, root_only: bool = False) -> np.ndarray | None:
        """Conserved state of every cell (cells on the last axis), in the file's cell
        order: in every process, or ``root_only`` on the root alone (None elsewhere).

        Gathered from all parts once per iteration (a global sum; root only: a gather of
        each part's own cells): under MPI every rank calls it at the same point.
        """
        cached = self._gathered
        # one process holding the whole mesh gathers the same either way
        if cached is not None and cached[0] == self.iteration and (
                root_only or not cached[2] or self.mesh is not None):
            return cached[1]
        out = self._gather_cells(self.states, root_only)
        self._gathered = (self.iteration, None if out is None else out.astype(self.dtype),
                          root_only)
        return self._gathered[1]

    def gather_walls(self) -> None:
        """The walls' faces of every part with their pressure coefficients of the last
        step onto the root (for :meth:`surface_pressure`), once per iteration: under MPI
        every rank calls it at the same point, after which the root writes the surface
        files (a whole mesh's outputs read its faces directly)."""
        if self.mesh is not None or not self._boundary_flux:
            return
        if self._walls is None or self._walls[0] != self.iteration:
            self._walls = (self.iteration, self._gather_walls())

    def _own_squares(self, rates: list) -> np.ndarray:
        """Sums of the squared ``rates`` (per local part, ``(n_vars, n_local)``) per
        variable over the local parts' own cells."""
        squares = np.zeros(self.gas.n_vars)
        for layout, rate in zip(self.layouts, rates, strict=True):
            own = self.backend.to_host(rate[:, :layout.n_own]).astype(np.float64)
            squares += (own ** 2).sum(axis=1)
        return squares

    def _bad_flags(self, bad_cells: list | None, extra: int = 0) -> np.ndarray:
        """Per part, the file number + 1 of its first bad cell (``bad_cells``: per local
        part, a local cell or None), 0 where none; then ``extra`` zeros for the caller."""
        flags = np.zeros(self.n_parts + extra)
        for p, layout, bad in zip(self.local, self.layouts, bad_cells or [None] * len(self.local),
                                  strict=True):
            if bad is not None:
                flags[p] = layout.file_cells[bad] + 1
        return flags

    def _raise_if_bad(self, flags: np.ndarray, why: str | None = None,
                      counted: bool = False) -> None:
        """Raise :class:`SolverDivergedError` naming the first part's bad cell of the
        summed ``flags`` (see :meth:`_bad_flags`), if any, and ``why`` it is bad (by
        default: its state is not physical); ``counted``: the step is already counted
        in :attr:`iteration`."""
        if flags.any():
            cell = int(flags[flags > 0][0]) - 1
            why = why or "is non-finite or has non-positive density or pressure"
            iteration = self.iteration + (0 if counted else 1)
            raise SolverDivergedError(
                f"iteration {iteration}: {self.bad_state} {cell}{self._where(cell)} {why}; "
                f"{self.advice}", iteration, cell)

    def _where(self, cell: int) -> str:
        """`` (centroid x, y[, z])`` of a cell of the file, where a local part owns it
        and its geometry has centroids; else nothing."""
        for layout in self.layouts:
            local = np.flatnonzero(layout.file_cells[:layout.n_own] == cell)
            centroid = getattr(layout.geometry, "centroid", None)
            if len(local) and centroid is not None:
                where = ", ".join(f"{x:.4g}" for x in np.asarray(centroid)[:, local[0]])
                return f" (centroid {where})"
        return ""

    def _finish(self, squares: np.ndarray, boundary: list,
                bad_cells: list | None = None) -> np.ndarray:
        """Sum over all parts, in one global sum, the bad-cell flags (``bad_cells``: per
        local part; raises :class:`SolverDivergedError` if any) and the rates' squares
        (``squares``: local sums over own cells); count the step and keep the boundary
        fluxes (per local part) that the loads are summed from when asked
        (:meth:`wall_forces`); the RMS of the rates."""
        local = self._bad_flags(bad_cells, len(squares))
        local[self.transport.n_parts:] = squares
        return self._summed(local, boundary)

    def _summed(self, local: np.ndarray, boundary: list) -> np.ndarray:
        """:meth:`_finish` from the local bad-cell flags and squares in one array."""
        n_parts = self.transport.n_parts
        total = self.transport.sum(local)
        flags = total[:n_parts]
        if flags.any():
            self._raise_if_bad(flags)
        self.iteration += 1
        self._boundary_flux = boundary
        self._forces = None
        norms = np.sqrt(total[n_parts:] / self.n_cells)
        if self.first_residual is None and norms[0] > BALANCED * norms.max():
            # (a uniform start whose density is in balance, as along a flat plate at
            # zero incidence, waits for the first step whose density residual is not)
            self.first_residual = float(norms[0])
        return norms

    def _finish_on_device(self, bad_cells: list, squares: list, boundary: list) -> np.ndarray:
        """:meth:`_finish` from what each local part's step left on the device: its first
        bad own cell (a one-element integer array, the part's number of own cells or more
        if none), its sums of the squared rates per variable over its own cells, and its
        boundary fluxes."""
        to_host = self.backend.to_host
        return self._finish_reported([(to_host(part_squares), int(to_host(first)[0]))
                                      for first, part_squares in zip(bad_cells, squares,
                                                                     strict=True)], boundary)

    def _finish_reported(self, reports: list[tuple[np.ndarray, int]], boundary: list
                         ) -> np.ndarray:
        """:meth:`_finish` from each local part's report on the host: its sums of the
        squared rates per variable over its own cells, and its first bad own cell (its
        number of own cells or more if none)."""
        n_parts = self.transport.n_parts
        local = np.zeros(n_parts + self.gas.n_vars)
        for p, (part_squares, first), layout in zip(self.local, reports, self.layouts,
                                                    strict=True):
            if first < layout.n_own:
                local[p] = layout.file_cells[first] + 1
            local[n_parts:] += part_squares
        return self._summed(local, boundary)

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

    #: No-slip walls whose skin friction is written (``surface_friction``): none here.
    friction_markers: tuple[str, ...] = ()

    def model_fields(self) -> dict[str, np.ndarray]:
        """Cell fields beyond the flow's (:meth:`_field_arrays`'; a turbulence model's
        scalars and ``mu_t / mu_inf``), in the file's cell order (every process calls it:
        a global sum)."""
        models = self._field_arrays()[1]
        return {name: self._gather_cells([fields[name] for fields in models])
                for name in models[0]}

    def model_residuals(self) -> dict[str, float]:
        """The last step's residual norm of each model equation, by name (none here)."""
        return {}

    def diagnose(self) -> str | None:
        """One line (on the root; None elsewhere) on where the residual of a run that did
        not converge sits, and cell fields that show it (:attr:`diagnostics`, and each
        part's in :meth:`own_fields`); none here; every process calls it."""
        return None

    def monitors(self) -> dict[str, str]:
        """The last step's values of the solver's own history columns, formatted, by name
        (none here; every process calls it)."""
        return {}

    def model_state(self, root_only: bool = False) -> dict[str, np.ndarray]:
        """State beyond the conserved variables that a checkpoint keeps (none here; as
        :meth:`conserved`, on the root only where ``root_only``)."""
        return {}

    def set_model_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore :meth:`model_state` from a checkpoint's arrays (nothing here)."""

    def controls(self, root_only: bool = False) -> tuple[dict[str, float],
                                                         dict[str, np.ndarray]]:
        """What a checkpoint keeps beyond the state so that a restart continues as the run
        would have: the steady-state controls' numbers, and cell arrays in the file's cell
        order (none here; every process calls it; ``root_only`` as :meth:`conserved`)."""
        return {}, {}

    def set_controls(self, numbers: dict[str, float], arrays: dict[str, np.ndarray],
                     ramp: bool = True) -> None:
        """Restore :meth:`controls` (``ramp`` False: the CFL ramp's own counters start
        again; nothing here)."""

    @property
    def has_loads(self) -> bool:
        """True once a step has been taken (wall forces and Cp are then known)."""
        return bool(self._boundary_flux)

    def wall_forces(self) -> dict[str, Forces]:
        """Forces on the wall markers at the start of the last step, summed over all
        parts once per step, when first asked: under MPI every rank asks at the same
        point."""
        if self._forces is None:
            momentum = np.zeros((len(self.wall_markers), self.gas.dim))
            for flux, walls in zip(self._boundary_flux, self._wall_faces, strict=True):
                for k, sums in enumerate(_wall_momentum(flux, walls)):
                    momentum[k] += self.backend.to_host(sums)
            momentum = self.transport.sum(momentum)
            self._forces = forces_from_momentum(dict(zip(self.wall_markers, momentum,
                                                         strict=True)),
                                                self._wall_normal_area, self.gas,
                                                self.reference_area)
        return self._forces

    def force_split(self) -> dict[str, tuple[Forces, Forces]]:
        """Per wall marker and in total, the pressure and the friction part of
        :meth:`wall_forces`: each face's momentum flux along its normal is the pressure
        force (as :meth:`surface_pressure` takes it), the rest friction. Every process
        calls it (a global sum)."""
        momentum = np.zeros((len(self.wall_markers), self.gas.dim))
        for flux, walls, layout in zip(self._boundary_flux, self._wall_faces, self.layouts,
                                       strict=True):
            geometry, ni = layout.geometry, layout.geometry.n_interior
            host = self.backend.to_host(flux)[1:-1].astype(np.float64)
            for k, positions in enumerate(walls.values()):
                faces = self.backend.to_host(positions)
                momentum[k] += pressure_force(host[:, faces],
                                              geometry.normal[:, ni + faces]).sum(axis=1)
        momentum = self.transport.sum(momentum)
        pressure = forces_from_momentum(dict(zip(self.wall_markers, momentum, strict=True)),
                                        self._wall_normal_area, self.gas, self.reference_area)
        return split_forces(self.wall_forces(), pressure, self.gas, self.reference_area)

    def surface_pressure(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """Face centres ``(dim, m)`` and pressure coefficients of one wall marker at the
        start of the last step: on a whole mesh in its faces' (plan) order; on parts,
        of the step before the last :meth:`gather_walls` (on the root only), in the mesh
        file's facet order."""
        if self.mesh is not None:
            (layout,) = self.layouts
            flux = self.backend.to_host(self._boundary_flux[0]).astype(np.float64)
            return surface_pressure(flux, layout.geometry, self.gas, marker)
        rows = self._wall_rows(marker)
        return rows[:, 1:1 + self.gas.dim].T, rows[:, 1 + self.gas.dim]

    def wall_edges(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """2-D: the nodes ``(m, 2)`` of the faces of :meth:`surface_pressure`, and the
        points they index."""
        if self.mesh is not None:
            (layout,) = self.layouts
            return wall_edges(layout.geometry, marker), self.mesh.points
        node_columns = slice(4, 6)  # after facet, centre (2) and cp
        rows = self._wall_rows(marker)
        ids, nodes = np.unique(rows[:, node_columns].astype(np.int64), return_inverse=True)
        points = np.zeros((len(ids), 2))
        points[nodes.ravel()] = rows[:, 6:10].reshape(-1, 2)
        return nodes.reshape(-1, 2), points

    def _wall_rows(self, marker: str) -> np.ndarray:
        self.gather_walls()
        if self._walls[1] is None:
            raise RuntimeError("the walls are gathered on the root process only")
        return self._walls[1][marker]


def _wall_momentum(flux, walls: dict) -> list:
    """Per wall marker of one part, the sums of its faces' momentum fluxes (``dim`` values,
    fp64, where ``flux`` is: on the device for GPU parts); ``walls``: the marker's face
    positions in ``flux``."""
    return [flux[1:-1, positions].sum(axis=1, dtype=np.float64) for positions in walls.values()]
