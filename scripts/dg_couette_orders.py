"""L2 density errors of DG Navier-Stokes on the RKDG paper's compressible Couette flow.

Usage: ``python scripts/dg_couette_orders.py [--steps 1000] [--kinds quad,triangle]
[--degrees 1,2,3]``. Prints a markdown row per
shape, degree and grid (10 x 5, 20 x 10 and 40 x 20 quads, the same grids split into
triangles): error, order against the coarser grid, steps, last density residual, time.
The case is ``tests/gpusolver/test_dg_viscous.py``'s (docs/validation.md).
"""

import argparse
import dataclasses
import time

import numpy as np

from gpusolver.errors import SolverDivergedError
from gpusolver.physics.exact import couette
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from meshorder.testing import grid_mesh

GAS = Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="constant")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--kinds", default="quad,triangle")
    parser.add_argument("--degrees", default="1,2,3")
    args = parser.parse_args()
    exact = lambda points, time: couette(GAS, points)  # noqa: E731
    print("| mesh | p | elements | L2 error | order | steps | residual | time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind in args.kinds.split(","):
        for degree in map(int, args.degrees.split(",")):
            previous = None
            for nx in (10, 20, 40):
                mesh = grid_mesh(nx, nx // 2, kind)
                mesh = dataclasses.replace(mesh, points=mesh.points * np.array([4.0, 2.0, 1.0]))
                solver = DGSolver(mesh, GAS, dict.fromkeys(("left", "right", "bottom", "top"),
                                                           "exact"),
                                  degree=degree, exact=exact, local_time_step=True)
                solver.u = solver.project(exact)
                start = time.perf_counter()
                try:
                    for _ in range(args.steps):
                        residual = solver.step()[0]
                except SolverDivergedError as error:
                    print(f"| {kind} | {degree} | {mesh.n_cells} | diverged: {error} |")
                    break
                e = solver.l2_error(exact)
                order = "" if previous is None else f"{np.log2(previous / e):.2f}"
                previous = e
                print(f"| {kind} | {degree} | {mesh.n_cells} | {e:.3e} | {order} | "
                      f"{args.steps} | {residual:.1e} | {time.perf_counter() - start:.0f} s |",
                      flush=True)


if __name__ == "__main__":
    main()
