"""Impulsively started cylinder by the vortex method: drag, lift and Strouhal number.

Usage: ``python scripts/vortex_cylinder.py --reynolds 100 [--panels 400] [--dt 0.01]
[--until 150] [--budget 400] [--backend cupy] [--csv loads.csv]``. Diameter 1, speed 1.
Prints every 500 steps, and at the end the mean drag coefficient and the Strouhal number
(the lift spectrum's peak) over the last half of the run.
"""

import argparse
import csv
import time

import numpy as np

from gpusolver.solvers.vortex.body import circle
from gpusolver.solvers.vortex.solver import VortexSettings, VortexSolver


def strouhal(times: np.ndarray, lift: np.ndarray) -> float:
    """The peak of the lift's spectrum (Hann window; diameter and speed 1); its
    resolution is one over the time spanned."""
    signal = (lift - lift.mean()) * np.hanning(len(lift))
    power = np.abs(np.fft.rfft(signal)) ** 2
    frequency = np.fft.rfftfreq(len(lift), times[1] - times[0])
    return float(frequency[1 + np.argmax(power[1:])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reynolds", type=float, default=100.0)
    parser.add_argument("--panels", type=int, default=400)
    parser.add_argument("--dt", type=float, default=0.01)
    parser.add_argument("--until", type=float, default=150.0)
    parser.add_argument("--budget", type=float, default=400.0)
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--csv", default="loads.csv")
    args = parser.parse_args()
    solver = VortexSolver(circle(args.panels, 0.5),
                          VortexSettings(reynolds=args.reynolds, dt=args.dt,
                                         precision=args.precision), backend=args.backend)
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
    print(f"Re {args.reynolds:g}: t {data[-1, 0]:.1f}, {len(data)} steps in "
          f"{time.perf_counter() - start:.0f} s; mean CD over the last half "
          f"{data[half, 1].mean():.3f}; St {strouhal(data[half, 0], data[half, 2]):.4f}")


if __name__ == "__main__":
    main()
