"""Milliseconds per local-time step of the NACA0012 Re 5000 DG case on the GPU: the time
steps in the step's CUDA graph (``DGSolver.advance``) against the same steps with the time
steps computed by array code between graphs.

Usage (on a GPU): ``python scripts/dg_step_times.py --mesh naca.msh [--degrees 2 3]
[--steps 2000]``, a mesh from ``scripts/dg_naca0012_re5000.py`` (it writes one) or
``meshorder generate naca0012-ogrid``.
"""

import argparse
import time

from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from meshorder import read_mesh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", required=True)
    parser.add_argument("--degrees", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    import cupy

    mesh = read_mesh(args.mesh)
    gas = Gas(dim=2, mach=0.5, aoa_deg=1.0, reynolds=5000.0, viscosity_law="constant")
    for degree in args.degrees:
        solver = DGSolver(mesh, gas, {"airfoil": "no-slip-adiabatic", "farfield": "farfield"},
                          degree=degree, integrator="rk4", cfl=0.5, local_time_step=True,
                          backend="cupy")
        solver.advance(200)  # compile and record
        for name in ("in the graph", "array code"):
            cupy.cuda.runtime.deviceSynchronize()
            start = time.perf_counter()
            if name == "in the graph":
                solver.advance(args.steps)
            else:
                for _ in range(args.steps):
                    solver._runge_kutta(solver.discretisation.local_time_steps())
            cupy.cuda.runtime.deviceSynchronize()
            ms = (time.perf_counter() - start) / args.steps * 1e3
            print(f"p = {degree}, time steps {name}: {ms:.3f} ms/step", flush=True)


if __name__ == "__main__":
    main()
