"""L2 density errors and orders of modal DG (Euler) on Shu's isentropic vortex.

Usage: ``python scripts/dg_vortex_orders.py [--kinds quad,triangle] [--degrees 1,2,3]
[--grids 10,20,40,80] [--time 1.0] [--cfl 0.5] [--flux rusanov] [--strength 16] [--backend numpy]``.
The vortex (strength 5, density and pressure 1 far away, free stream u = 1) starts at
(-0.5, 0) in [-5, 5]^2 (``n`` x ``n`` quads, or the same squares split into two
triangles), the exact state on the boundary, the ``--flux``, RK4 at CFL ``--cfl``, to
``--time``. Prints a markdown row per shape, degree and grid: the error and the order
against the coarser grid by the solver's own rule and by a rule of ``--strength``, steps
and seconds. ``tests/gpusolver/test_dg.py`` runs the first two grids (docs/validation.md).
"""

import argparse
import dataclasses
import time

from dg_couette_orders import errors_and_orders  # the sibling script (scripts/ is on the path)

from gpusolver.physics.exact import isentropic_vortex
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from meshorder.testing import grid_mesh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="quad,triangle")
    parser.add_argument("--degrees", default="1,2,3")
    parser.add_argument("--grids", default="10,20,40,80", help="elements along a side")
    parser.add_argument("--time", type=float, default=1.0)
    parser.add_argument("--cfl", type=float, default=0.5)
    parser.add_argument("--flux", default="rusanov")
    parser.add_argument("--strength", type=int, default=16,
                        help="the strong rule's strength, for the second error")
    parser.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    args = parser.parse_args()
    print(f"| mesh | p | elements | L2 error | order | L2 error ({args.strength}) | order "
          "| steps | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind in args.kinds.split(","):
        for degree in map(int, args.degrees.split(",")):
            previous = None
            for n in map(int, args.grids.split(",")):
                mesh = grid_mesh(n, n, kind)
                points = mesh.points.copy()
                points[:, :2] = 10.0 * (points[:, :2] - 0.5)
                solver = DGSolver(dataclasses.replace(mesh, points=points), Gas(dim=2, mach=0.5),
                                  dict.fromkeys(("left", "right", "bottom", "top"), "exact"),
                                  degree=degree, flux=args.flux, cfl=args.cfl,
                                  exact=isentropic_vortex,
                                  backend=args.backend)
                solver.u = solver.backend.asarray(solver.discretisation.project(isentropic_vortex))
                start = time.perf_counter()
                steps = solver.advance_to(args.time)
                seconds = time.perf_counter() - start
                errors, orders = errors_and_orders(solver, isentropic_vortex, args.strength,
                                                   previous)
                previous = errors
                print(f"| {kind} | {degree} | {mesh.n_cells} | {errors[0]:.3e} | {orders[0]} | "
                      f"{errors[1]:.3e} | {orders[1]} | {steps} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
