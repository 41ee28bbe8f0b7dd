"""The LU-SGS step against the residual it solves for, per cell ordering, on a box.

Usage (on a GPU machine): ``python scripts/time_lusgs.py N OUT [--orderings rcm,native]
[--sweeps hyperplanes,colours]``. The box has ``6 N^3`` tetrahedra
(``meshorder.testing.box_mesh``; N = 61: 1.36M cells, N = 119: 10.1M). Per ordering and
kind of sweep levels (hyperplanes, or cell colours): a plan, then the fused residual and
one fused LU-SGS step of one solver (second order, Roe, least squares, Venkatakrishnan,
far field everywhere, fp64), the step timed after its CUDA graphs are recorded. Writes
``OUT.json`` and prints one line per row; lighter than ``bench_fused_box.py`` (no
face-flux kernels, no RK stage, no Navier-Stokes), so that 10M cells fit in a few minutes.
"""

import argparse
import itertools
import json
import time

from gpusolver.bench.solver import STEP_WARMUP, bench_solver
from meshorder import Topology
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_mesh

REPEATS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="hexahedra per side, each cut into 6 tetrahedra")
    parser.add_argument("out", help="results are written to OUT.json")
    parser.add_argument("--orderings", default="rcm,native")
    parser.add_argument("--sweeps", default="hyperplanes,colours")
    args = parser.parse_args()
    start = time.perf_counter()
    mesh = box_mesh(args.n, args.n, args.n)
    topology = Topology(mesh)
    print(f"box: {mesh.n_cells} cells in {time.perf_counter() - start:.1f} s", flush=True)
    rows = []
    for ordering, sweeps in itertools.product(args.orderings.split(","),
                                              args.sweeps.split(",")):
        start = time.perf_counter()
        options = PlanOptions(cells=ordering, hyperplanes=True,
                              sweep_colours=sweeps == "colours")
        plan = make_plan(mesh, options, topology=topology)
        row = {"cells": mesh.n_cells, "ordering": ordering, "sweeps": sweeps,
               "levels": len(plan.forward_offsets) - 1,
               "plan_s": time.perf_counter() - start}
        solver = bench_solver(mesh, topology, plan, "reduce", "fp64", "cupy",
                              integrator="lusgs", sweeps=sweeps)
        backend, residual = solver.backend, solver.discretisation.residual
        row["residual_ms"] = backend.median_seconds(lambda s=solver, r=residual: r(s.u),
                                                    REPEATS, warmup=1) * 1e3
        row["lusgs_step_ms"] = backend.median_seconds(solver.step, REPEATS,
                                                      warmup=STEP_WARMUP) * 1e3
        solver = residual = None  # free its device memory
        row["lusgs_vs_residual"] = row["lusgs_step_ms"] / row["residual_ms"]
        row["lusgs_us_per_level"] = ((row["lusgs_step_ms"] - row["residual_ms"]) * 1e3
                                     / (2 * row["levels"]))
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(f"{args.out}.json", "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
