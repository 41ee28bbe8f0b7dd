"""The LU-SGS step against the residual it solves for, per cell ordering, on a mesh.

Usage (on a GPU machine): ``python scripts/time_lusgs.py MESH OUT [--orderings rcm,native]
[--sweeps hyperplanes,colours] [--multigrid 0,3] [--fp32]``. MESH is a mesh file, or N for
a box of ``6 N^3`` tetrahedra (``meshorder.testing.box_mesh``; N = 61: 1.36M cells, N = 119:
10.1M). Per ordering and
kind of sweep levels (hyperplanes, or cell colours): a plan, then the fused residual and
one fused LU-SGS step of one solver (second order, Roe, least squares, Venkatakrishnan,
far field everywhere, fp64), the step timed after its CUDA graphs are recorded; with
``--multigrid``, per number of coarse levels (0: none), the step with its multigrid
corrections. Writes
``OUT.json`` and prints one line per row; lighter than ``bench_fused_box.py`` (no
face-flux kernels, no RK stage, no Navier-Stokes), so that 10M cells fit in a few minutes.
``--fp32`` adds the fp32 residual of each plan. ``OUT.json`` is rewritten after each row.
"""

import argparse
import itertools
import json
import time

from gpusolver.bench.solver import STEP_WARMUP, bench_solver
from meshorder import Topology, read_mesh
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_mesh

REPEATS = 5


def _time_step(mesh, topology, plan, row: dict) -> dict:
    """``row`` with the residual's and one LU-SGS step's times (and the set-up's)."""
    start = time.perf_counter()
    solver = bench_solver(mesh, topology, plan, "reduce", "fp64", "cupy", integrator="lusgs",
                          sweeps=row["sweeps"], multigrid=row["multigrid"])
    row["setup_s"] = time.perf_counter() - start
    if solver.multigrid is not None:
        row["multigrid_cells"] = solver.multigrid.n_cells
    row["residual_ms"] = _residual_ms(solver)
    row["lusgs_step_ms"] = solver.backend.median_seconds(solver.step, REPEATS,
                                                         warmup=STEP_WARMUP) * 1e3
    row["lusgs_vs_residual"] = row["lusgs_step_ms"] / row["residual_ms"]
    if not row["multigrid"]:
        row["lusgs_us_per_level"] = ((row["lusgs_step_ms"] - row["residual_ms"]) * 1e3
                                     / (2 * row["levels"]))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mesh", help="mesh file, or hexahedra per side of a tetrahedral box")
    parser.add_argument("out", help="results are written to OUT.json")
    parser.add_argument("--orderings", default="rcm,native")
    parser.add_argument("--sweeps", default="hyperplanes,colours")
    parser.add_argument("--multigrid", default="0", help="coarse levels, comma-separated")
    parser.add_argument("--fp32", action="store_true", help="also the fp32 residual")
    args = parser.parse_args()
    start = time.perf_counter()
    n = int(args.mesh) if args.mesh.isdigit() else None
    mesh = box_mesh(n, n, n) if n else read_mesh(args.mesh)
    topology = Topology(mesh)
    print(f"{args.mesh}: {mesh.n_cells} cells in {time.perf_counter() - start:.1f} s",
          flush=True)
    rows = []
    for ordering, sweeps in itertools.product(args.orderings.split(","),
                                              args.sweeps.split(",")):
        start = time.perf_counter()
        options = PlanOptions(cells=ordering, hyperplanes=True,
                              sweep_colours=sweeps == "colours")
        plan = make_plan(mesh, options, topology=topology)
        plan_s = time.perf_counter() - start
        for coarse in [int(x) for x in args.multigrid.split(",")]:
            row = {"cells": mesh.n_cells, "ordering": ordering, "sweeps": sweeps,
                   "levels": len(plan.forward_offsets) - 1, "plan_s": plan_s,
                   "multigrid": coarse}
            rows.append(_time_step(mesh, topology, plan, row))
            _write(rows, args.out)
        if args.fp32:
            solver = bench_solver(mesh, topology, plan, "reduce", "fp32", "cupy")
            rows.append({"cells": mesh.n_cells, "ordering": ordering, "precision": "fp32",
                         "residual_ms": _residual_ms(solver)})
            solver = None
            _write(rows, args.out)


def _write(rows: list[dict], out: str) -> None:
    print(json.dumps(rows[-1]), flush=True)
    with open(f"{out}.json", "w") as f:
        json.dump(rows, f, indent=1)


def _residual_ms(solver) -> float:
    """Median milliseconds of the solver's residual of its state."""
    residual = solver.discretisation.residual
    return solver.backend.median_seconds(lambda: residual(solver.u), REPEATS, warmup=1) * 1e3


if __name__ == "__main__":
    main()
