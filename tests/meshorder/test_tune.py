"""The layout tuner: candidates, predictions, timers, budget, and the plan's record."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology
from meshorder.cli import main
from meshorder.errors import UsageError
from meshorder.metrics import neighbour_sectors_per_warp
from meshorder.pipeline import PlanOptions, make_plan, with_sweeps
from meshorder.plan import Plan
from meshorder.testing import grid_mesh
from meshorder.tune import (
    AUTO,
    PRUNE_FACTOR,
    TUNE_CELLS,
    TUNE_FACES,
    Layout,
    candidates,
    tune_layout,
)

from .conftest import make_square


class FakeTimer:
    """A timer whose seconds are given per cell ordering (and count its calls)."""

    device = "fake GPU"

    def __init__(self, seconds: dict[str, float], cost: float = 0.0):
        self.seconds, self.cost, self.calls = seconds, cost, []

    def __call__(self, mesh, topology, plan, precision, integrator):
        self.calls.append((plan.parameters["cells"], precision, integrator))
        return self.seconds.get(plan.parameters["cells"], 1.0)


def test_candidates_span_every_auto_option_and_keep_fixed_ones():
    assert len(candidates(AUTO, AUTO, None)) == len(TUNE_CELLS) * len(TUNE_FACES)
    assert {c.sweeps for c in candidates("rcm", "greedy", AUTO)} == {"hyperplanes", "colours"}
    assert candidates("metis", "strided", None) == [Layout("metis", "strided")]
    assert Layout("rcm", "greedy", "colours").integrator == "lusgs"


def test_a_timer_picks_the_fastest_measured_layout_and_its_plan_order():
    mesh = grid_mesh(12, 9)
    timer = FakeTimer({"rcm": 2.0, "metis": 0.5})
    layouts = [Layout("rcm", "greedy"), Layout("metis", "greedy")]
    tuning = tune_layout(mesh, PlanOptions(), layouts, timer=timer, budget_s=0.0)
    assert sorted(cells for cells, *_ in timer.calls) == ["metis", "rcm"]  # two, at least
    assert tuning.choice == Layout("metis", "greedy") and tuning.source == "measured"
    metis = next(t for t in tuning.trials if t.layout.cells == "metis")
    assert np.array_equal(tuning.cell_order, metis.cell_order)
    assert np.array_equal(np.sort(tuning.cell_order), np.arange(mesh.n_cells))
    record = tuning.record()
    assert record["device"] == "fake GPU" and record["choice"] == "metis+greedy"
    assert [c["measured_ms"] for c in record["candidates"]] == [2000.0, 500.0]
    assert all(c["predicted_ms"] > 0 for c in record["candidates"])


def test_only_candidates_predicted_near_the_best_are_timed_and_at_least_two():
    mesh = grid_mesh(10, 10)
    timer = FakeTimer({})
    tuning = tune_layout(mesh, PlanOptions(), candidates(AUTO, AUTO, AUTO), timer=timer,
                         budget_s=1e9)
    best = min(t.predicted for t in tuning.trials)
    for trial in tuning.trials:
        if trial.measured is None:
            assert trial.predicted > PRUNE_FACTOR * best
    assert len(timer.calls) >= 2


def test_a_spent_budget_stops_timing_after_two_and_says_so():
    timer = FakeTimer({})
    tuning = tune_layout(grid_mesh(8, 8), PlanOptions(), candidates(AUTO, AUTO, None),
                         timer=timer, budget_s=0.0)
    assert len(timer.calls) == 2
    assert tuning.source == f"measured 2 of {len(tuning.trials)}"


def test_without_a_timer_the_choice_is_the_best_prediction():
    tuning = tune_layout(grid_mesh(8, 6), PlanOptions(), candidates(AUTO, AUTO, "colours"))
    assert tuning.source == "predicted" and tuning.device.startswith("cost model")
    assert tuning.choice == min(tuning.trials, key=lambda t: t.predicted).layout


def test_hyperplanes_of_one_cell_each_are_predicted_far_slower_than_colours():
    # Hilbert's curve on a grid makes each cell the next one's upwind neighbour
    tuning = tune_layout(grid_mesh(16, 16), PlanOptions(), candidates("hilbert", "greedy", AUTO))
    seconds = {t.layout.sweeps: t.predicted for t in tuning.trials}
    assert seconds["hyperplanes"] > 5 * seconds["colours"]


def test_reorder_auto_records_its_candidates_and_info_prints_them(tmp_path, capsys):
    square = make_square(tmp_path / "square.msh")
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(square), str(out), "--cells", AUTO, "--faces", AUTO,
                 "--sweeps", AUTO, "--multigrid", "1", "--quiet"]) == 0
    plan = Plan.load(out)
    record = plan.metrics["tune"]
    assert len(record["candidates"]) == len(TUNE_CELLS) * len(TUNE_FACES) * 2
    assert record["choice"] == "+".join((plan.parameters["cells"], plan.parameters["faces"],
                                         "colours" if plan.parameters["sweep_colours"]
                                         else "hyperplanes"))
    assert plan.parameters["multigrid"] == 1 and plan.forward_order.size
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"layout: {record['choice']}, " in text and "predicted ms" in text


def test_renumbering_by_level_refuses_colour_sweeps(tmp_path, capsys):
    square = make_square(tmp_path / "square.msh")
    assert main(["reorder", str(square), str(tmp_path / "p.npz"), "--sweeps", "colours",
                 "--renumber-by-level"]) == 2
    assert "--renumber-by-level" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2**31 - 1))
def test_neighbour_sectors_count_distinct_sectors_per_warp_of_cells(n_cells, seed):
    rng = np.random.default_rng(seed)
    n_faces = 3 * n_cells
    faces = rng.integers(0, n_cells, size=(n_faces, 2))
    faces[rng.random(n_faces) < 0.2, 1] = -1
    inner = faces[faces[:, 1] >= 0]
    got = neighbour_sectors_per_warp(faces, n_cells, (4, 8))
    for size, per_warp in zip((4, 8), got, strict=True):
        expected = 0
        for warp in range(-(-n_cells // 32)):
            mine = set()
            for a, b in inner:
                if a // 32 == warp:
                    mine.add(b * size // 32)
                if b // 32 == warp:
                    mine.add(a * size // 32)
            expected += len(mine)
        assert per_warp * -(-n_cells // 32) == pytest.approx(expected)


def test_an_unknown_precision_or_no_candidates_is_refused_before_any_plan():
    from meshorder.errors import UsageError

    with pytest.raises(UsageError, match="tune precision 'fp16'"):
        tune_layout(grid_mesh(4, 4), PlanOptions(), candidates("rcm", "greedy", None),
                    precision="fp16")
    with pytest.raises(UsageError, match="no candidate layouts"):
        tune_layout(grid_mesh(4, 4), PlanOptions(), [])


def test_a_layout_is_read_back_from_the_options_a_plan_records():
    options = Layout("metis", "strided", "colours").options(PlanOptions(multigrid=2))
    again = PlanOptions.from_dict(options.as_dict())
    assert again == options and Layout.of(again) == Layout("metis", "strided", "colours")


@pytest.mark.parametrize("sweeps", [None, "hyperplanes", "colours"])
def test_a_plan_with_other_sweeps_is_the_plan_made_with_them(sweeps):
    mesh = grid_mesh(9, 7, "triangle")
    topology = Topology(mesh)
    made = make_plan(mesh, PlanOptions(cells="rcm", faces="strided", hyperplanes=True),
                     topology=topology)
    options = PlanOptions(cells="rcm", faces="strided", hyperplanes=sweeps is not None,
                          sweep_colours=sweeps == "colours")
    expected = make_plan(mesh, options, topology=topology, cell_order=made.cell_order)
    got = with_sweeps(made, topology, options)
    assert got.parameters == expected.parameters
    for name in ("cell_order", "face_order", "node_order", "forward_order", "forward_offsets",
                 "backward_order", "backward_offsets"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)
    levels = {k: v for k, v in expected.metrics.items() if k.startswith(("forward", "backward"))}
    assert {k: v for k, v in got.metrics.items() if k.startswith(("forward", "backward"))} == levels
    got.validate()


def test_with_sweeps_refuses_what_changes_more_than_the_sweeps():
    mesh = grid_mesh(4, 3)
    topology = Topology(mesh)
    plan = make_plan(mesh, topology=topology)
    with pytest.raises(UsageError, match="sweep levels alone"):
        with_sweeps(plan, topology, PlanOptions(multigrid=1))
