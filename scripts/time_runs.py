"""Whole runs of case files, timed: set-up, time in the loop per step, whole run.

Usage: ``python scripts/time_runs.py CASE.toml [CASE ...] [--iterations N]
[--json runs.json] [--repeat 2]``. Each case runs as ``python -m gpusolver run --quiet``
in a subprocess (so the gpusolver on ``PYTHONPATH`` is the one timed: run it twice with
two checkouts to compare them in one call), from a copy of the case file beside it with
``iterations`` (or ``steps``) set to N and the output in a temporary folder. Per run it
prints and records the whole run's seconds, the seconds in the loop (the log's last
``wall_s``), the mean seconds per step over all but the first log row, the steps, and the
last row's CL and CD where the log has them.
"""

import argparse
import csv
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _with(text: str, iterations: int, out: Path) -> str:
    """The case text with its step count and output folder replaced."""
    text = re.sub(r"^(iterations|steps)\s*=.*$", rf"\1 = {iterations}", text, flags=re.M)
    text = re.sub(r"^directory\s*=.*$", f'directory = "{out}"', text, flags=re.M)
    if not re.search(r"^(iterations|steps)\s*=", text, flags=re.M):
        text = text.replace("[run]", f"[run]\niterations = {iterations}", 1)
    return text


def time_run(case: Path, iterations: int) -> dict:
    """One timed run of ``case`` (see the module docstring)."""
    with tempfile.TemporaryDirectory() as out:
        copy = case.with_name(f".timed_{case.name}")
        copy.write_text(_with(case.read_text(), iterations, Path(out)))
        try:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "gpusolver", "run", str(copy), "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
            whole = time.perf_counter() - start
        finally:
            copy.unlink()
        log = next(p for p in (Path(out) / "history.csv", Path(out) / "loads.csv")
                   if p.exists())
        with open(log, newline="") as f:
            rows = list(csv.DictReader(f))
    if "wall_s" not in rows[0]:  # a log without the loop's clock: the whole run alone
        return {"case": str(case), "steps": len(rows), "whole_s": whole, "loop_s": math.nan,
                "setup_s": math.nan, "step_ms": math.nan}
    wall = [float(row["wall_s"]) for row in rows]
    per_step = (wall[-1] - wall[0]) / max(len(wall) - 1, 1)
    answer = {name: float(rows[-1][name]) for name in ("cl", "cd") if name in rows[-1]}
    return {"case": str(case), "steps": len(rows), "whole_s": whole, "loop_s": wall[-1],
            "setup_s": whole - wall[-1], "step_ms": per_step * 1e3, **answer}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for case in args.cases:
        for _ in range(args.repeat):
            row = time_run(case, args.iterations)
            rows.append(row)
            answer = "".join(f", {name.upper()} {row[name]:.10g}" for name in ("cl", "cd")
                             if name in row)
            print(f"{case}: {row['steps']} steps, whole {row['whole_s']:.2f} s, set-up "
                  f"{row['setup_s']:.2f} s, {row['step_ms']:.3f} ms per step{answer}",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
