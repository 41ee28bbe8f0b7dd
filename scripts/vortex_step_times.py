"""Time the vortex method's whole step on the paper's timing case.

Usage: ``python scripts/vortex_step_times.py [--panels 2576] [--steps 40] [--timed 10]
[--precision fp32] [--method direct]``. A plate of relative thickness 2% with rounded ends
(``vortex-methods-cuda``: Blasius case, n = 2,576 elements born per step) at Re 1000,
stepped on the GPU until the wake has grown; prints per step: elements and milliseconds
(every stage included: generation, both velocities, restructuring, loads), and the GPU
memory in use against the paper's model 8 n^2 + 96 N bytes.
"""

import argparse
import time

import cupy

from gpusolver.solvers.vortex.body import rounded_plate
from gpusolver.solvers.vortex.solver import VortexSettings, VortexSolver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=2576)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--timed", type=int, default=10)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--method", default="direct")
    parser.add_argument("--dt", type=float, default=0.002)
    args = parser.parse_args()
    settings = VortexSettings(reynolds=1000.0, dt=args.dt, precision=args.precision,
                              method=args.method)
    solver = VortexSolver(rounded_plate(args.panels, 1.0, 0.02), settings, backend="cupy")
    pool = cupy.get_default_memory_pool()
    print("| step | elements | ms per step | absorbed | merged | GPU memory used (MB) | "
          "model 8n^2+96N (MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for step in range(args.steps):
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        loads = solver.step()
        cupy.cuda.Device().synchronize()
        ms = 1e3 * (time.perf_counter() - start)
        if step >= args.steps - args.timed or step % 10 == 0:
            model = (8 * (args.panels + 1) ** 2 + 96 * loads.elements) / 1e6
            print(f"| {solver.iteration} | {loads.elements} | {ms:.2f} | {loads.absorbed} | "
                  f"{loads.merged} | {pool.used_bytes() / 1e6:.1f} | {model:.1f} |", flush=True)


if __name__ == "__main__":
    main()
