"""L2 density errors of DG Navier-Stokes on the RKDG paper's compressible Couette flow.

Usage: ``python scripts/dg_couette_orders.py [--newton] [--walls no-slip]
[--steps 1000] [--tolerance 0] [--kinds quad,triangle] [--degrees 1,2,3]
[--grids 10,20,40] [--strength 16] [--backend numpy] [--every 0]``. Prints a markdown
row per shape, degree and grid (``nx`` x ``nx / 2`` quads, the same grids split into
triangles): error and order against the coarser grid, integrated by the solver's own
rule and by a rule of ``--strength``, steps, last density residual, time.

``--newton`` solves for the steady state directly (:mod:`gpusolver.solvers.dg.steady`,
NumPy, to round-off; "steps" are then Newton steps). Otherwise a run takes explicit local
time steps from the projected exact solution and stops after ``--steps`` steps, or sooner
once the density residual is below ``--tolerance``; ``--every`` prints the errors on the
way too. ``--walls no-slip`` makes the lower and upper boundaries isothermal no-slip
walls at the exact solution's temperatures and speeds; ``--walls exact`` takes the exact
state there as on the inflow and outflow sides.
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
from gpusolver.solvers.dg.steady import newton_steady_state
from meshorder.testing import grid_mesh

GAS = Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="constant")
#: The walls at the exact solution's temperatures (lower over upper) and speeds.
NO_SLIP = {"bottom": {"type": "no-slip-isothermal", "temperature": 0.80 / 0.85},
           "top": {"type": "no-slip-isothermal", "temperature": 1.0,
                   "velocity": [GAS.mach, 0.0]}}


def _strong_error(solver, exact, strength: int) -> float:
    """The density's L2 error by a rule of ``strength``."""
    return solver.discretisation.l2_error(exact, strength=strength)


def errors_and_orders(solver: DGSolver, exact, strength: int, previous: np.ndarray | None
                      ) -> tuple[np.ndarray, list[str]]:
    """The density's L2 errors by the solver's own rule and by a rule of ``strength``, and
    their orders against the coarser grid's ``previous`` errors (blank on the first)."""
    d = solver.discretisation
    errors = np.array([d.l2_error(exact), d.l2_error(exact, strength=strength)])
    orders = (["", ""] if previous is None
              else [f"{o:.2f}" for o in np.log2(previous / errors)])
    return errors, orders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--newton", action="store_true",
                        help="the steady state by Newton's method (NumPy)")
    parser.add_argument("--walls", default="no-slip", choices=("no-slip", "exact"))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="stop a grid's run once its density residual is below this")
    parser.add_argument("--kinds", default="quad,triangle")
    parser.add_argument("--grids", default="10,20,40", help="elements across x (quads)")
    parser.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    parser.add_argument("--every", type=int, default=0,
                        help="also print the errors every this many steps (how they drift)")
    parser.add_argument("--degrees", default="1,2,3")
    parser.add_argument("--strength", type=int, default=16,
                        help="the strong rule's strength, for the second error")
    args = parser.parse_args()
    exact = lambda points, time: couette(GAS, points)  # noqa: E731
    boundaries = dict.fromkeys(("left", "right", "bottom", "top"), "exact")
    if args.walls == "no-slip":
        boundaries |= NO_SLIP
    print(f"| mesh | p | elements | L2 error | order | L2 error ({args.strength}) | order "
          "| steps | residual | time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind in args.kinds.split(","):
        for degree in map(int, args.degrees.split(",")):
            previous = None
            for nx in map(int, args.grids.split(",")):
                mesh = grid_mesh(nx, nx // 2, kind)
                mesh = dataclasses.replace(mesh, points=mesh.points * np.array([4.0, 2.0, 1.0]))
                solver = DGSolver(mesh, GAS, boundaries, degree=degree, exact=exact,
                                  local_time_step=True,
                                  backend="numpy" if args.newton else args.backend)
                solver.u = solver.backend.asarray(solver.discretisation.project(exact))
                start = time.perf_counter()
                try:
                    steps, residual = 0, np.inf
                    if args.newton:
                        history = newton_steady_state(solver.discretisation)
                        steps, residual = len(history) - 1, history[-1]
                    while (not args.newton and steps < args.steps
                           and residual >= args.tolerance):
                        residual = solver.step()[0]
                        steps += 1
                        if args.every and steps % args.every == 0 and steps < args.steps:
                            print(f"| {kind} | {degree} | {mesh.n_cells} | "
                                  f"{solver.discretisation.l2_error(exact):.4e} | (so far) | "
                                  f"{_strong_error(solver, exact, args.strength):.4e} | | "
                                  f"{steps} | {residual:.1e} | |", flush=True)
                except SolverDivergedError as error:
                    print(f"| {kind} | {degree} | {mesh.n_cells} | diverged: {error} |")
                    break
                errors, orders = errors_and_orders(solver, exact, args.strength, previous)
                previous = errors
                print(f"| {kind} | {degree} | {mesh.n_cells} | {errors[0]:.3e} | {orders[0]} | "
                      f"{errors[1]:.3e} | {orders[1]} | {steps} | {residual:.1e} | "
                      f"{time.perf_counter() - start:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
