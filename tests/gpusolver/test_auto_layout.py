"""Layouts chosen by timing: gpusolver's layout timer (what ``meshorder reorder --cells
auto`` times on a GPU) and ``[run] strategy = "auto"``."""

from importlib.metadata import entry_points

import numpy as np
import pytest

from gpusolver.bench.layout import SolverTimer, layout_timer, run_layout_benchmark
from gpusolver.solvers.fv import Gas, Solver
from gpusolver.solvers.fv.fused import ACCUMULATION
from gpusolver.solvers.fv.layout_check import layouts_to_check, predicted_layout, recheck_layout
from gpusolver.solvers.fv.solver import AUTO_BLOCKS, AUTO_STRATEGIES
from meshorder import Topology
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.plan import Plan
from meshorder.testing import grid_mesh
from meshorder.tune import AUTO, PRUNE_FACTOR, TIMER_GROUP, candidates, tune_layout


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
        mine = [t for t in trials if t["integrator"] == row["integrator"]]
        best = min(mine, key=lambda t: t["measured_ms"])
        assert (row["best"], row["best_ms"]) == (best["layout"], best["measured_ms"])
        # the measured choice: the fastest first timing of those the tuner times (predicted
        # near the best, at least two); the predicted choice: the best prediction
        ranked = sorted(mine, key=lambda t: t["predicted_ms"])
        timed = [t for k, t in enumerate(ranked)
                 if k < 2 or t["predicted_ms"] <= PRUNE_FACTOR * ranked[0]["predicted_ms"]]
        assert row["measured_choice"] == min(timed, key=lambda t: t["first_ms"])["layout"]
        assert row["predicted_choice"] == ranked[0]["layout"]
        assert row["predicted_vs_best"] == pytest.approx(ranked[0]["measured_ms"]
                                                         / best["measured_ms"])
        assert row["tune_s"] > 0
    assert len(trials) == 10 + 10 and all(np.isfinite(t["measured_ms"]) for t in trials)


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


BOX = {"left": "farfield", "right": "farfield", "bottom": "farfield", "top": "farfield"}


def _auto_and_its_choice(backend: str) -> tuple[Solver, Solver]:
    mesh, gas = grid_mesh(24, 12), Gas(dim=2, mach=0.5, aoa_deg=2.0)
    auto = Solver(mesh, gas, BOX, backend=backend, strategy="auto")
    if backend == "numpy":
        auto.fuse()  # the fused kernels compiled for the CPU
    times = auto.strategy_times
    assert set(times) == {(name, block) for name in AUTO_STRATEGIES for block in AUTO_BLOCKS}
    assert all(t > 0 for t in times.values())
    name, block = min(times, key=times.get)
    chosen = Solver(mesh, gas, BOX, backend=backend, strategy=name)
    if backend == "numpy":
        chosen.fuse()
    chosen.discretisations[0].fused.block = block  # launched as auto's choice
    return auto, chosen


@pytest.mark.parametrize("backend", ["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def test_strategy_auto_keeps_the_faster_accumulation_and_its_answer(backend):
    auto, chosen = _auto_and_its_choice(backend)
    seed = 5
    print(f"seed {seed}")
    start = auto.conserved()  # the free stream's residual is round-off: perturb it
    start = start * (1 + 0.01 * np.random.default_rng(seed).standard_normal(start.shape))
    auto.set_conserved(start)
    chosen.set_conserved(start)
    note = auto.take_notes()
    assert len(note) == 1 and note[0].startswith("strategy auto: the fused residual took")
    kept, block = min(auto.strategy_times, key=auto.strategy_times.get)
    assert note[0].endswith(f"{kept} with {block} threads per block kept")
    fused = auto.discretisations[0].fused
    assert (fused.accumulation, fused.block) == (ACCUMULATION[kept], block)
    for _ in range(3):
        np.testing.assert_allclose(auto.step(), chosen.step(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(auto.conserved(), chosen.conserved(), rtol=1e-12, atol=1e-14)


def test_strategy_auto_tries_no_block_larger_than_the_kernels_launch_bounds():
    import re
    from pathlib import Path

    import gpusolver.solvers.fv.fused as fused

    source = (Path(fused.__file__).parent / fused.SOURCE).read_text()
    bounds = {name: int(bound) for bound, name in re.findall(
        r"__launch_bounds__\((\d+)\)\s+(\w+)_kernel", source)}
    assert {"gradients", "flux", "update"} <= set(bounds)  # the kernels it launches
    assert max(AUTO_BLOCKS) <= min(bounds[name] for name in ("gradients", "flux", "update"))


def test_strategy_auto_in_array_code_is_atomic_and_says_nothing():
    auto = Solver(grid_mesh(6, 4), Gas(dim=2, mach=0.5), BOX, backend="numpy", strategy="auto")
    assert auto.strategy_times is None and auto.take_notes() == []
    assert auto.discretisations[0].accumulator_name == "atomic"


def test_a_predicted_layout_is_rechecked_by_timing_the_cases_solver(tmp_path):
    mesh, gas = grid_mesh(16, 10), Gas(dim=2, mach=0.5)
    tuning = tune_layout(mesh, PlanOptions(), candidates(AUTO, AUTO, None))
    plan = make_plan(mesh, tuning.choice.options(PlanOptions()), cell_order=tuning.cell_order)
    plan.metrics["tune"] = tuning.record()
    plan.save(tmp_path / "plan.npz")
    plan = Plan.load(tmp_path / "plan.npz")
    assert predicted_layout(plan)
    layouts = layouts_to_check(plan)
    assert len(layouts) >= 2 and layouts[0] == tuning.choice

    def make(layout_plan):
        return Solver(mesh, gas, BOX, backend="numpy", plan=layout_plan)

    made = []
    solver = recheck_layout(mesh, plan, make(plan), lambda p: made.append(p) or make(p))
    assert len(made) == len(layouts) - 1
    (note,) = solver.take_notes()
    assert note.startswith("layout re-checked on the GPU (the plan's was predicted): ")
    assert all(layout.name in note for layout in layouts)
    kept = solver.plan.parameters
    assert f"{kept['cells']}+{kept['faces']}" in note.rsplit(";", 1)[1]
