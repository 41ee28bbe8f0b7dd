"""The vortex System: :class:`~gpusolver.solvers.vortex.solver.VortexSolver` around a
body, with its outputs: ``loads.csv`` (a row per step), wake snapshots and the wall's
mean pressure and friction (``surface.csv``)."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
from pathlib import Path

import numpy as np

from gpusolver.io.checkpoint import Identity, Snapshot, digest_of
from gpusolver.io.vtu import write_vtu
from gpusolver.solvers.base import StepReport, System
from gpusolver.solvers.vortex.body import Body
from gpusolver.solvers.vortex.case import VORTEX_SCHEMA, VortexCase, parse_vortex_case
from gpusolver.solvers.vortex.solver import Loads, VortexSolver
from gpusolver.solvers.vortex.surface import SurfaceLoads
from meshorder.atomic import atomic_path

#: Columns of loads.csv.
LOAD_COLUMNS = [f.name for f in dataclasses.fields(Loads)]


class VortexSystem(System):
    """The vortex element method (``[solver] method = "vortex"``)."""

    method = "vortex"
    schema = VORTEX_SCHEMA
    log_name = "loads.csv"

    def __init__(self, solver: VortexSolver, snapshot_every: int | None = None):
        """Drive ``solver``, writing a wake snapshot every ``snapshot_every`` steps (None:
        at the end only)."""
        self.solver, self.snapshot_every = solver, snapshot_every
        #: The wall's coefficients summed over this run's steps.
        self.surface = SurfaceMean(solver.body.n_panels)

    @classmethod
    def parse_case(cls, data: dict, path: Path) -> VortexCase:
        """:func:`gpusolver.solvers.vortex.case.parse_vortex_case`."""
        return parse_vortex_case(data, path)

    @classmethod
    def from_case(cls, case: VortexCase) -> VortexSystem:
        """No elements yet: the flow starts impulsively."""
        return cls(VortexSolver(case.body, case.settings, backend=case.backend),
                   case.snapshot_every)

    def identity(self) -> Identity:
        """The body's vertices (all of them, to the bit) and the free stream."""
        s = self.solver.settings
        body = hashlib.sha256(np.ascontiguousarray(self.solver.body.vertices).tobytes())
        return Identity(self.method, body.hexdigest(),
                        digest_of({"reynolds": s.reynolds, "free_stream": list(s.free_stream),
                                   "reference_length": s.reference_length}))

    @property
    def iteration(self) -> int:
        """Steps taken (across restarts)."""
        return self.solver.iteration

    def advance(self, steps: int) -> StepReport:
        """``steps`` steps; the loads of the last."""
        for _ in range(steps):
            loads = self.solver.step()
            self.surface.add(self.solver.surface)
        return StepReport(self.solver.iteration, self.solver.time, np.zeros(0), None,
                          {"cx": loads.cx, "cy": loads.cy, "cm": loads.cm},
                          [getattr(loads, c) for c in LOAD_COLUMNS])

    def progress_label(self) -> str:
        """Backend and precision."""
        return f"vortex {self.solver.backend.name} {self.solver.settings.precision}"

    def progress_values(self, report: StepReport) -> dict[str, str]:
        """Elements and the drag coefficient."""
        return {"N": str(self.solver.n_elements), "cx": f"{report.loads['cx']:.3f}"}

    def summary(self, report: StepReport | None) -> str:
        """Steps, time and elements."""
        return (f"{self.iteration} steps to t = {self.solver.time:.4g}; "
                f"{self.solver.n_elements} elements")

    def log_columns(self) -> list[str]:
        """:data:`LOAD_COLUMNS` and ``wall_s``."""
        return [*LOAD_COLUMNS, "wall_s"]

    @property
    def log_position(self) -> float:
        """The time (loads.csv's first column)."""
        return self.solver.time

    def snapshot(self) -> Snapshot:
        """The wake, time, step and far wake's circulation."""
        solver = self.solver
        return Snapshot({"positions": solver.backend.to_host(solver.positions),
                         "gammas": solver.backend.to_host(solver.gammas)},
                        {"iteration": solver.iteration, "time": solver.time,
                         "far_circulation": float(solver.far_circulation)})

    def restore(self, snapshot: Snapshot) -> list[str]:
        """The wake of ``snapshot`` (its settings are all the case's)."""
        meta = snapshot.meta
        self.solver.set_state(snapshot.arrays["positions"], snapshot.arrays["gammas"],
                              meta["time"], meta["iteration"], meta["far_circulation"])
        return []

    def periodic_outputs(self, out: Path) -> list[Path]:
        """A wake snapshot every ``snapshot_every`` steps."""
        every = self.snapshot_every
        if every is not None and self.solver.iteration % every == 0:
            return [self._wake_snapshot(out)]
        return []

    def write_outputs(self, out: Path) -> list[Path]:
        """The last wake and, after at least one step, ``surface.csv``."""
        files = [self._wake_snapshot(out)]
        if self.surface.steps:
            files.append(write_surface(out / "surface.csv", self.solver.body, self.surface))
        return files

    def _wake_snapshot(self, out: Path) -> Path:
        path = out / f"wake_{self.solver.iteration:07d}.vtu"
        write_wake(path, self.solver)
        return path


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


def write_wake(path: Path, solver: VortexSolver) -> None:
    """The wake as a VTU point cloud (circulation as point data), for ParaView."""
    points = np.zeros((solver.n_elements, 3))
    points[:, :2] = solver.backend.to_host(solver.positions)
    cells = [("vertex", np.arange(solver.n_elements).reshape(-1, 1))]
    write_vtu(path, points, cells,
              point_data={"circulation": solver.backend.to_host(solver.gammas)})


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
