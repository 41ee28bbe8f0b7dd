"""Bytes per cell of a case's solver: what it holds after its set-up and a few steps.

Usage: ``python scripts/memory_per_cell.py CASE.toml [--precisions fp64,fp32]
[--steps 3] [--json out.json]``. For each precision the case's solver is built (its
``[run] precision`` replaced) and stepped; on the GPU (CuPy) the bytes are those the
CuPy memory pool hands out at their peak (kernels' own buffers, CUDA graphs' memory and
the driver's context are not in it), on the CPU (NumPy) the peak of the array memory
``tracemalloc`` traces. Prints one line per precision; ``--json`` writes the rows.
"""

import argparse
import dataclasses
import json
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
    rows = []
    for precision in args.precisions.split(","):
        case = load_case(args.case)
        case = dataclasses.replace(case, run=case.run | {"precision": precision})
        cells, peak, backend = measured(case, args.steps)
        rows.append({"case": args.case, "backend": backend, "precision": precision,
                     "cells": cells, "bytes": peak, "bytes_per_cell": peak / cells})
        print(f"{args.case} {backend} {precision}: {cells:,} cells, {peak / 2**30:.2f} GiB, "
              f"{peak / cells:.0f} bytes per cell", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
