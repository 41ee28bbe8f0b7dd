"""Bytes per cell of a case's solver: what it holds after its set-up and a few steps.

Usage: ``python scripts/memory_per_cell.py CASE.toml [--precisions fp64,fp32]
[--steps 3] [--json out.json]``. For each precision the case's solver is built (its
``[run] precision`` replaced) and stepped; on the GPU (CuPy) the bytes are those the
CuPy memory pool hands out at their peak (kernels' own buffers, CUDA graphs' memory and
the driver's context are not in it), on the CPU (NumPy) the peak of the array memory
``tracemalloc`` traces. Each precision is measured in a process of its own (a second
solver in one process would find the first one's blocks still in the pool: fp32 then
read 2,364 bytes per cell where alone it reads 1,303). Prints one line per precision;
``--json`` writes the rows.
"""

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import tracemalloc

from gpusolver.backends import cupy_available
from gpusolver.run import build_system
from gpusolver.systems import load_case


def measured(case, steps: int) -> tuple[int, int, str]:
    """Cells, peak bytes and backend of ``case``'s solver after ``steps`` steps."""
    if case.run["backend"] in ("cupy", "auto") and cupy_available():
        import cupy

        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()
        system = build_system(case)
        system.advance(steps)
        cupy.cuda.Device().synchronize()
        return system.solver.n_cells, pool.total_bytes(), "cupy"
    tracemalloc.start()
    system = build_system(case)
    system.advance(steps)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return system.solver.n_cells, peak, "numpy"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("--precisions", default="fp64,fp32")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    if len(precisions) == 1:
        rows = [_row(args.case, precisions[0], args.steps)]
    else:
        rows = [row for precision in precisions
                for row in _in_own_process(args.case, precision, args.steps)]
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


def _row(path: str, precision: str, steps: int) -> dict:
    """The case at ``path`` measured in ``precision`` here (one line printed)."""
    case = load_case(path)
    case = dataclasses.replace(case, run=case.run | {"precision": precision})
    cells, peak, backend = measured(case, steps)
    print(f"{path} {backend} {precision}: {cells:,} cells, {peak / 2**30:.2f} GiB, "
          f"{peak / cells:.0f} bytes per cell", flush=True)
    return {"case": path, "backend": backend, "precision": precision, "cells": cells,
            "bytes": peak, "bytes_per_cell": peak / cells}


def _in_own_process(case: str, precision: str, steps: int) -> list[dict]:
    """The rows of one precision, measured by this script in a new process."""
    with tempfile.TemporaryDirectory() as folder:
        rows = f"{folder}/rows.json"
        subprocess.run([sys.executable, __file__, case, "--precisions", precision,
                        "--steps", str(steps), "--json", rows], check=True)
        with open(rows) as handle:
            return json.load(handle)


if __name__ == "__main__":
    main()
