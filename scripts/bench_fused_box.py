"""The solver benchmark (``gpusolver.bench.solver``) on a generated tetrahedral box.

Usage (on a GPU machine): ``python scripts/bench_fused_box.py N OUT [--strategies
atomic,reduce] [--orderings rcm] [--precisions fp64,fp32] [--arrays]``. The box has
``6 N^3`` tetrahedra (``meshorder.testing.box_mesh``): N = 61 gives 1.36M cells, N = 119
10.1M; it needs no gmsh on the device. Writes ``OUT.json`` and prints the markdown table
(fused residual, RK4 stage, LU-SGS step; ``--arrays`` also times the array code).
"""

import argparse
import json
import time

from gpusolver.bench.solver import COLUMNS, run_solver_benchmark
from meshorder.report import table
from meshorder.testing import box_mesh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="hexahedra per side, each cut into 6 tetrahedra")
    parser.add_argument("out", help="results are written to OUT.json")
    parser.add_argument("--strategies", default="atomic,reduce")
    parser.add_argument("--orderings", default="rcm")
    parser.add_argument("--precisions", default="fp64,fp32")
    parser.add_argument("--arrays", action="store_true", help="also time the array code")
    args = parser.parse_args()
    start = time.perf_counter()
    mesh = box_mesh(args.n, args.n, args.n)
    print(f"box: {mesh.n_cells} cells in {time.perf_counter() - start:.1f} s", flush=True)
    orderings = args.orderings.split(",")
    rows = run_solver_benchmark(mesh, orderings=orderings,
                                strategies=args.strategies.split(","),
                                precisions=args.precisions.split(","),
                                residual_orderings=tuple(orderings), arrays=args.arrays)
    with open(f"{args.out}.json", "w") as f:
        json.dump(rows, f, indent=1, default=str)
    print(table(COLUMNS, [[row.get(c, "") for c in COLUMNS] for row in rows]))


if __name__ == "__main__":
    main()
