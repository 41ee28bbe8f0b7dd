"""Run logs that survive a killed run (:class:`CsvLog`): ``history.csv`` of the mesh-based
methods (one row per step with residuals, loads and wall time) and the vortex method's
``loads.csv``."""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path

from meshorder.atomic import atomic_path


def history_columns(n_vars: int, models: tuple[str, ...] = (),
                    monitors: tuple[str, ...] = ()) -> list[str]:
    """Header of ``history.csv``: a residual per equation, then one per model equation
    (``residual_<name>``: a turbulence model's), CL, CD and the solver's ``monitors``
    (implicit steps: the CFL number and the cells whose update was relaxed)."""
    return (["iteration", "time", "wall_s"] + [f"residual_{i}" for i in range(n_vars)]
            + [f"residual_{name}" for name in models] + ["cl", "cd", *monitors])


#: A log's rows reach the disk at least this often (seconds), and before every checkpoint.
FLUSH_SECONDS = 1.0


class CsvLog:
    """An append-only csv file that a killed run leaves consistent with its checkpoint.

    Rows reach the disk at least every :data:`FLUSH_SECONDS` and at :meth:`flush`, which
    a run calls before each checkpoint: the rows up to the last checkpoint survive even
    ``kill -9``. A restart from a checkpoint drops the rows past it (written by the run
    that died; the restart computes them again), judged by the first column (the
    iteration, or the time).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "log.csv"
    >>> log = CsvLog(path, ["time", "cx"])
    >>> for t in (0.1, 0.2, 0.3):
    ...     log.write([t, 1.0])
    >>> log.close()
    >>> CsvLog(path, ["time", "cx"], restart_at=0.2).close()
    >>> path.read_text().splitlines()
    ['time,cx', '0.1,1.0', '0.2,1.0']
    """

    def __init__(self, path: Path, header: list[str], *, restart_at: float | None = None):
        """Open ``path``: a new file with ``header``, or, given ``restart_at`` (the
        checkpoint's iteration or time) and an existing file, that file without the rows
        past it."""
        exists = restart_at is not None and path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        if exists:
            _keep_rows_up_to(path, restart_at)
        self.file = open(path, "a" if exists else "w", newline="")
        self.writer = csv.writer(self.file)
        if not exists:
            self.writer.writerow(header)
        self.flushed_at = time.monotonic()

    def write(self, row: list) -> None:
        """Append ``row``; flush when the last flush is :data:`FLUSH_SECONDS` old."""
        self.writer.writerow(row)
        if time.monotonic() - self.flushed_at >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Put every row written so far on the disk (before a checkpoint)."""
        self.file.flush()
        self.flushed_at = time.monotonic()

    def close(self) -> None:
        """Flush and close the file."""
        self.file.close()


def _keep_rows_up_to(path: Path, last: float) -> None:
    """Rewrite ``path`` (atomically) without the rows whose first column is past ``last``
    and without a row the kill cut short."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    kept = rows[:1] + [r for r in rows[1:] if len(r) == len(rows[0]) and _number(r[0]) <= last]
    if len(kept) == len(rows):
        return
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        csv.writer(f).writerows(kept)


def _number(text: str) -> float:
    """``text`` as a number; ``inf`` where it is none."""
    try:
        value = float(text)
    except ValueError:
        return math.inf
    return value if math.isfinite(value) else math.inf
