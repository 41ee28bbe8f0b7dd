"""Layouts timed on the GPU: meshorder's layout timer and ``gpusolver bench-layout``.

:class:`SolverTimer` is what ``meshorder reorder --cells auto`` finds through the
entry-point group ``meshorder.layout_timers`` (:func:`layout_timer`): it times the
benchmarks' solver (:func:`gpusolver.bench.solver.bench_solver`: Roe, least squares,
Venkatakrishnan) on a candidate plan, the fused residual for explicit runs and one LU-SGS
step (the plan's sweep levels, the fused step's CUDA graph) for implicit ones.

``gpusolver bench-layout`` times every candidate layout of each mesh in each precision,
beside what the cost model predicted for it, and what ``--cells auto`` picks with the GPU
(measured) and without it (predicted): the rows ``scripts/fit_layout_model.py`` fits the
cost model to, and the table in docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpusolver.backends import cupy_available, get_backend
from gpusolver.bench.solver import STEP_WARMUP, bench_solver
from meshorder import Mesh, Topology
from meshorder.pipeline import DEFAULT_CELLS, DEFAULT_FACES, PlanOptions
from meshorder.plan import Plan
from meshorder.tune import (
    AUTO,
    Layout,
    candidate_plans,
    candidates,
    choose,
    features,
    worth_timing,
)

#: Seconds a layout's timing aims at (fewer repeats for slow layouts, at least three).
TIMING_SECONDS = 0.1
#: Layouts predicted slower than this (seconds per evaluation: hyperplanes of one cell
#: each, as Hilbert's order makes on a periodic box) are not timed.
UNTIMED_SECONDS = 0.1
#: Columns of the markdown table of choices.
COLUMNS = ("device", "mesh", "cells", "integrator", "precision", "best", "best_ms",
           "default_ms", "default_vs_best", "measured_choice", "measured_vs_best",
           "predicted_choice", "predicted_vs_best", "timed", "tune_s", "tune_vs_1000_steps")


class SolverTimer:
    """Seconds of the benchmarks' solver on a plan (a meshorder layout timer).

    Parameters
    ----------
    backend : str
        ``cupy`` (fused kernels) or ``numpy`` (the array code: for tests on the CPU).
    repeats : int
        Timed evaluations; the median is returned.
    """

    def __init__(self, backend: str = "cupy", repeats: int = 10):
        self.backend = get_backend(backend)
        self.device = self.backend.device_name()
        self.repeats = repeats

    def __call__(self, mesh: Mesh, topology: Topology, plan: Plan, precision: str,
                 integrator: str) -> float:
        """Median seconds of the residual (``rk4``) or of an LU-SGS step (``lusgs``)."""
        return self.prepare(mesh, topology, plan, precision, integrator)()

    def prepare(self, mesh: Mesh, topology: Topology, plan: Plan, precision: str,
                integrator: str) -> Callable[[], float]:
        """The solver on ``plan``, built once; each call of the returned function times it
        again (an independent median)."""
        sweeps = Layout.of(PlanOptions.from_dict(plan.parameters)).sweeps or "hyperplanes"
        kernels = "fused" if self.backend.name == "cupy" else "arrays"
        solver = bench_solver(mesh, topology, plan, "atomic", precision, self.backend.name,
                              kernels=kernels, integrator=integrator, sweeps=sweeps)
        if integrator == "rk4":
            residual = solver.discretisation.residual
            work, warmup = (lambda: residual(solver.u)), 1
        else:
            work, warmup = solver.step, STEP_WARMUP
        once = self.backend.median_seconds(work, 1, warmup=warmup)
        # a slow layout (hyperplanes of thousands of levels) is timed fewer times
        repeats = max(3, min(self.repeats, int(TIMING_SECONDS / once)))
        return lambda: self.backend.median_seconds(work, repeats, warmup=1)


def layout_timer() -> SolverTimer | None:
    """The entry point meshorder calls: a :class:`SolverTimer` where a CUDA GPU is usable,
    else None (meshorder then predicts)."""
    return SolverTimer() if cupy_available() else None


def run_layout_benchmark(mesh: Mesh, *, precisions: list[str], sweeps: bool = True,
                         timer: SolverTimer | None = None,
                         log: Callable[[str], None] = print) -> tuple[list[dict], list[dict]]:
    """Every candidate layout of ``mesh`` timed twice and predicted, and the auto choices.

    The first timing of the candidates ``--cells auto`` times on a GPU
    (:func:`meshorder.tune.worth_timing`, with a budget large enough for all) is what it
    chooses by; the second, independent timing of every candidate is what the choices
    are judged by. LU-SGS steps (sweeping hyperplanes or colours) are timed in fp64 only.

    Returns
    -------
    trials : list of dict
        One per layout, integrator and precision: the two measured times, the predicted
        one and the cost model's features (what ``scripts/fit_layout_model.py`` fits).
    choices : list of dict
        One per integrator and precision (:data:`COLUMNS`): the best candidate, the
        default's time, what ``--cells auto`` chose with the GPU and without it, each as a
        ratio to the best, and the measured tuning's seconds against 1,000 steps.
    """
    timer = timer or SolverTimer()
    topology = Topology(mesh)
    groups = {"rk4": (candidates(AUTO, AUTO, None), precisions)}
    if sweeps:
        groups["lusgs"] = (candidates(AUTO, DEFAULT_FACES, AUTO), ["fp64"])
    name = mesh.source.split("/")[-1]
    trial_rows, choices = [], []
    for integrator, (layouts, group_precisions) in groups.items():
        started = time.perf_counter()
        trials = candidate_plans(mesh, PlanOptions(), layouts, topology=topology)
        plans_s = time.perf_counter() - started
        for precision in group_precisions:
            predicted = choose(mesh, trials, precision=precision).choice
            first, second, cost = {}, {}, {}
            for trial in trials:
                if trial.predicted > UNTIMED_SECONDS:
                    first[trial.layout] = second[trial.layout] = float("inf")
                    log(f"{name} {integrator} {precision} {trial.layout.name}: not timed "
                        f"(predicted {trial.predicted * 1e3:.4f} ms)")
                    continue
                started = time.perf_counter()
                measure = timer.prepare(mesh, topology, trial.plan, precision, integrator)
                first[trial.layout] = measure()
                cost[trial.layout] = time.perf_counter() - started
                second[trial.layout] = measure()
                trial_rows.append({
                    "device": timer.device, "mesh": name, "n_cells": mesh.n_cells,
                    "layout": trial.layout.name, "integrator": integrator,
                    "precision": precision, "measured_ms": second[trial.layout] * 1e3,
                    "first_ms": first[trial.layout] * 1e3,
                    "predicted_ms": trial.predicted * 1e3, **features(trial.plan, precision),
                    **{k: trial.plan.metrics[k] for k in ("mean_span", "bandwidth")}})
                log(f"{name} {integrator} {precision} {trial.layout.name}: "
                    f"{first[trial.layout] * 1e3:.4f} / {second[trial.layout] * 1e3:.4f} ms "
                    f"(predicted {trial.predicted * 1e3:.4f})")
            # what --cells auto times with the GPU (an unlimited budget), and chooses
            timed = [trial.layout for trial in worth_timing(trials)]
            measured = min(timed, key=first.get)
            tune_s = plans_s + sum(cost[layout] for layout in timed)
            choices.append(_choice_row(name, mesh.n_cells, timer.device, integrator,
                                       precision, second, measured, predicted, tune_s,
                                       len(timed)))
    return trial_rows, choices


def _choice_row(mesh: str, cells: int, device: str, integrator: str, precision: str,
                times: dict[Layout, float], measured: Layout, predicted: Layout,
                tune_s: float, n_timed: int) -> dict:
    """The choices of one mesh, integrator and precision against the best candidate."""
    best = min(times, key=times.get)
    # the default plan's layout; LU-SGS with the colour sweeps of the shipped cases
    default = Layout(DEFAULT_CELLS, DEFAULT_FACES, "colours" if integrator == "lusgs" else None)
    # a step: four residuals for RK4 (the explicit default), one LU-SGS step
    step_s = times[measured] * (4 if integrator == "rk4" else 1)
    return {"device": device, "mesh": mesh, "cells": cells,
            "integrator": integrator, "precision": precision, "best": best.name,
            "best_ms": times[best] * 1e3, "default": default.name,
            "default_ms": times[default] * 1e3,
            "default_vs_best": times[default] / times[best],
            "measured_choice": measured.name, "measured_vs_best": times[measured] / times[best],
            "predicted_choice": predicted.name,
            "predicted_vs_best": times[predicted] / times[best],
            "timed": f"{n_timed} of {len(times)}", "tune_s": tune_s,
            "tune_vs_1000_steps": tune_s / (1000 * step_s)}
