"""gpusolver's layout timer: what ``meshorder reorder --cells auto`` times on a GPU."""

from importlib.metadata import entry_points

import numpy as np
import pytest

from gpusolver.bench.layout import SolverTimer, layout_timer, run_layout_benchmark
from meshorder import Topology
from meshorder.pipeline import PlanOptions
from meshorder.testing import grid_mesh
from meshorder.tune import AUTO, TIMER_GROUP, candidates, tune_layout


def test_gpusolver_registers_its_layout_timer_for_meshorder():
    points = {p.name: p.value for p in entry_points(group=TIMER_GROUP)}
    assert points.get("gpusolver") == "gpusolver.bench.layout:layout_timer"


def test_the_timer_times_residuals_and_lusgs_steps_of_candidate_plans():
    mesh = grid_mesh(10, 8)
    timer = SolverTimer("numpy", repeats=2)
    tuning = tune_layout(mesh, PlanOptions(), candidates(AUTO, "greedy", "colours"),
                         timer=timer, budget_s=1e9)
    timed = [t for t in tuning.trials if t.measured is not None]
    assert len(timed) >= 2 and all(t.measured > 0 for t in timed)
    assert tuning.device == "cpu"


def test_the_layout_benchmark_judges_every_choice_against_the_best():
    trials, choices = run_layout_benchmark(grid_mesh(9, 7), precisions=["fp64"],
                                           timer=SolverTimer("numpy", repeats=1),
                                           log=lambda line: None)
    assert {row["integrator"] for row in choices} == {"rk4", "lusgs"}
    for row in choices:
        assert row["measured_vs_best"] >= 1.0 and row["predicted_vs_best"] >= 1.0
        assert row["default_vs_best"] >= 1.0 and row["tune_s"] > 0
    assert all(np.isfinite(row["measured_ms"]) for row in trials)


@pytest.mark.gpu
def test_on_the_gpu_the_timer_is_found_and_times_the_fused_kernels():
    timer = layout_timer()
    assert timer is not None and timer.device != "cpu"
    mesh = grid_mesh(40, 30)
    topology = Topology(mesh)
    tuning = tune_layout(mesh, PlanOptions(), candidates(AUTO, AUTO, None), topology=topology,
                         timer=timer, budget_s=1e9)
    seconds = [t.measured for t in tuning.trials if t.measured is not None]
    assert len(seconds) >= 2 and 0 < min(seconds) < 1e-2
