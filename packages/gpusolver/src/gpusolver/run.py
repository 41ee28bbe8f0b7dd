"""Run a case end to end: read, plan, solve with progress, write outputs and checkpoints."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from gpusolver import load_plan_for
from gpusolver.errors import ConfigError
from gpusolver.io.case import Case
from gpusolver.io.checkpoint import load_checkpoint, save_checkpoint
from gpusolver.io.output import write_forces, write_solution, write_surface_pressure
from gpusolver.monitors.history import History
from gpusolver.solvers.fv.discretisation import check_markers
from gpusolver.solvers.fv.solver import Solver
from meshorder import Topology, read_mesh
from meshorder.atomic import check_writable


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
        The run was stopped by Ctrl-C (outputs and checkpoint are those of the last
        finished step).
    """

    solver: Solver
    files: list[Path]
    converged: bool | None = None
    interrupted: bool = False


def build_solver(case: Case) -> Solver:
    """Read the mesh (and plan), check the markers, and set up the solver."""
    mesh = read_mesh(case.mesh_file)
    topology = Topology(mesh)
    present = np.unique(topology.face_marker[topology.face_marker >= 0])
    check_markers([topology.marker_names[int(m)] for m in present], case.boundaries)
    plan = load_plan_for(mesh, str(case.plan_file)) if case.plan_file else None
    solver = Solver(mesh, case.gas_for(mesh.dim), case.boundaries, scheme=case.scheme,
                    stepping=case.stepping, plan=plan, strategy=case.run["strategy"],
                    backend=case.run["backend"], precision=case.run["precision"],
                    reference_area=case.reference_area, topology=topology,
                    kernels=case.run["kernels"])
    if case.restart:
        load_checkpoint(case.restart, solver)
    return solver


def run_case(case: Case, progress: bool = True) -> RunResult:
    """Run ``case``: up to ``iterations`` steps from free stream (or from its restart file).

    Stops early once the RMS density residual has fallen by ``residual_reduction`` from
    that of the first iteration (of the first run, across restarts). Writes
    ``history.csv`` (appended to on restart), ``checkpoint.npz`` every
    ``checkpoint_every`` steps and at the end, and at the end ``forces.csv``,
    ``cp_<marker>.csv`` per wall marker and ``solution.vtu``. Ctrl-C ends the run after
    the step in progress with the same outputs, so a restart continues the history
    without repeating or dropping rows.

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
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.npz"
    history = History(out / "history.csv", solver.gas.n_vars, append=case.restart is not None,
                      restart_iteration=solver.iteration)
    target = case.run["residual_reduction"]
    converged = None if target is None else False
    interrupted = False
    bar = tqdm(range(case.run["iterations"]), desc=f"{solver.backend.name} "
               f"{case.run['precision']} {case.run['strategy']}", unit="it", disable=not progress)
    start = time.perf_counter()
    try:
        for _ in bar:
            try:
                residuals = solver.step()
            except KeyboardInterrupt:
                interrupted = True  # the state is that of the last finished step
                break
            history.record(solver, residuals, time.perf_counter() - start)
            fall = residuals[0] / solver.first_residual
            bar.set_postfix(res=f"{np.log10(max(fall, 1e-300)):.2f}",
                            cl=f"{solver.wall_forces()['total'].lift:.4f}", refresh=False)
            if target is not None and fall <= target:
                converged = True
                break
            if solver.iteration % case.checkpoint_every == 0:
                save_checkpoint(checkpoint, solver)
    finally:
        history.close()
        bar.close()
    save_checkpoint(checkpoint, solver)
    files = [out / "history.csv", checkpoint]
    if solver.has_loads:  # at least one step taken in this process
        write_forces(out / "forces.csv", solver)
        cp_files = write_surface_pressure(out, solver)
        write_solution(out / "solution.vtu", solver)
        files += [out / "forces.csv", *cp_files, out / "solution.vtu"]
    return RunResult(solver, files, converged, interrupted)
