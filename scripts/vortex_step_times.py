"""Time the vortex method's whole step on the paper's timing case.

Usage: ``python scripts/vortex_step_times.py [--panels 2576] [--steps 40] [--timed 10]
[--precision fp32] [--method direct]``. A plate of relative thickness 2% with rounded ends
(``vortex-methods-cuda``: Blasius case, n = 2,576 elements born per step) at Re 1000,
stepped on the GPU until the wake has grown; prints per step: elements and milliseconds
(every stage included: generation, both velocities, restructuring, loads), and the GPU
memory in use against the paper's model 8 n^2 + 96 N bytes. ``--phases`` then times each
stage of a step on the final wake alone (``cupyx.profiler.benchmark``: GPU and host
milliseconds per call), to show where the step's time goes.
"""

import argparse
import time

import cupy
from cupyx.profiler import benchmark

from gpusolver.solvers.vortex import device, restructure
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
    parser.add_argument("--phases", action="store_true",
                        help="then time each stage of a step on the final wake")
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
    if args.phases:
        print_phases(solver)


def print_phases(solver: VortexSolver) -> None:
    """Each stage of a step on the solver's present wake, timed alone."""
    be, xp = solver.backend, solver.xp
    positions, gammas = solver.positions, solver.gammas
    p32 = xp.ascontiguousarray(positions.astype(solver.dtype))
    g32 = xp.ascontiguousarray(gammas.astype(solver.dtype))
    radii = device.domain_radii(be, p32, solver.radius_floor)
    intensity = solver.sheet_intensity()
    out = xp.zeros_like(positions)
    moved = positions + solver.settings.dt * solver.convective_velocity(positions, gammas)
    merge_radii = solver.merge_radii(positions)
    partner = device.partners(be, positions, gammas, merge_radii)
    phases = {
        "sheet intensities (mean tangential + inverse)": lambda: solver.sheet_intensity(),
        "convective (Biot-Savart)": lambda: solver.convective_velocity(positions, gammas),
        "sheet velocity at the wake": lambda: solver._add_sheet_velocity(positions, intensity,
                                                                         out),
        "domain radii": lambda: device.domain_radii(be, p32, solver.radius_floor),
        "wake sums I1 I2": lambda: device.wake_sums(be, p32, g32, radii),
        "surface sums I0 I3": lambda: device.surface_sums(be, p32, radii, solver.panels),
        "surface sums and wall vorticity (friction)": lambda: device.surface_sums(
            be, p32, radii, solver.panels, g32),
        "diffusive (all of it)": lambda: solver.diffusive_velocity(positions, gammas),
        "absorbed": lambda: solver._absorbed(positions, moved),
        "merging radii": lambda: solver.merge_radii(positions),
        "merging partners": lambda: device.partners(be, positions, gammas, merge_radii),
        "merging applied": lambda: restructure.apply_merges(positions, gammas, partner),
        "merging (all of it)": lambda: solver._merge(positions, gammas),
        "whole step": solver.step,
    }
    print(f"\nstages on the wake of {len(gammas)} elements:\n")
    print("| stage | GPU ms | host ms |")
    print("| --- | --- | --- |")
    for name, call in phases.items():
        result = benchmark(call, n_repeat=10, n_warmup=2)
        print(f"| {name} | {1e3 * result.gpu_times.mean():.3f} | "
              f"{1e3 * result.cpu_times.mean():.3f} |", flush=True)


if __name__ == "__main__":
    main()
