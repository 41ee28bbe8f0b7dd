"""Vortex shedding behind a cylinder with the Navier-Stokes DG solver: Strouhal number.

The RKDG paper's case: M 0.2, Re 100 on the diameter, adiabatic no-slip wall, far field 20
diameters out (``meshorder generate cylinder``). The flow starts from the free stream with a
weak vortex behind the cylinder, which breaks the symmetry so that shedding sets in within
a few tens of convective times instead of waiting for round-off. Each degree after the first
starts from the previous one's last state (the modal bases are hierarchical: the higher
modes start at zero). The lift coefficient is recorded every ``--record-every`` steps;
the Strouhal number ``f D / U`` is one over the mean period between upward crossings of the
mean lift over the last ``--periods`` periods after ``--settle`` convective times.

Writes ``strouhal.json`` (per degree: Strouhal number, the periods' spread, mean drag,
lift amplitude, steps, seconds per step) and ``lift_p<degree>.csv`` under ``--out``.

Run on a GPU: ``python scripts/dg_cylinder_strouhal.py --backend cupy --out results``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from gpusolver.errors import SolverDivergedError
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.reference import n_modes
from gpusolver.solvers.dg.solver import DGSolver
from meshorder import read_mesh
from meshorder.generate import generate

#: The case: Mach number, Reynolds number on the diameter, diameter.
MACH, REYNOLDS, DIAMETER = 0.2, 100.0, 1.0
#: The reference Strouhal number the issue quotes.
REFERENCE = 0.165


def kicked(gas: Gas, points: np.ndarray, circulation: float = 0.2,
           centre: tuple[float, float] = (1.5, 0.3), core: float = 0.5) -> np.ndarray:
    """The free stream plus a Lamb-Oseen vortex of ``circulation`` (in units of U D) at
    ``centre``: conserved states at ``points`` ``(2, n)``."""
    x, y = points[0] - centre[0], points[1] - centre[1]
    r2 = np.maximum(x * x + y * y, 1e-30)
    swirl = gas.mach * circulation / (2 * np.pi * r2) * (1 - np.exp(-r2 / core**2))
    w = np.repeat(gas.free_stream[:, None], points.shape[1], axis=1)
    w[1] -= swirl * y
    w[2] += swirl * x
    return gas.to_conserved(w)


def upward_crossings(t: np.ndarray, signal: np.ndarray) -> np.ndarray:
    """Times at which ``signal`` crosses its mean upwards (linear interpolation)."""
    s = signal - signal.mean()
    i = np.flatnonzero((s[:-1] < 0) & (s[1:] >= 0))
    return t[i] - s[i] * (t[i + 1] - t[i]) / (s[i + 1] - s[i])


def strouhal(t: np.ndarray, lift: np.ndarray, periods: int, settle: float) -> dict:
    """Strouhal number from the last ``periods`` periods of the lift history (convective
    times ``t``) after the first ``settle``; None where fewer have been recorded."""
    kept = t >= settle
    crossings = upward_crossings(t[kept], lift[kept])
    if len(crossings) < periods + 1:
        return {"strouhal": None, "periods_recorded": max(len(crossings) - 1, 0)}
    lengths = np.diff(crossings[-periods - 1:])
    window = t >= crossings[-periods - 1]
    return {"strouhal": float(DIAMETER / lengths.mean()),
            "period_spread": float((lengths.max() - lengths.min()) / lengths.mean()),
            "lift_amplitude": float(0.5 * (lift[window].max() - lift[window].min())),
            "periods_recorded": len(crossings) - 1}


def run_degree(mesh, degree: int, start: np.ndarray | None, args, out: Path) -> tuple[dict,
                                                                                      np.ndarray]:
    """Shed at ``degree`` from ``start`` (modal coefficients of a lower degree, or None:
    the kicked free stream) for ``args.time`` convective times or ``args.budget`` seconds."""
    gas = Gas(dim=2, mach=MACH, reynolds=REYNOLDS / DIAMETER)
    solver = DGSolver(mesh, gas, {"cylinder": "no-slip-adiabatic", "farfield": "farfield"},
                      degree=degree, flux="rusanov", integrator="rk4", cfl=args.cfl,
                      reference_area=DIAMETER, backend=args.backend,
                      shock_capturing=args.shock_capturing)
    if start is None:
        solver.u = solver.backend.asarray(solver.discretisation.project(
            lambda x, t: kicked(gas, x, circulation=args.kick)))
    else:
        solver.set_conserved(start)
    history, began, diverged = [], time.perf_counter(), None
    final_time = args.time * DIAMETER / gas.mach
    while solver.time < final_time and time.perf_counter() - began < args.budget:
        try:
            solver.advance(args.record_every, solver.time_step())
        except SolverDivergedError as error:
            diverged = f"t = {solver.time * gas.mach / DIAMETER:.3f}: {error}"
            break
        total = solver.wall_forces()["total"]
        history.append((solver.time * gas.mach / DIAMETER, total.lift, total.drag))
    seconds = time.perf_counter() - began
    t, lift, drag = np.array(history).T
    np.savetxt(out / f"lift_p{degree}.csv", np.array(history), delimiter=",",
               header="t_convective,cl,cd", comments="")
    result = {"degree": degree, "elements": solver.layout.n_elements,
              "dofs": solver.layout.n_elements * n_modes(degree), "steps": solver.iteration,
              "t_convective": float(t[-1]), "seconds": seconds,
              "seconds_per_step": seconds / solver.iteration,
              "mean_cd": float(drag[t >= args.settle].mean()), "diverged": diverged,
              **strouhal(t, lift, args.periods, args.settle)}
    if result["strouhal"] is not None:
        result["error_vs_0.165"] = result["strouhal"] / REFERENCE - 1
    print(json.dumps(result), flush=True)
    return result, solver.conserved()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=Path, help="a cylinder mesh (default: generate one)")
    parser.add_argument("--cells", type=int, default=3000, help="generated mesh size (about)")
    parser.add_argument("--first-layer", type=float, default=0.5,
                        help="generated mesh: first cell height over the wall cells' length")
    parser.add_argument("--degrees", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--cfl", type=float, default=0.5)
    parser.add_argument("--time", type=float, nargs="+", default=[110.0, 50.0],
                        help="convective times per degree (the last repeats)")
    parser.add_argument("--budget", type=float, nargs="+", default=[240.0],
                        help="seconds per degree (the last repeats)")
    parser.add_argument("--settle", type=float, nargs="+", default=[60.0, 10.0],
                        help="convective times before measuring, per degree (the last "
                             "repeats): shedding from the kick saturates by about 60")
    parser.add_argument("--record-every", type=int, default=20, help="steps between records")
    parser.add_argument("--periods", type=int, default=5, help="periods averaged")
    parser.add_argument("--kick", type=float, default=0.2,
                        help="circulation of the starting vortex, in U D")
    parser.add_argument("--shock-capturing", action="store_true",
                        help="the modal filter on (off by default, as in the solver)")
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--out", type=Path, default=Path("strouhal"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.mesh or generate("cylinder", args.out / "cylinder.msh", args.cells,
                                 first_layer=args.first_layer)
    mesh = read_mesh(path)
    results, state = [], None
    times = args.time + [args.time[-1]] * len(args.degrees)
    budgets = args.budget + [args.budget[-1]] * len(args.degrees)
    settles = args.settle + [args.settle[-1]] * len(args.degrees)
    for degree, duration, budget, settle in zip(args.degrees, times, budgets, settles,
                                                strict=False):
        args_for = argparse.Namespace(**{**vars(args), "time": duration, "budget": budget,
                                         "settle": settle})
        result, state = run_degree(mesh, degree, state, args_for, args.out)
        results.append(result)
    (args.out / "strouhal.json").write_text(json.dumps(
        {"case": {"mach": MACH, "reynolds": REYNOLDS, "reference": REFERENCE,
                  "mesh": str(path), "cells": mesh.n_cells, "cfl": args.cfl},
         "results": results}, indent=1))


if __name__ == "__main__":
    main()
