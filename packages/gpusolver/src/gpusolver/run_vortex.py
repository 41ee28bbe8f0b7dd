"""Run a vortex case end to end: steps with progress, loads, wake snapshots, checkpoints."""

from __future__ import annotations

import csv
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import meshio
import numpy as np
from tqdm import tqdm

from gpusolver.errors import ConfigError
from gpusolver.io.vortex_case import VortexCase
from gpusolver.monitors.history import CsvLog
from gpusolver.solvers.vortex.body import Body
from gpusolver.solvers.vortex.solver import Loads, VortexSolver
from gpusolver.solvers.vortex.surface import SurfaceLoads
from meshorder.atomic import atomic_path, check_writable
from meshorder.plan import DAMAGED_NPZ
from meshorder.termination import StopRequests

#: Columns of loads.csv.
LOAD_COLUMNS = [f.name for f in dataclasses.fields(Loads)]
#: Checkpoint format version.
CHECKPOINT_VERSION = 2


@dataclass(frozen=True)
class VortexRunResult:
    """What a finished vortex run produced: the solver in its final state, the files
    written, whether Ctrl-C or SIGTERM stopped it."""

    solver: VortexSolver
    files: list[Path]
    interrupted: bool = False


def _digest(solver: VortexSolver) -> str:
    return str(np.round(solver.body.vertices, 12).tobytes().hex()[:64])


def save_vortex_checkpoint(path: Path, solver: VortexSolver) -> None:
    """The wake, time, step and far wake's circulation, written atomically."""
    meta = {"version": CHECKPOINT_VERSION, "time": solver.time, "iteration": solver.iteration,
            "far_circulation": float(solver.far_circulation), "body": _digest(solver)}
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, positions=solver.backend.to_host(solver.positions),
                 gammas=solver.backend.to_host(solver.gammas), meta=np.array(json.dumps(meta)))


def load_vortex_checkpoint(path: Path, solver: VortexSolver) -> None:
    """Restore a checkpoint of :func:`save_vortex_checkpoint` into ``solver``.

    Raises
    ------
    ConfigError
        When the file cannot be read or belongs to another body.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            positions, gammas = data["positions"], data["gammas"]
    except (OSError, KeyError, *DAMAGED_NPZ) as error:
        raise ConfigError(f"restart file {path}: not a vortex checkpoint ({error})") from None
    if meta.get("version") != CHECKPOINT_VERSION or meta.get("body") != _digest(solver):
        raise ConfigError(f"restart file {path}: written for another body or version")
    solver.set_state(positions, gammas, meta["time"], meta["iteration"],
                     meta["far_circulation"])


def write_wake(path: Path, solver: VortexSolver) -> None:
    """The wake as a VTU point cloud (circulation as point data), for ParaView."""
    points = np.zeros((solver.n_elements, 3))
    points[:, :2] = solver.backend.to_host(solver.positions)
    cells = [("vertex", np.arange(solver.n_elements).reshape(-1, 1))]
    with atomic_path(path) as tmp:
        meshio.write(tmp, meshio.Mesh(points, cells, point_data={
            "circulation": solver.backend.to_host(solver.gammas)}), file_format="vtu")


def run_vortex_case(case: VortexCase, progress: bool = True) -> VortexRunResult:
    """Run ``case``: ``steps`` steps from rest (or from its restart), writing
    ``loads.csv`` (a row per step, appended to on restart without the rows past the
    checkpoint), ``wake_<step>.vtu`` every
    ``snapshot_every`` steps and at the end, ``checkpoint.npz`` every
    ``checkpoint_every`` steps and at the end, and ``surface.csv``: the pressure and
    friction coefficients along the wall, averaged over this run's steps. Ctrl-C or
    SIGTERM stops after the step in progress, with the same outputs."""
    out = case.output_directory
    try:
        check_writable(out, folder=True)
    except OSError as error:
        raise ConfigError(f"output directory {out}: {error.strerror}") from None
    solver = VortexSolver(case.body, case.settings, backend=case.backend)
    if case.restart is not None:
        load_vortex_checkpoint(case.restart, solver)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint, loads_path = out / "checkpoint.npz", out / "loads.csv"
    files = {loads_path, checkpoint}
    interrupted = False
    surface = SurfaceMean(solver.body.n_panels)
    log = CsvLog(loads_path, LOAD_COLUMNS,
                 restart_at=solver.time if case.restart is not None else None)
    bar = tqdm(total=case.steps, unit="step", disable=not progress,
               desc=f"vortex {solver.backend.name} {case.settings.precision}")
    with StopRequests() as stop:
        try:
            for _ in range(case.steps):
                if stop.requested:  # Ctrl-C or SIGTERM, after the step in progress
                    interrupted = True
                    break
                loads = solver.step()
                log.write([getattr(loads, c) for c in LOAD_COLUMNS])
                surface.add(solver.surface)
                bar.update()
                bar.set_postfix(N=loads.elements, cx=f"{loads.cx:.3f}", refresh=False)
                if solver.iteration % case.snapshot_every == 0:
                    files.add(_snapshot(out, solver))
                if solver.iteration % case.checkpoint_every == 0:
                    log.flush()  # the loads cover the checkpoint, even after kill -9
                    save_vortex_checkpoint(checkpoint, solver)
        finally:
            log.close()
            bar.close()
    save_vortex_checkpoint(checkpoint, solver)
    files.add(_snapshot(out, solver))
    if surface.steps:
        files.add(write_surface(out / "surface.csv", solver.body, surface))
    return VortexRunResult(solver, sorted(files), interrupted)


class SurfaceMean:
    """Running means of the wall's pressure and friction coefficients over steps."""

    def __init__(self, n_panels: int):
        self.cp, self.cf, self.steps = np.zeros(n_panels), np.zeros(n_panels), 0

    def add(self, loads: SurfaceLoads) -> None:
        """Count one step's coefficients."""
        self.cp += loads.cp
        self.cf += loads.cf
        self.steps += 1

    def mean(self) -> SurfaceLoads:
        """The means so far (at least one step)."""
        return SurfaceLoads(cp=self.cp / self.steps, cf=self.cf / self.steps)


def write_surface(path: Path, body: Body, surface: SurfaceMean) -> Path:
    """``surface.csv``: a row per panel midpoint, counter-clockwise, with its arc length
    from the first vertex and the mean ``cp`` and ``cf`` (:mod:`.vortex.surface`)."""
    mean = surface.mean()
    arc = np.cumsum(body.lengths) - 0.5 * body.lengths
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["x", "y", "s", "cp", "cf"])
        writer.writerows(zip(*body.midpoints.T, arc, mean.cp, mean.cf, strict=True))
    return path


def _snapshot(out: Path, solver: VortexSolver) -> Path:
    path = out / f"wake_{solver.iteration:07d}.vtu"
    write_wake(path, solver)
    return path
