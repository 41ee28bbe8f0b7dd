"""Impulsively started cylinder by the vortex method: drag, lift and Strouhal number.

Usage: ``python scripts/vortex_cylinder.py --reynolds 100 [--panels 400] [--dt 0.01]
[--until 150] [--budget 400] [--far 20] [--backend cupy] [--csv loads.csv]``. Diameter 1, speed 1.
Prints every 500 steps, and at the end the mean drag coefficient, the lift's amplitude
and the Strouhal number (from the lift's zero crossings) over the last half of the run.
"""

import argparse
import csv
import time

import numpy as np

from gpusolver.solvers.vortex.body import circle
from gpusolver.solvers.vortex.solver import VortexSettings, VortexSolver


def smoothed(times: np.ndarray, values: np.ndarray, span: float = 0.5):
    """Running mean over ``span`` time units (the impulse loads are noisy step to step):
    the times and values where the window is whole."""
    window = max(1, round(span / (times[1] - times[0])))
    kernel = np.ones(window) / window
    return (np.convolve(times, kernel, mode="valid"),
            np.convolve(values, kernel, mode="valid"))


def strouhal(times: np.ndarray, lift: np.ndarray) -> tuple[float, float]:
    """The shedding frequency (diameter and speed 1) from the smoothed lift's upward zero
    crossings (mean removed, linear interpolation): one over the mean period, and half
    the spread of the periods over the frequency as its uncertainty; (nan, nan) with fewer
    than three crossings."""
    times, lift = smoothed(times, lift)
    signal = lift - lift.mean()
    up = np.flatnonzero((signal[:-1] < 0) & (signal[1:] >= 0))
    if len(up) < 3:
        return float("nan"), float("nan")
    t0, t1, s0, s1 = times[up], times[up + 1], signal[up], signal[up + 1]
    crossings = t0 - s0 * (t1 - t0) / (s1 - s0)
    periods = np.diff(crossings)
    frequency = 1.0 / periods.mean()
    return float(frequency), float(0.5 * np.ptp(1.0 / periods))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reynolds", type=float, default=100.0)
    parser.add_argument("--panels", type=int, default=400)
    parser.add_argument("--dt", type=float, default=0.01)
    parser.add_argument("--until", type=float, default=150.0)
    parser.add_argument("--budget", type=float, default=400.0)
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--far", type=float, default=20.0,
                        help="drop elements beyond this many diameters")
    parser.add_argument("--csv", default="loads.csv")
    args = parser.parse_args()
    solver = VortexSolver(circle(args.panels, 0.5),
                          VortexSettings(reynolds=args.reynolds, dt=args.dt,
                                         precision=args.precision, far_distance=args.far),
                          backend=args.backend)
    rows, start = [], time.perf_counter()
    while solver.time < args.until and time.perf_counter() - start < args.budget:
        loads = solver.step()
        rows.append((loads.time, loads.cx, loads.cy, loads.elements, loads.absorbed))
        if solver.iteration % 500 == 0:
            recent = np.array(rows[-500:])
            print(f"t {loads.time:.1f} N {loads.elements} cx {recent[:, 1].mean():.3f} "
                  f"cy {recent[:, 2].mean():+.3f} absorbed {recent[:, 4].mean():.0f} "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    data = np.array(rows)
    with open(args.csv, "w", newline="") as f:
        csv.writer(f).writerows([("time", "cx", "cy", "elements", "absorbed"), *rows])
    half = data[:, 0] > data[-1, 0] / 2
    st, spread = strouhal(data[half, 0], data[half, 2])
    print(f"Re {args.reynolds:g}: t {data[-1, 0]:.1f}, {len(data)} steps in "
          f"{time.perf_counter() - start:.0f} s; over the last half: mean CD "
          f"{data[half, 1].mean():.3f}, CL amplitude "
          f"{0.5 * np.ptp(smoothed(data[half, 0], data[half, 2])[1]):.3f}, "
          f"St {st:.4f} (+- {spread:.4f})")


if __name__ == "__main__":
    main()
