"""The paper's Blasius case by the vortex method: the boundary layer of a thin plate.

Usage: ``python scripts/vortex_blasius.py [--panels 2576] [--dt 0.002] [--until 2.0]
[--average 0.5] [--backend cupy] [--precision fp32] [--merge-signs any]
[--diffusion-signs same] [--radius-floor 2] [--windows 1] [--out blasius]``.

A plate of relative thickness 2% with semicircular ends (``vortex-methods-cuda``,
section 5), length 1 from x = 0, at Re_L = 1000 in a unit stream along x. After the
start has washed past, the velocity across the upper boundary layer at x = L/3 is
averaged over the last ``--average`` time units and compared with the Blasius profile:
``u/U = f'(eta)`` and ``v sqrt(Re_x)/U = (eta f' - f)/2`` at
``eta = y sqrt(U / (nu x))``, y from the plate's upper face. The issue's bar: both within
0.03 for eta in [0, 8]. Writes ``<out>.csv`` (eta, computed and exact) and ``<out>.png``;
with ``--windows K`` also ``<out>_windows.csv``: the mean over each of K equal windows of
the averaging time (how far the unsteady wake moves the mean).
"""

import argparse
import csv
import time

import numpy as np
from scipy.integrate import solve_ivp

from gpusolver.solvers.vortex.body import rounded_plate
from gpusolver.solvers.vortex.solver import VortexSettings, VortexSolver

#: f''(0) of the Blasius equation f''' + f f'' / 2 = 0 (the classical constant).
BLASIUS_WALL_SHEAR = 0.332057336215196
THICKNESS = 0.02
STATION = 1.0 / 3.0


def blasius(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``u/U = f'`` and ``v sqrt(Re_x)/U = (eta f' - f)/2`` at ``eta`` (ascending)."""
    solution = solve_ivp(lambda _, f: [f[1], f[2], -0.5 * f[0] * f[2]], (0.0, eta[-1]),
                         [0.0, 0.0, BLASIUS_WALL_SHEAR], t_eval=eta, rtol=1e-10,
                         atol=1e-12)
    f, f1 = solution.y[0], solution.y[1]
    return f1, 0.5 * (eta * f1 - f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=2576)
    parser.add_argument("--dt", type=float, default=0.002)
    parser.add_argument("--until", type=float, default=2.0)
    parser.add_argument("--average", type=float, default=0.5)
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--merge-signs", default="any", choices=("any", "same"),
                        help="merge pairs of any sign, or of one sign only")
    parser.add_argument("--diffusion-signs", default="same", choices=("same", "any"),
                        help="diffusive velocities from the vorticity of the element's "
                             "sign, or of all elements")
    parser.add_argument("--radius-floor", type=float, default=None,
                        help="the smallest domain radius, in mean panel lengths "
                             "(default: the solver's, sqrt(10 nu dt) up to 2)")
    parser.add_argument("--windows", type=int, default=1,
                        help="also write the mean over each of this many equal windows")
    parser.add_argument("--out", default="blasius")
    args = parser.parse_args()
    reynolds = 1000.0
    body = rounded_plate(args.panels, 1.0, THICKNESS)
    floor = (None if args.radius_floor is None
             else args.radius_floor * float(body.lengths.mean()))
    solver = VortexSolver(body,
                          VortexSettings(reynolds=reynolds, dt=args.dt,
                                         precision=args.precision,
                                         merge_signs=args.merge_signs,
                                         diffusion_signs=args.diffusion_signs,
                                         radius_floor=floor),
                          backend=args.backend)
    scale = np.sqrt(STATION / reynolds)  # y per unit eta: sqrt(nu x / U)
    eta = np.linspace(0.25, 8.0, 32)
    probes = np.column_stack([np.full_like(eta, STATION), THICKNESS / 2 + eta * scale])
    sums, counts = np.zeros((args.windows, len(eta), 2)), np.zeros(args.windows, dtype=int)
    start = time.perf_counter()
    while solver.time < args.until - 1e-9:
        loads = solver.step()
        since = solver.time - (args.until - args.average)
        if since > 0:
            window = min(int(since / args.average * args.windows), args.windows - 1)
            sums[window] += solver.backend.to_host(solver.flow_velocity(probes))
            counts[window] += 1
        if solver.iteration % 100 == 0:
            print(f"t {loads.time:.3f} N {loads.elements} absorbed {loads.absorbed} "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    samples = int(counts.sum())
    mean = sums.sum(axis=0) / samples
    v_scale = np.sqrt(reynolds * STATION)
    u, v = mean[:, 0], mean[:, 1] * v_scale
    u_exact, v_exact = blasius(eta)
    if args.windows > 1:
        windows = sums / counts[:, None, None]
        rows = [(k, e, w[0], w[1] * v_scale) for k in range(args.windows)
                for e, w in zip(eta, windows[k], strict=True)]
        np.savetxt(f"{args.out}_windows.csv", rows, delimiter=",", fmt="%.6g",
                   header="window,eta,u,v_sqrt_re_x", comments="")
    with open(f"{args.out}.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("eta", "u", "u_blasius", "v_sqrt_re_x", "v_blasius"))
        writer.writerows(zip(eta, u, u_exact, v, v_exact, strict=True))
    print(f"{args.panels} panels, dt {args.dt}, t {solver.time:.2f} ({samples} samples), "
          f"N {solver.n_elements}, {time.perf_counter() - start:.0f} s: max |u - u_B| "
          f"{np.abs(u - u_exact).max():.3f}, max |v - v_B| sqrt(Re_x) "
          f"{np.abs(v - v_exact).max():.3f} over eta in [0.25, 8]")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
    for axis, computed, exact, label in ((axes[0], u, u_exact, "u / U"),
                                         (axes[1], v, v_exact, "v sqrt(Re_x) / U")):
        axis.plot(exact, eta, "k-", label="Blasius")
        axis.plot(computed, eta, "o", ms=4, label="vortex method")
        axis.set_xlabel(label)
    axes[0].set_ylabel("eta")
    axes[0].legend()
    figure.suptitle(f"Plate 2%, Re_L 1000, x = L/3, {args.panels} panels")
    figure.tight_layout()
    figure.savefig(f"{args.out}.png", dpi=120)


if __name__ == "__main__":
    main()
