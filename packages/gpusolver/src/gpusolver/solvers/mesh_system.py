"""What the mesh-based Systems (finite volume, DG) share: reading the mesh or this rank's
part, the history and the wall loads, checkpoints of the conserved state, and the outputs.

A mesh-based System holds a *solver*: on the whole mesh, or, under ``mpiexec`` with
several ranks, on this rank's part of a partitioned plan
(:class:`gpusolver.solvers.parts.Parts`; its ``mesh`` is None). Both offer the same
members (``step``, ``conserved``, ``set_conserved``, ``wall_forces`` ...), which this
module alone reads.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from gpusolver import plan_for
from gpusolver.backends import cupy_available, start_backend
from gpusolver.errors import ConfigError
from gpusolver.io.case import Case, keys_unread, parse_case
from gpusolver.io.checkpoint import Identity, Snapshot, digest_of
from gpusolver.io.output import (
    write_forces,
    write_partitioned_solution,
    write_skin_friction,
    write_solution,
    write_surface_pressure,
)
from gpusolver.monitors.history import history_columns
from gpusolver.parallel import make_transport, mpi_world, use_local_gpu
from gpusolver.physics.boundary import resolve_markers
from gpusolver.solvers.base import StepReport, System
from gpusolver.solvers.parts import Parts
from meshorder import Mesh, Topology, read_mesh
from meshorder.errors import MeshorderError
from meshorder.part_mesh import part_mesh
from meshorder.part_refine import refine_part
from meshorder.partition import partition_cells
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.plan import Plan, PlanPart, read_plan_part
from meshorder.refine import refine
from meshorder.surface import body_surface

#: The prefix of the steady-state controls' arrays in a checkpoint.
CONTROL = "control_"


class MeshSystem(System):
    """A System of a mesh-based solver (see the module docstring).

    Subclasses build their solver (:meth:`on_whole_mesh`, :meth:`on_part`) and may add
    outputs; the rest is here.
    """

    #: The method's case-file schema (:func:`gpusolver.io.case.mesh_schema`).
    schema: dict

    def __init__(self, case: Case, solver: Any):
        self.case, self.solver = case, solver

    # ---------------------------------------------------------------- the case
    @classmethod
    def parse_case(cls, data: dict, path: Path) -> Case:
        """:func:`gpusolver.io.case.parse_case` with the method's :attr:`schema`."""
        return parse_case(data, path, cls.schema)

    @classmethod
    def from_case(cls, case: Case) -> MeshSystem:
        """Read the mesh (and plan), check the markers, and set up the solver.

        Under ``mpiexec`` with several ranks, one part per rank: with the case's plan
        (which must have that many parts) each rank reads only its part of the plan and
        never the mesh, and refines that part alone as ``[mesh] refine`` says
        (:func:`meshorder.part_refine.refine_part`); without a plan, each rank reads the
        mesh, refines it and makes one. In one process, ``[mesh] refine`` with a plan
        refines the plan's mesh as one part in the same way (:func:`_one_part`).
        """
        comm = mpi_world()
        if comm is not None:
            return cls(*cls._on_ranks(case, comm))
        if case.mesh_refine and case.plan_file:  # one process refines the plan's one part
            cls.check_ranks(case)
            part = _refined(case, _one_part(case))
            case = _with_markers(case, part.boundary_markers)
            return cls(case, cls.on_part(case, part, _backend_of(case), None))
        mesh, plan = _read_with_plan(case)
        if plan is not None:
            case = _with_markers(case, list(plan.boundary_ranges()))
        else:
            topology = Topology(mesh)  # the markers checked before the plan is made
            present = np.unique(topology.face_marker[topology.face_marker >= 0])
            case = _with_markers(case, [topology.marker_names[int(m)] for m in present])
            plan = make_plan(mesh, cls.plan_options(case), topology=topology)
        return cls(case, cls.on_whole_mesh(case, mesh, plan))

    @classmethod
    def _on_ranks(cls, case: Case, comm) -> tuple[Case, Any]:
        """The case with the part's markers resolved, and the solver of this rank's part."""
        cls.check_ranks(case)
        if case.plan_file:
            part = read_plan_part(case.plan_file, comm.rank)
            if part.n_parts != comm.size:
                raise ConfigError(f"the plan has {part.n_parts} part(s) but the run has "
                                  f"{comm.size} ranks; make it with `meshorder reorder "
                                  f"--partitions {comm.size}`")
            part = _refined(case, part)
        else:
            part = make_plan(_read(case), PlanOptions(partitions=comm.size)).part(comm.rank)
        case = _with_markers(case, part.boundary_markers)
        run = case.run
        backend = _backend_of(case)
        if run["transport"] == "nccl" and backend != "cupy":
            raise ConfigError(f"{case.path}: transport = 'nccl' exchanges GPU states; set "
                              "backend = 'cupy' (on a machine with GPUs) or transport = "
                              "'mpi-host'")
        if backend == "cupy":
            use_local_gpu(comm)
        return case, cls.on_part(case, part, backend, make_transport(run["transport"], comm))

    def case_notes(self) -> list[str]:
        """The keys the case sets that this method does not read in its configuration."""
        return keys_unread(self.case)

    @classmethod
    def plan_options(cls, case: Case) -> PlanOptions:
        """What the plan made at start holds, for a case that names none."""
        return PlanOptions()

    @classmethod
    @abstractmethod
    def on_whole_mesh(cls, case: Case, mesh: Mesh, plan: Plan) -> Any:
        """The solver of ``case`` on the whole mesh in ``plan``'s layout."""

    @classmethod
    @abstractmethod
    def on_part(cls, case: Case, part: PlanPart, backend: str, transport) -> Parts:
        """The solver of ``case`` on this rank's ``part``, exchanging through ``transport``."""

    @classmethod
    def check_ranks(cls, case: Case) -> None:
        """Refuse what runs on one rank only (before anything is read)."""

    def identity(self) -> Identity:
        """The mesh's content digest, and that of the physics and boundary conditions."""
        boundaries = {marker: [spec.condition.name, spec.params]
                      for marker, spec in self.case.boundaries.items()}
        scale = {} if self.case.mesh_scale == 1 else {"mesh_scale": self.case.mesh_scale}
        return Identity(self.method, self.solver.mesh_digest,
                        digest_of({"physics": self.case.physics, "boundaries": boundaries,
                                   **scale}))

    # ---------------------------------------------------------------- stepping
    @property
    def iteration(self) -> int:
        """Steps taken (across restarts)."""
        return self.solver.iteration

    def advance(self, steps: int) -> StepReport:
        """``steps`` steps of the solver; its residual norms and the walls' CL, CD."""
        residuals = self.take_steps(steps)
        solver = self.solver
        total = solver.wall_forces()["total"]
        loads = {"cl": total.lift, "cd": total.drag}
        models = list(solver.model_residuals().values())
        row = ([solver.iteration, f"{solver.time:.10g}"]
               + [f"{r:.8e}" for r in [*residuals, *models]]
               + [f"{total.lift:.10g}", f"{total.drag:.10g}", *solver.monitors().values()])
        return StepReport(solver.iteration, solver.time, residuals,
                          float(residuals[0] / (solver.first_residual or residuals[0])),
                          loads, row, solver.take_notes())

    def take_steps(self, steps: int) -> np.ndarray:
        """``steps`` steps; the residual norms of the last."""
        for _ in range(steps):
            residuals = self.solver.step()
        return residuals

    def progress_label(self) -> str:
        """Method, backend and precision."""
        return f"{self.method} {self.solver.backend.name} {self.case.run['precision']}"

    def progress_values(self, report: StepReport) -> dict[str, str]:
        """The residual's fall (log10) and CL."""
        return {"res": f"{np.log10(max(report.fall, 1e-300)):.2f}",
                "cl": f"{report.loads['cl']:.4f}"}

    def summary(self, report: StepReport | None) -> str:
        """Iterations, and CL, CD once a step was taken."""
        loads = ""
        if report is not None:
            loads = f"; CL {report.loads['cl']:.5f}, CD {report.loads['cd']:.5f}"
        return f"{self.iteration} iterations{loads}"

    # ---------------------------------------------------------------- several ranks
    @property
    def is_root(self) -> bool:
        """True in the process that writes (every process on one rank)."""
        return self.solver.is_root

    def any_rank(self, flag: bool) -> bool:
        """``flag`` summed over the ranks (one 8-byte sum)."""
        return bool(self.solver.transport.sum(np.array([float(flag)]))[0])

    # ---------------------------------------------------------------- log
    def log_columns(self) -> list[str]:
        """``history.csv``: iteration, time, wall_s, a residual per equation (and per
        model equation), cl, cd and the solver's monitors."""
        return history_columns(self.solver.gas.n_vars, tuple(self.solver.model_residuals()),
                               tuple(self.solver.monitors()))

    @property
    def log_position(self) -> float:
        """The iteration (history.csv's first column)."""
        return self.solver.iteration

    # ---------------------------------------------------------------- checkpoints
    def snapshot(self) -> Snapshot:
        """The conserved state in the file's cell order, its precision, iteration, time,
        CFL number, circulation, the first residual and the steady-state controls
        (``solver.controls()``: their arrays named ``control_*``)."""
        solver = self.solver
        # every rank: the state gathered onto the root (the others' arrays are None)
        conserved = solver.conserved(root_only=True)
        numbers, arrays = solver.controls(root_only=True)
        return Snapshot({"conserved": conserved, **solver.model_state(root_only=True),
                         **{CONTROL + name: array for name, array in arrays.items()}}, {
            "iteration": solver.iteration, "time": solver.time, "dtype": solver.dtype.name,
            "circulation": solver.circulation, "cfl": solver.cfl, "case_cfl": self.case_cfl,
            "first_residual": solver.first_residual, "controls": numbers})

    @property
    def case_cfl(self) -> float:
        """``[run] cfl`` of the case: the first CFL number of the ramp."""
        return float(self.case.run["cfl"])

    def restore(self, snapshot: Snapshot) -> list[str]:
        """The state, counters, ramps and steady-state controls of ``snapshot`` (same
        precision and shape).

        The case's run settings rule: when its ``cfl`` differs from the one of the run
        that wrote the checkpoint, the CFL number and its ramp's back-off start again
        from the case's (the advice a diverged run gives is to lower it), and the line
        returned says so.
        """
        solver, meta = self.solver, snapshot.meta
        conserved = snapshot.arrays["conserved"]
        # (n_vars, n_cells); DG: (n_vars, n_modes, n_cells)
        expected = (*solver.states[0].shape[:-1], solver.n_cells)
        if meta["dtype"] != solver.dtype.name or conserved.shape != expected:
            raise ValueError(f"state is {conserved.dtype} {conserved.shape}, the run needs "
                             f"{solver.dtype.name} {expected}")
        solver.set_conserved(conserved)
        solver.set_model_state(snapshot.arrays)
        solver.iteration = int(meta["iteration"])
        solver.time = float(meta["time"])
        solver.circulation = float(meta["circulation"])
        solver.first_residual = meta["first_residual"]
        written = meta.get("case_cfl")
        same_ramp = written is None or float(written) == self.case_cfl
        solver.set_controls(meta.get("controls", {}),
                            {name.removeprefix(CONTROL): array
                             for name, array in snapshot.arrays.items()
                             if name.startswith(CONTROL)}, ramp=same_ramp)
        if same_ramp:
            solver.cfl = float(meta["cfl"])
            return []
        solver.cfl = self.case_cfl
        return [f"restart: [run] cfl = {self.case_cfl:g} replaces the checkpoint's run "
                f"(cfl = {float(written):g}, at {float(meta['cfl']):g} when it stopped)"]

    def diagnose(self) -> str | None:
        """Where the residual of a run that did not converge sits; the solution file
        shows it (every rank calls it)."""
        return self.solver.diagnose()

    # ---------------------------------------------------------------- outputs
    def write_outputs(self, out: Path) -> list[Path]:
        """``solution.vtu`` (``.pvtu`` and a piece per part on several ranks),
        ``forces.csv`` and ``cp_<marker>.csv``, once a step was taken in this process."""
        solver = self.solver
        if not solver.has_loads:
            return []
        split = solver.force_split()  # global sums: every rank, before the root writes
        compression = self.case.vtu_compression
        files = []
        if solver.mesh is None:  # parts: each process its pieces, the root the walls
            files += write_partitioned_solution(out / "solution.pvtu", solver, compression)
            solver.gather_walls()
        elif self.is_root:
            write_solution(out / "solution.vtu", solver, compression)
            files.append(out / "solution.vtu")
        if self.is_root:
            write_forces(out / "forces.csv", solver, split)
            files += [out / "forces.csv", *write_surface_pressure(out, solver),
                      *write_skin_friction(out, solver)]
        return files


def _read_with_plan(case: Case, as_read: bool = False) -> tuple[Mesh, Plan | None]:
    """The case's mesh (``as_read``: as the file holds it, neither refined nor scaled) and
    its plan checked against it (None: the case names none), the plan read and the backend
    started beside the mesh's reading (threads: both wait on files and the GPU driver, not
    on Python)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        pool.submit(start_backend, case.run["backend"])
        loading = pool.submit(Plan.load, str(case.plan_file)) if case.plan_file else None
        mesh = read_mesh(case.mesh_file) if as_read else _read(case)
        return mesh, None if loading is None else plan_for(mesh, loading.result())


def _one_part(case: Case) -> PlanPart:
    """The case's mesh as the one part of its plan (in the plan's cell order), for one
    process to refine as each rank refines its part: the same multigrid levels (the
    refinement's generations) as on several ranks, and no fine mesh sorted whole."""
    mesh, plan = _read_with_plan(case, as_read=True)
    topology = Topology(mesh)
    split = partition_cells(topology.cell_graph, 1, plan.cell_order)
    return PlanPart(plan.mesh_digest, plan.marker_names, list(plan.boundary_ranges()),
                    split.offsets, split.send, part_mesh(mesh, topology, split.order, split, 0))


def _refined(case: Case, part: PlanPart) -> PlanPart:
    """``part`` refined as ``[mesh] refine`` says and scaled as ``scale`` does."""
    try:
        part = refine_part(part, case.mesh_refine, case.mesh_surface)
    except MeshorderError as error:
        raise ConfigError(f"{case.path}: [mesh] refine: {error}") from None
    return dataclasses.replace(part, mesh=dataclasses.replace(
        part.mesh, mesh=part.mesh.mesh.scaled(case.mesh_scale)))


def _backend_of(case: Case) -> str:
    """The case's backend, ``auto`` resolved (CuPy where a GPU answers)."""
    backend = case.run["backend"]
    return "cupy" if backend == "auto" and cupy_available() else backend


def _read(case: Case) -> Mesh:
    """The case's mesh, scaled and refined as its ``[mesh]`` section says."""
    with body_surface(case.mesh_surface if case.mesh_refine else None) as place:
        try:
            fine = refine(read_mesh(case.mesh_file), case.mesh_refine, place)
        except MeshorderError as error:
            raise ConfigError(f"{case.path}: [mesh] refine: {error}") from None
    return fine.scaled(case.mesh_scale)


def _with_markers(case: Case, markers: list[str]) -> Case:
    """``case`` with a condition for each of the mesh's ``markers``
    (:func:`~gpusolver.physics.boundary.resolve_markers`: patterns expanded)."""
    return dataclasses.replace(case, boundaries=resolve_markers(markers, case.boundaries))
