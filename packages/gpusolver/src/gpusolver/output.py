"""Run outputs: residual/force history, forces, surface Cp, VTU solution, checkpoints.

Every file is written through a temporary file and a rename, so an interrupted run
never leaves a half-written output behind.
"""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import meshio
import numpy as np

from meshorder.atomic import atomic_path

from .errors import ConfigError
from .fv.solver import Solver

#: Checkpoint format version.
CHECKPOINT_VERSION = 1


def history_columns(n_vars: int) -> list[str]:
    """Header of ``history.csv``."""
    return (["iteration", "time", "wall_s"] + [f"residual_{i}" for i in range(n_vars)]
            + ["cl", "cd"])


class History:
    """Append-only ``history.csv``: iteration, time, wall seconds since the run started,
    RMS of dU/dt per variable, CL, CD."""

    def __init__(self, path: Path, n_vars: int, append: bool):
        self.path = path
        exists = append and path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "a" if exists else "w", newline="")
        self.writer = csv.writer(self.file)
        if not exists:
            self.writer.writerow(history_columns(n_vars))

    def record(self, solver: Solver, residuals: np.ndarray, wall_s: float) -> None:
        """One row for the step just taken, ``wall_s`` seconds after the run started."""
        total = solver.wall_forces()["total"]
        self.writer.writerow([solver.iteration, f"{solver.time:.10g}", f"{wall_s:.4f}"]
                             + [f"{r:.8e}" for r in residuals]
                             + [f"{total.lift:.10g}", f"{total.drag:.10g}"])

    def close(self) -> None:
        """Flush and close the file."""
        self.file.close()


def write_forces(path: Path, solver: Solver) -> None:
    """``forces.csv``: force vector, CL and CD per wall marker and in total."""
    dim = solver.gas.dim
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["marker"] + [f"f{axis}" for axis in "xyz"[:dim]] + ["cl", "cd"])
        for name, forces in solver.wall_forces().items():
            writer.writerow([name] + [f"{v:.10g}" for v in forces.force]
                            + [f"{forces.lift:.10g}", f"{forces.drag:.10g}"])


def write_surface_pressure(directory: Path, solver: Solver) -> list[Path]:
    """``cp_<marker>.csv`` per wall marker: face centre and pressure coefficient."""
    paths = []
    for name in solver.discretisation.wall_markers:
        centre, cp = solver.surface_pressure(name)
        path = directory / f"cp_{name}.csv"
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow([*list("xyz"[:solver.gas.dim]), "cp"])
            writer.writerows(np.column_stack([centre.T, cp]).tolist())
        paths.append(path)
    return paths


def write_solution(path: Path, solver: Solver) -> None:
    """``solution.vtu`` with cell data density, velocity, pressure, mach (ParaView-ready)."""
    mesh, gas = solver.mesh, solver.gas
    w = solver.primitive()
    velocity = np.zeros((3, mesh.n_cells))
    velocity[:gas.dim] = w[1:-1]
    speed = np.sqrt((w[1:-1] ** 2).sum(axis=0))
    fields = {"density": w[0], "velocity": velocity.T, "pressure": w[-1],
              "mach": speed / gas.sound_speed(w)}
    offsets = mesh.block_offsets()
    cells = [(block.type, block.nodes) for block in mesh.cells]
    cell_data = {name: [values[a:b] for a, b in itertools.pairwise(offsets)]
                 for name, values in fields.items()}
    with atomic_path(path) as tmp:
        meshio.write(tmp, meshio.Mesh(mesh.points, cells, cell_data=cell_data))


def save_checkpoint(path: Path, solver: Solver) -> None:
    """Exact state (file cell order, precision) and iteration, time, circulation, mesh digest."""
    meta = {"version": CHECKPOINT_VERSION, "iteration": solver.iteration, "time": solver.time,
            "mesh_digest": solver.mesh.digest(), "dtype": solver.dtype.name,
            "circulation": solver.discretisation.circulation, "cfl": solver.cfl,
            "first_residual": solver.first_residual}
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, conserved=solver.conserved(), meta=np.array(json.dumps(meta)))


def load_checkpoint(path: Path, solver: Solver) -> None:
    """Restore a checkpoint written by :func:`save_checkpoint` into ``solver``.

    Raises
    ------
    ConfigError
        If the file is unreadable or belongs to another mesh or precision.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            conserved = data["conserved"]
    except (OSError, KeyError, ValueError) as error:
        raise ConfigError(f"cannot read checkpoint {path}: {error}") from error
    if meta.get("version") != CHECKPOINT_VERSION:
        raise ConfigError(f"checkpoint {path}: version {meta.get('version')}, "
                          f"expected {CHECKPOINT_VERSION}")
    if meta["mesh_digest"] != solver.mesh.digest():
        raise ConfigError(f"checkpoint {path} was written for another mesh")
    if meta["dtype"] != solver.dtype.name or conserved.shape != (solver.gas.n_vars,
                                                                 solver.mesh.n_cells):
        raise ConfigError(f"checkpoint {path}: state is {conserved.dtype} {conserved.shape}, "
                          f"the run needs {solver.dtype.name} "
                          f"{(solver.gas.n_vars, solver.mesh.n_cells)}")
    solver.set_conserved(conserved)
    solver.iteration = int(meta["iteration"])
    solver.time = float(meta["time"])
    solver.discretisation.circulation = float(meta.get("circulation", 0.0))
    solver.cfl = float(meta.get("cfl", solver.cfl))
    solver.first_residual = meta.get("first_residual")
