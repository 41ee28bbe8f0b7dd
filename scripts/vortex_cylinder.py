"""Impulsively started cylinder by the vortex method: drag, lift and Strouhal number.

Usage: ``python scripts/vortex_cylinder.py --reynolds 100 [--panels 400] [--dt 0.01]
[--until 150] [--budget 400] [--far 20] [--diffusion-limit 1.5] [--merge-growth 1]
[--merge-signs any] [--merge-radius 0.3] [--diffusion-signs same] [--radius-floor 2]
[--probe 2.5,0] [--method direct] [--theta 0.4] [--kick 10,2] [--since 100]
[--checkpoint run.npz] [--backend cupy] [--csv loads.csv] [--surface surface.csv]``.
Diameter 1, speed 1. Prints every 500 steps, and at the end the mean drag coefficient
(and its friction part), the lift's amplitude
and the Strouhal number from ``--since`` on (default: the last half of the run), from
the lift's zero crossings and
from those of the cross-stream velocity at a probe in the wake (a hot wire: free of the
impulse loads' step-to-step noise). ``--surface`` gets the mean pressure and friction
coefficients along the wall over this call's steps in the last half of ``--until``.
``--kick ANGLE,DURATION`` tilts the free stream by ANGLE degrees for the first DURATION
time units, to start the shedding sooner (near Re 100 the symmetric wake's instability
grows slowly from round-off alone).
``--checkpoint`` lets a long run go on over several calls (it needs the same ``--csv``,
which holds the loads so far).
"""

import argparse
import csv
import math
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpusolver.io.checkpoint import load_checkpoint, save_checkpoint
from gpusolver.solvers.vortex.body import circle
from gpusolver.solvers.vortex.solver import VortexSettings, VortexSolver
from gpusolver.solvers.vortex.system import SurfaceMean, VortexSystem, write_surface


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
    than three crossings (or samples)."""
    if len(times) < 3:
        return float("nan"), float("nan")
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


def kick(text: str) -> tuple[float, float]:
    """``ANGLE,DURATION`` of ``--kick`` as two numbers (an argparse type)."""
    try:
        angle, duration = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ANGLE,DURATION, got {text!r}") from None
    return angle, duration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reynolds", type=float, default=100.0)
    parser.add_argument("--panels", type=int, default=400)
    parser.add_argument("--dt", type=float, default=0.01)
    parser.add_argument("--until", type=float, default=150.0)
    parser.add_argument("--budget", type=float, default=400.0)
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--method", default="direct", choices=("direct", "tree"))
    parser.add_argument("--theta", type=float, default=0.4, help="the tree's accuracy")
    parser.add_argument("--far", type=float, default=20.0,
                        help="drop elements beyond this many diameters")
    parser.add_argument("--diffusion-limit", type=float, default=1.5,
                        help="largest diffusive speed over the free stream's")
    parser.add_argument("--merge-growth", type=float, default=1.0,
                        help="the merging radius's growth per diameter from the body")
    parser.add_argument("--merge-signs", default="any", choices=("any", "same"),
                        help="merge pairs of any sign, or of one sign only")
    parser.add_argument("--radius-floor", type=float, default=None,
                        help="the smallest domain radius, in mean panel lengths "
                             "(default: the solver's, sqrt(10 nu dt) up to 2)")
    parser.add_argument("--diffusion-signs", default="same", choices=("same", "any"),
                        help="diffusive velocities from the vorticity of the element's "
                             "sign, or of all elements")
    parser.add_argument("--merge-radius", type=float, default=0.3,
                        help="the merging radius near the body, in mean panel lengths")
    parser.add_argument("--probe", default="2.5,0.0",
                        help="x,y of the point (diameters from the centre) whose cross-stream "
                             "velocity is recorded every --probe-every steps")
    parser.add_argument("--probe-every", type=int, default=5)
    parser.add_argument("--kick", type=kick, default=(0.0, 0.0),
                        help="ANGLE,DURATION: the free stream tilted by ANGLE degrees "
                             "until t = DURATION")
    parser.add_argument("--since", type=float, default=None,
                        help="the means and Strouhal numbers over t >= this "
                             "(default: the last half)")
    parser.add_argument("--checkpoint", default=None,
                        help="npz to continue from when it exists, and to leave at the end")
    parser.add_argument("--csv", default="loads.csv")
    parser.add_argument("--surface", default="surface.csv")
    args = parser.parse_args()
    settings = VortexSettings(reynolds=args.reynolds, dt=args.dt,
                              precision=args.precision, far_distance=args.far,
                              diffusion_limit=args.diffusion_limit,
                              merge_growth=args.merge_growth,
                              merge_signs=args.merge_signs,
                              diffusion_signs=args.diffusion_signs,
                              merge_radius=args.merge_radius * np.pi / args.panels,
                              radius_floor=(None if args.radius_floor is None else
                                            args.radius_floor * np.pi / args.panels),
                              method=args.method, theta=args.theta)
    body = circle(args.panels, 0.5)
    solver = VortexSolver(body, settings, backend=args.backend)
    kick_angle, kick_until = args.kick
    probe = np.array([[float(v) for v in args.probe.split(",")]])
    rows = []
    surface = SurfaceMean(args.panels)
    if args.checkpoint and os.path.exists(args.checkpoint):  # the loads so far in --csv
        system = VortexSystem(solver)
        system.restore(load_checkpoint(Path(args.checkpoint), system.identity()))
        rows = [tuple(row) for row in np.atleast_2d(np.loadtxt(args.csv, delimiter=",",
                                                                skiprows=1))]
    start = time.perf_counter()
    if solver.time < kick_until:
        angle = math.radians(kick_angle)
        kicked = VortexSolver(body, replace(settings, free_stream=(math.cos(angle),
                                                                   math.sin(angle))),
                              backend=args.backend)
        kicked.set_state(solver.positions, solver.gammas, solver.time, solver.iteration,
                         solver.far_circulation)
        while kicked.time < kick_until - 0.5 * args.dt:
            loads = kicked.step()
            rows.append((loads.time, loads.cx, loads.cy, loads.elements, loads.absorbed,
                         np.nan, loads.cx_friction))
        solver.set_state(kicked.positions, kicked.gammas, kicked.time, kicked.iteration,
                         kicked.far_circulation)
    while solver.time < args.until - 0.5 * args.dt and time.perf_counter() - start < args.budget:
        loads = solver.step()
        v = (float(solver.backend.to_host(solver.flow_velocity(probe))[0, 1])
             if solver.iteration % args.probe_every == 0 else np.nan)
        rows.append((loads.time, loads.cx, loads.cy, loads.elements, loads.absorbed, v,
                     loads.cx_friction))
        if loads.time > args.until / 2:
            surface.add(solver.surface)
        if solver.iteration % 500 == 0:
            recent = np.array(rows[-500:])
            print(f"t {loads.time:.1f} N {loads.elements} cx {recent[:, 1].mean():.3f} "
                  f"cy {recent[:, 2].mean():+.3f} absorbed {recent[:, 4].mean():.0f} "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    data = np.array(rows)
    if args.checkpoint:
        system = VortexSystem(solver)
        save_checkpoint(Path(args.checkpoint), system.identity(), system.snapshot())
    with open(args.csv, "w", newline="") as f:
        csv.writer(f).writerows([("time", "cx", "cy", "elements", "absorbed", "probe_v",
                                  "cx_friction"), *rows])
    if surface.steps:
        write_surface(Path(args.surface), solver.body, surface)
    half = data[:, 0] >= (data[-1, 0] / 2 if args.since is None else args.since)
    st, spread = strouhal(data[half, 0], data[half, 2])
    sampled = half & np.isfinite(data[:, 5])
    st_probe, spread_probe = strouhal(data[sampled, 0], data[sampled, 5])
    print(f"Re {args.reynolds:g}: t {data[-1, 0]:.1f}, {len(data)} steps, "
          f"{time.perf_counter() - start:.0f} s this run; from t {data[half, 0][0]:.1f}: mean CD "
          f"{data[half, 1].mean():.3f} (friction {data[half, 6].mean():.3f}), CL amplitude "
          f"{0.5 * np.ptp(smoothed(data[half, 0], data[half, 2])[1]):.3f}, "
          f"St {st:.4f} (+- {spread:.4f}) from the lift, {st_probe:.4f} "
          f"(+- {spread_probe:.4f}) from the probe")


if __name__ == "__main__":
    main()
