"""Run a case end to end: read, plan, solve with progress, write outputs and checkpoints."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from gpusolver import load_plan_for
from gpusolver.backends import cupy_available
from gpusolver.errors import ConfigError
from gpusolver.integrators.explicit import TABLEAUX
from gpusolver.io.case import Case
from gpusolver.io.checkpoint import load_checkpoint, save_checkpoint
from gpusolver.io.output import (
    write_forces,
    write_high_order_solution,
    write_partitioned_solution,
    write_solution,
    write_surface_pressure,
)
from gpusolver.monitors.history import History
from gpusolver.parallel import make_transport, mpi_world, use_local_gpu
from gpusolver.solvers.dg.partitioned import PartitionedDG
from gpusolver.solvers.dg.solver import DGSolver
from gpusolver.solvers.fv.discretisation import check_markers
from gpusolver.solvers.fv.partitioned import PartitionedSolver
from gpusolver.solvers.fv.solver import Solver
from gpusolver.solvers.parts import Parts
from meshorder import Topology, read_mesh
from meshorder.atomic import check_writable
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.plan import read_plan_part
from meshorder.termination import StopRequests


@dataclass(frozen=True)
class RunResult:
    """What a finished run produced.

    Attributes
    ----------
    solver : Solver
        In its final state.
    files : list of pathlib.Path
        Every file written.
    converged : bool or None
        Whether the residual fell by the case's ``residual_reduction`` (None when the
        case sets none).
    interrupted : bool
        The run was stopped by Ctrl-C or SIGTERM (outputs and checkpoint are those of the
        last finished step).
    """

    solver: Solver
    files: list[Path]
    converged: bool | None = None
    interrupted: bool = False


def build_solver(case: Case) -> Solver | PartitionedSolver | DGSolver | PartitionedDG:
    """Read the mesh (and plan), check the markers, and set up the solver.

    Under ``mpiexec`` with several ranks: the partitioned solver (finite volumes or DG),
    one part per rank; with the case's plan (which must have that many parts), each rank
    reads only its part of the plan and never the mesh; without a plan, each rank reads
    the mesh and makes one.
    """
    comm = mpi_world()
    if comm is not None:
        solver = _partitioned_solver(case, comm)
    else:
        mesh = read_mesh(case.mesh_file)
        topology = Topology(mesh)
        present = np.unique(topology.face_marker[topology.face_marker >= 0])
        check_markers([topology.marker_names[int(m)] for m in present], case.boundaries)
        plan = load_plan_for(mesh, str(case.plan_file)) if case.plan_file else None
        if case.method == "dg":
            solver = DGSolver(mesh, case.gas_for(mesh.dim), case.boundaries, plan=plan,
                              topology=topology, backend=case.run["backend"],
                              **_dg_options(case))
        else:
            solver = Solver(mesh, case.gas_for(mesh.dim), case.boundaries, scheme=case.scheme,
                            stepping=case.stepping, plan=plan, strategy=case.run["strategy"],
                            backend=case.run["backend"], precision=case.run["precision"],
                            reference_area=case.reference_area, topology=topology,
                            kernels=case.run["kernels"])
    if case.restart:
        load_checkpoint(case.restart, solver)
    return solver


def _dg_options(case: Case) -> dict:
    """The DG solver's options from ``case``, after refusing what it does not run yet."""
    run, stepping = case.run, case.stepping
    refused = [(stepping.integrator not in TABLEAUX,
                f"explicit steps ({', '.join(TABLEAUX)})"),
               (run["precision"] != "fp64", "fp64")]
    for refuse, what in refused:
        if refuse:
            raise ConfigError(f"{case.path}: [solver] method = 'dg' runs {what} so far")
    return {"degree": case.degree, "flux": case.scheme.flux, "integrator": stepping.integrator,
            "cfl": stepping.cfl, "reference_area": case.reference_area,
            "local_time_step": stepping.local_time_step,
            "shock_capturing": case.shock_capturing}


def _partitioned_solver(case: Case, comm) -> PartitionedSolver | PartitionedDG:
    stepping = case.stepping
    if case.method != "dg" and (not stepping.local_time_step
                                or stepping.integrator not in (*TABLEAUX, "lusgs")
                                or stepping.multigrid):
        raise ConfigError(f"runs on several ranks take explicit or LU-SGS local steps "
                          f"without multigrid for now ({', '.join(TABLEAUX)} or lusgs, with "
                          f"local_time_step = true)")
    if case.plan_file:
        part = read_plan_part(case.plan_file, comm.rank)
        if part.n_parts != comm.size:
            raise ConfigError(f"the plan has {part.n_parts} part(s) but the run has "
                              f"{comm.size} ranks; make it with `meshorder reorder "
                              f"--partitions {comm.size}`")
    else:
        mesh = read_mesh(case.mesh_file)
        part = make_plan(mesh, PlanOptions(partitions=comm.size)).part(comm.rank)
    check_markers(part.boundary_markers, case.boundaries)
    run = case.run
    backend = "cupy" if run["backend"] == "auto" and cupy_available() else run["backend"]
    if run["transport"] == "nccl" and backend != "cupy":
        raise ConfigError(f"{case.path}: transport = 'nccl' exchanges GPU states; set "
                          "backend = 'cupy' (on a machine with GPUs) or transport = 'mpi-host'")
    if backend == "cupy":
        use_local_gpu(comm)
    transport = make_transport(run["transport"], comm)
    if case.method == "dg":
        return PartitionedDG([part], case.gas_for(part.mesh.mesh.dim), case.boundaries,
                             transport=transport, backend=backend, **_dg_options(case))
    return PartitionedSolver(
        [part], case.gas_for(part.mesh.mesh.dim), case.boundaries, scheme=case.scheme,
        integrator=stepping.integrator, cfl=stepping.cfl, cfl_max=stepping.cfl_max,
        sweeps=stepping.sweeps, backend=backend, precision=run["precision"],
        reference_area=case.reference_area, transport=transport, kernels=run["kernels"],
        overlap=run["overlap"])


def _take_steps(solver: Solver | PartitionedSolver | DGSolver | PartitionedDG, steps: int
                ) -> np.ndarray:
    """``steps`` steps; the residual norms of the last. The DG solver takes them as one
    batch (:meth:`DGSolver.advance`: the state is checked once, after the last)."""
    if isinstance(solver, DGSolver):
        return solver.advance(steps)
    for _ in range(steps):
        residuals = solver.step()
    return residuals


def _on_any_rank(solver, flag: bool) -> bool:
    """Whether ``flag`` is set on any rank; every rank of a run on parts must call it."""
    if isinstance(solver, Parts):
        return bool(solver.transport.sum(np.array([float(flag)]))[0])
    return flag


def run_case(case: Case, progress: bool = True) -> RunResult:
    """Run ``case``: up to ``iterations`` steps from free stream (or from its restart file).

    Stops early once the RMS density residual has fallen by ``residual_reduction`` from
    that of the first iteration (of the first run, across restarts). Writes
    ``history.csv`` (appended to on restart), ``checkpoint.npz`` every
    ``checkpoint_every`` steps and at the end, and at the end ``forces.csv``,
    ``cp_<marker>.csv`` per wall marker and ``solution.vtu``. Ctrl-C or SIGTERM ends the
    run after the steps in progress (on every rank at the same step) with the same
    outputs, so a restart continues the history without repeating or dropping rows; a
    second Ctrl-C stops at once, without them.

    Raises
    ------
    SolverDivergedError
        At the first non-finite or non-physical state; the last checkpoint stays.
    """
    out = case.output_directory
    try:
        check_writable(out, folder=True)
    except OSError as error:
        raise ConfigError(f"output directory {out}: {error.strerror}") from None
    solver = build_solver(case)
    root = solver.is_root  # under MPI the root rank alone writes
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.npz"
    history = (History(out / "history.csv", solver.gas.n_vars, append=case.restart is not None,
                       restart_iteration=solver.iteration) if root else None)
    target = case.run["residual_reduction"]
    converged = None if target is None else False
    interrupted = False
    bar = tqdm(total=case.run["iterations"], desc=f"{solver.backend.name} "
               f"{case.run['precision']} {case.run['strategy']}", unit="it",
               disable=not (progress and root))
    start = time.perf_counter()

    def write_checkpoint() -> None:
        solver.conserved()  # every rank: a global gather under MPI
        if root:
            save_checkpoint(checkpoint, solver)

    with StopRequests() as stop:
        try:
            left = case.run["iterations"]
            while left > 0:
                steps = min(case.history_every, left)
                residuals = _take_steps(solver, steps)
                left -= steps
                bar.update(steps)
                if history is not None:
                    history.record(solver, residuals, time.perf_counter() - start)
                fall = residuals[0] / solver.first_residual
                bar.set_postfix(res=f"{np.log10(max(fall, 1e-300)):.2f}",
                                cl=f"{solver.wall_forces()['total'].lift:.4f}", refresh=False)
                if target is not None and fall <= target:
                    converged = True
                    break
                if _on_any_rank(solver, stop.requested):  # Ctrl-C or SIGTERM: every rank stops here
                    interrupted = True
                    break
                if solver.iteration // case.checkpoint_every > (
                        solver.iteration - steps) // case.checkpoint_every:
                    if history is not None:  # the history covers the checkpoint, even after kill -9
                        history.flush()
                    write_checkpoint()
        finally:
            if history is not None:
                history.close()
            bar.close()
    write_checkpoint()
    files = [out / "history.csv", checkpoint]
    if solver.has_loads:  # at least one step taken in this process
        if isinstance(solver, Parts):  # each process its pieces
            files += write_partitioned_solution(out / "solution.pvtu", solver,
                                                case.vtu_compression)
        elif root:
            write_solution(out / "solution.vtu", solver, case.vtu_compression)
            files.append(out / "solution.vtu")
        if root:
            write_forces(out / "forces.csv", solver)
            files += [out / "forces.csv", *write_surface_pressure(out, solver)]
        if isinstance(solver, DGSolver | PartitionedDG):  # gathered on the root
            files += write_high_order_solution(out / "solution_high_order.vtu", solver,
                                               case.vtu_compression)
    return RunResult(solver, files if root else [], converged, interrupted)
