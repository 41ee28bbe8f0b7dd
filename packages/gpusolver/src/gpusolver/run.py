"""Run a case end to end: read, plan, solve with progress, write outputs and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from meshorder import Topology, read_mesh

from . import load_plan_for
from .case import Case
from .fv.discretisation import check_markers
from .fv.solver import Solver
from .output import (
    History,
    load_checkpoint,
    save_checkpoint,
    write_forces,
    write_solution,
    write_surface_pressure,
)


@dataclass(frozen=True)
class RunResult:
    """What a finished run produced.

    Attributes
    ----------
    solver : Solver
        In its final state.
    files : list of pathlib.Path
        Every file written.
    """

    solver: Solver
    files: list[Path]


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
                    reference_area=case.reference_area, topology=topology)
    if case.restart:
        load_checkpoint(case.restart, solver)
    return solver


def run_case(case: Case, progress: bool = True) -> RunResult:
    """Run ``case``: ``iterations`` steps from free stream (or from its restart file).

    Writes ``history.csv`` (appended to on restart), ``checkpoint.npz`` every
    ``checkpoint_every`` steps and at the end, and at the end ``forces.csv``,
    ``cp_<marker>.csv`` per wall marker and ``solution.vtu``.

    Raises
    ------
    SolverDivergedError
        At the first non-finite or non-physical state; the last checkpoint stays.
    """
    solver = build_solver(case)
    out = case.output_directory
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.npz"
    history = History(out / "history.csv", solver.gas.n_vars, append=case.restart is not None)
    first = solver.iteration
    bar = tqdm(range(case.run["iterations"]), desc=f"{solver.backend.name} "
               f"{case.run['precision']} {case.run['strategy']}", unit="it", disable=not progress)
    try:
        for _ in bar:
            residuals = solver.step()
            history.record(solver, residuals)
            bar.set_postfix(res=f"{np.log10(max(residuals[0], 1e-300)):.2f}",
                            cl=f"{solver.wall_forces()['total'].lift:.4f}", refresh=False)
            if (solver.iteration - first) % case.checkpoint_every == 0:
                save_checkpoint(checkpoint, solver)
    finally:
        history.close()
        bar.close()
    save_checkpoint(checkpoint, solver)
    write_forces(out / "forces.csv", solver)
    cp_files = write_surface_pressure(out, solver)
    write_solution(out / "solution.vtu", solver)
    files = [out / "history.csv", checkpoint, out / "forces.csv", *cp_files,
             out / "solution.vtu"]
    return RunResult(solver, files)
