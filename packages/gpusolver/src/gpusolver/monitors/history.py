"""``history.csv``: one row per step with residuals, loads and wall time."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from meshorder.atomic import atomic_path

if TYPE_CHECKING:
    from gpusolver.solvers.fv.solver import Solver


def history_columns(n_vars: int) -> list[str]:
    """Header of ``history.csv``."""
    return (["iteration", "time", "wall_s"] + [f"residual_{i}" for i in range(n_vars)]
            + ["cl", "cd"])


class History:
    """Append-only ``history.csv``: iteration, time, wall seconds since the run started,
    RMS of dU/dt per variable, CL, CD."""

    def __init__(self, path: Path, n_vars: int, append: bool, restart_iteration: int = 0):
        """Open ``path``; on a restart (``append``) keep the rows up to ``restart_iteration``.

        Rows after the checkpoint a run restarts from were written by a run that died
        (``kill -9``) before its next checkpoint; the restart computes them again, so they
        are dropped rather than repeated.
        """
        self.path = path
        exists = append and path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        if exists:
            _keep_rows_up_to(path, restart_iteration)
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


def _keep_rows_up_to(path: Path, iteration: int) -> None:
    """Rewrite ``path`` (atomically) without the rows after ``iteration``."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    kept = rows[:1] + [r for r in rows[1:] if r and r[0].isdigit() and int(r[0]) <= iteration]
    if len(kept) == len(rows):
        return
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        csv.writer(f).writerows(kept)
