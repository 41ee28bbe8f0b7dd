"""Steps that keep going: per-cell relaxed updates (implicit steps, and the stages of
steady explicit ones) and the CFL number's back-off when the residual rises or stalls."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.integrators.cfl import CEILING_GROWTH, ResidualWatch
from gpusolver.integrators.relaxation import HALVINGS, relaxed_update
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv import Scheme, Stepping
from gpusolver.solvers.fv.solver import RISE, STALL_BACK_OFF, STALL_STEPS
from meshorder.testing import box_mesh, grid_mesh

from .fv_cases import perturbed_solver
from .kernel_backends import BACKENDS

GAS = Gas(dim=2, mach=0.6)


def _states(rng, n):
    w = np.repeat(GAS.free_stream[:, None], n, axis=1) * rng.uniform(0.5, 1.5, (4, n))
    return GAS.to_conserved(w)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), scale=st.floats(1e-3, 1e3), limit=st.floats(0.01, 1.0))
def test_a_relaxed_update_stays_physical_and_within_its_bound(seed, scale, limit):
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    u = _states(rng, 50)
    du = scale * rng.normal(size=u.shape) * u
    new, relaxed = relaxed_update(GAS, u, du, limit)
    assert not GAS.invalid(new).any()
    # one factor per cell scales every variable: read it where the change is largest
    largest = np.argmax(np.abs(du) / np.maximum(np.abs(u), 1e-300), axis=0)
    cells = np.arange(u.shape[1])
    alpha = (new - u)[largest, cells] / du[largest, cells]
    np.testing.assert_allclose(new - u, alpha * du, rtol=1e-6, atol=1e-9 * np.abs(u).max())
    assert np.all((alpha >= 0) & (alpha <= 1 + 1e-12))
    for row in (0, -1):  # density and energy move by at most the fraction
        assert np.all(np.abs(new[row] - u[row]) <= limit * np.abs(u[row]) * (1 + 1e-12))
    assert relaxed == np.count_nonzero((new != u + du).any(axis=0))  # alpha = 1: u + du


def test_small_updates_are_the_plain_ones_and_a_non_finite_one_stays_so():
    rng = np.random.default_rng(1)
    u = _states(rng, 20)
    du = 1e-3 * u
    new, relaxed = relaxed_update(GAS, u, du)
    np.testing.assert_array_equal(new, u + du)
    assert relaxed == 0
    du[2, 5] = np.nan
    new, _ = relaxed_update(GAS, u, du)
    assert np.isnan(new[2, 5]) and GAS.invalid(new)[5]


def test_a_cell_that_no_halving_saves_keeps_its_state():
    u = _states(np.random.default_rng(2), 3)
    du = np.zeros_like(u)
    du[-1, 1] = -(2 ** HALVINGS + 2) * u[-1, 1]  # below zero after every halving
    new, relaxed = relaxed_update(GAS, u, du, limit=None)
    np.testing.assert_array_equal(new[:, 1], u[:, 1])
    np.testing.assert_array_equal(new[:, [0, 2]], u[:, [0, 2]])
    assert relaxed == 1


def test_an_implicit_step_too_large_for_a_cell_is_relaxed_not_a_divergence():
    solver = perturbed_solver(grid_mesh(12, 12, "triangle"), amplitude=0.6, seed=3,
                              stepping=Stepping("lusgs", cfl=1e6))
    solver.step()
    assert solver.relaxed_cells > 0
    assert not solver.gas.invalid(solver.u).any()
    assert solver.monitors() == {"cfl": "1e+06", "relaxed_cells": str(solver.relaxed_cells)}


def _ramping_solver():
    return perturbed_solver(grid_mesh(6, 6, "triangle"),
                            stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4))


def test_a_rising_residual_halves_the_cfl_number_and_says_so():
    solver = _ramping_solver()
    solver.first_residual = 1.0
    for residual in (1.0, 1e-2):  # the ramp: CFL 10 / fall
        solver._adapt(residual)
    assert solver.cfl == pytest.approx(1e3)
    solver._adapt(2 * RISE * 1e-2)
    assert solver.cfl == pytest.approx(500.0)
    (note,) = solver.take_notes()
    assert "rose to 0.2, 20x its lowest; CFL number 1000 -> 500" in note
    solver._adapt(1e-3)  # falling again: the ramp is capped, the cap grows slowly
    assert 500.0 < solver.cfl < 600.0
    assert solver.take_notes() == []


def test_a_stalled_residual_halves_the_cfl_number_towards_the_first():
    solver = _ramping_solver()
    solver.first_residual = 1.0
    solver._adapt(1e-2)
    for _ in range(STALL_BACK_OFF * 8):
        solver._adapt(2e-2)  # never a new lowest
    assert solver.cfl == pytest.approx(15.625)  # halved from 1000 while twice the first
    notes = solver.take_notes()
    assert len(notes) == 6 and f"found no new lowest in {STALL_BACK_OFF} steps" in notes[0]


def test_a_stall_above_the_freezing_threshold_freezes_the_limiter_before_the_cfl_cut():
    """Limiter chatter can hold the residual above ``freeze_limiter``: the first stall of
    a limited run freezes its limiter (one note) and keeps the CFL number; the next one
    cuts the CFL number."""
    solver = perturbed_solver(grid_mesh(6, 6, "triangle"),
                              scheme=Scheme("roe", 2, limiter="venkatakrishnan"),
                              stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4,
                                                freeze_limiter=1e-2))
    solver.step()
    d = solver.discretisation
    assert d.limiter_values is not None and d.limiter_ceiling is None
    solver.take_notes()
    solver.first_residual = 1.0
    solver._adapt(1e-1)
    for _ in range(STALL_BACK_OFF):
        solver._adapt(2e-1)  # never a new lowest, ten times above freeze_limiter
    assert d.limiter_ceiling is not None
    assert solver.cfl == pytest.approx(100.0)  # the ramp's, not cut
    (note,) = solver.take_notes()
    assert note.endswith(f"found no new lowest in {STALL_BACK_OFF} steps (lowest 0.1); "
                         "the limiter is frozen from above")
    for _ in range(STALL_BACK_OFF):
        solver._adapt(2e-1)
    assert solver.cfl == pytest.approx(50.0)
    assert "CFL number 100 -> 50" in solver.take_notes()[0]


@pytest.mark.parametrize("cycle", ["auto", "v", "w"])
def test_an_auto_multigrid_cycle_turns_w_at_the_first_stall_and_only_there(cycle):
    solver = perturbed_solver(grid_mesh(16, 16, "triangle"),
                              stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4, multigrid=1,
                                                multigrid_cycle=cycle))
    first = {"auto": "1", "v": "1", "w": "2"}[cycle]
    assert solver.monitors()["multigrid_passes"] == first
    solver.first_residual = 1.0
    solver._adapt(1e-2)
    for _ in range(STALL_BACK_OFF):
        solver._adapt(2e-2)  # never a new lowest: a stall
    notes = solver.take_notes()
    if cycle == "auto":  # the first stall turns the cycle, the CFL number stays
        assert solver.monitors()["multigrid_passes"] == "2"
        assert solver.cfl == pytest.approx(1e3)
        assert len(notes) == 1 and notes[0].endswith("the multigrid cycle V -> W")
    else:  # a named cycle stays; the stall halves the CFL number
        assert solver.monitors()["multigrid_passes"] == first
        assert solver.cfl == pytest.approx(500.0)
        assert len(notes) == 1 and "CFL number 1000 -> 500" in notes[0]
    for _ in range(STALL_BACK_OFF):
        solver._adapt(2e-2)
    assert "CFL number" in solver.take_notes()[0]  # a second stall: the CFL back-off
    assert solver.multigrid.passes == int(solver.monitors()["multigrid_passes"])


def test_newton_krylov_tightens_its_linear_solves_before_it_cuts_the_cfl_number():
    stepping = Stepping("newton-krylov", cfl=10.0, cfl_max=1e4)
    solver = perturbed_solver(grid_mesh(8, 8, "triangle"), stepping=stepping)
    assert solver.monitors()["linear_tolerance"] == "0.05"
    solver.first_residual = 1.0
    solver._adapt(1e-1)
    solver._adapt(1.5 * RISE * 1e-1)  # a rise below cfl_max: the CFL number's
    assert "CFL number" in solver.take_notes()[0] and solver.newton.tolerance == 0.05
    solver._mean_watch.cap = np.inf
    solver._adapt(1e-3)  # the ramp at its end
    assert solver.cfl == 1e4
    solver._adapt(1.5 * RISE * 1e-3)  # the first rise there: tighter solves, the cap stays
    assert solver.take_notes() == ["iteration 0: the density residual rose to 0.015, 15x its "
                                   "lowest; the linear solves' tolerance 0.05 -> 1e-05 "
                                   "(100 Krylov vectors)"]
    assert solver.monitors()["linear_tolerance"] == "1e-05"
    assert (solver.newton.tolerance, solver.newton.max_vectors) == (1e-5, 100)
    numbers, arrays = solver.controls()
    assert numbers["cfl_ceiling"] == 1e4  # not cut
    again = perturbed_solver(grid_mesh(8, 8, "triangle"), stepping=stepping)
    again.set_controls(numbers, arrays)  # a restart keeps the tighter solves
    assert (again.newton.tolerance, again.newton.max_vectors) == (1e-5, 100)
    changed = perturbed_solver(grid_mesh(8, 8, "triangle"),
                               stepping=dataclasses.replace(stepping, linear_tolerance=0.1))
    changed.set_controls(numbers, arrays)  # unless the case's setting changed
    assert (changed.newton.tolerance, changed.newton.max_vectors) == (0.1, 12)
    solver._adapt(1.5 * RISE * 0.015)  # the second: the CFL number
    assert "CFL number 1e+04 -> 5000" in solver.take_notes()[0]


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.lists(st.floats(1e-8, 1e3), min_size=2, max_size=2), min_size=1,
                      max_size=30))
def test_a_residual_watch_reports_a_rise_of_any_residual_and_caps_its_growth(steps):
    watch = ResidualWatch(rise=10.0, cap=1.0, stall=5)
    lowest = np.full(2, np.inf)
    for residuals in map(np.array, steps):
        cap, why = watch.cap, watch.watch(residuals, 2.0)
        rose = (residuals > 10.0 * lowest).any()
        assert (why == "rose") == rose
        if not rose and (residuals < lowest).any():  # a new lowest grows the cap
            lowest = np.minimum(lowest, residuals)
            assert watch.cap == min(2.0, CEILING_GROWTH * cap)
        else:
            assert watch.cap == cap
        np.testing.assert_array_equal(np.broadcast_to(watch.lowest, 2), lowest)
        if why is not None:
            watch.restart(residuals)
            lowest = residuals.copy()


def test_the_history_says_when_the_limiter_froze():
    solver = perturbed_solver(grid_mesh(8, 8, "triangle"),
                              stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4,
                                                freeze_limiter=1e-1))
    solver.step()  # the limiter's first values
    assert solver.monitors()["limiter_frozen"] == "0"
    solver.first_residual = 1.0
    for _ in range(STALL_STEPS + 1):
        solver._adapt(1e-2)  # two orders down and no longer falling
    assert solver.monitors()["limiter_frozen"] == "1"
    assert "the limiter is frozen from above" in solver.take_notes()[-1]
    unfrozen = perturbed_solver(grid_mesh(8, 8, "triangle"), stepping=Stepping("lusgs"))
    assert "limiter_frozen" not in unfrozen.monitors()  # nothing to freeze: no column


def test_an_auto_multigrid_cycle_stays_v_in_3d():
    solver = perturbed_solver(box_mesh(6, 6, 6),
                              stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4, multigrid=1))
    assert solver.multigrid.levels and not solver.multigrid.deepen()
    solver.first_residual = 1.0
    solver._adapt(1e-2)
    for _ in range(STALL_BACK_OFF):
        solver._adapt(2e-2)
    assert "CFL number 1000 -> 500" in solver.take_notes()[0]
    assert solver.monitors()["multigrid_passes"] == "1"


def test_a_stall_that_flips_from_step_to_step_damps_the_coarse_correction():
    """A residual that flips up and down through a stall's window halves the coarse levels'
    weight (down to MIN_COARSE_WEIGHT), not the CFL number; a stall that does not flip cuts
    the CFL number."""
    solver = perturbed_solver(box_mesh(6, 6, 6),
                              stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4, multigrid=1))
    solver.first_residual = 1.0
    solver._adapt(1e-2)
    weights = []
    for _ in range(6):
        for k in range(STALL_BACK_OFF):
            solver._adapt(2e-2 if k % 2 else 3e-2)  # a period-2 cycle
        weights.append(solver.multigrid.weight)
    notes = solver.take_notes()
    assert weights == [0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0625]
    assert "it flips from step to step: the coarse levels' correction weighs 0.5" in notes[0]
    assert "CFL number 1000 -> 500" in notes[4]
    assert solver.cfl == 250
    for k in range(STALL_BACK_OFF):
        solver._adapt(2e-2 + 1e-3 * (k // 3 % 2))  # stalled, not flipping
    assert "CFL number 250 -> 125" in solver.take_notes()[-1]
    assert solver.multigrid.weight == 0.0625
    assert solver.monitors()["multigrid_weight"] == "0.0625"
    again = perturbed_solver(box_mesh(6, 6, 6),
                             stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4, multigrid=1))
    again.set_controls(*solver.controls())  # a restart keeps the weight
    assert again.multigrid.weight == 0.0625


def test_controls_come_back_and_a_new_cfl_starts_the_ramps_back_off_again():
    stepping = Stepping("lusgs", cfl=10.0, cfl_max=1e4, freeze_limiter=1e-1)
    solver = perturbed_solver(grid_mesh(8, 8, "triangle"), stepping=stepping)
    solver.step()
    solver.first_residual = 1.0
    solver._adapt(1e-2)
    for _ in range(STALL_BACK_OFF):
        solver._adapt(2e-2)  # a back-off and a frozen limiter
    numbers, arrays = solver.controls()
    assert set(arrays) == {"limiter_ceiling"} and numbers["cfl_ceiling"] == pytest.approx(500.0)
    again = perturbed_solver(grid_mesh(8, 8, "triangle"), stepping=stepping)
    again.set_controls(numbers, arrays)
    assert again.controls()[0] == numbers
    np.testing.assert_array_equal(again.controls()[1]["limiter_ceiling"],
                                  arrays["limiter_ceiling"])
    fresh = perturbed_solver(grid_mesh(8, 8, "triangle"), stepping=stepping)
    fresh.set_controls(numbers, arrays, ramp=False)  # the case's cfl changed
    assert fresh.controls()[0]["cfl_ceiling"] == np.inf  # the ramp's cap starts again
    assert fresh.controls()[0]["since_best"] == numbers["since_best"]


def _overshooting_rk4(**stepping):
    """RK4 far beyond its stability limit from a rough state: some stages would leave
    cells of negative density or pressure."""
    return perturbed_solver(grid_mesh(12, 12, "triangle"), amplitude=0.6, seed=3,
                            stepping=Stepping("rk4", cfl=8.0, **stepping))


def test_a_steady_explicit_step_too_large_for_a_cell_is_relaxed_not_a_divergence():
    from gpusolver.errors import SolverDivergedError

    solver = _overshooting_rk4()
    solver.step()
    assert solver.relaxed_cells > 0
    assert not solver.gas.invalid(solver.u).any()
    timed = _overshooting_rk4(local_time_step=False)  # time-accurate: nothing is scaled
    with pytest.raises(SolverDivergedError, match="non-positive density or pressure"):
        timed.step()


@pytest.mark.parametrize("backend", BACKENDS)
def test_explicit_stages_are_relaxed_alike_in_kernels_and_array_code(backend):
    """The stage update kernel scales back the same cells as the array code, by the same
    factors (compiled for the CPU, and on the GPU)."""
    reference = _overshooting_rk4()
    fused = perturbed_solver(grid_mesh(12, 12, "triangle"), amplitude=0.6, seed=3,
                             stepping=Stepping("rk4", cfl=8.0),
                             backend="cupy" if backend == "cupy" else "numpy")
    if backend == "host":
        fused.fuse()
    assert fused.fused_steps is not None and reference.fused_steps is None
    np.testing.assert_allclose(fused.step(), reference.step(), rtol=1e-12)
    assert fused.relaxed_cells == reference.relaxed_cells > 0
    np.testing.assert_allclose(fused.conserved(), reference.conserved(), rtol=1e-12,
                               atol=1e-14)


def test_a_scheme_without_a_limiter_freezes_nothing_and_says_nothing():
    """JST (as first order) has no limiter: a stalled residual below ``freeze_limiter``
    neither freezes one nor notes it at every step."""
    from gpusolver.solvers.fv import Scheme
    from gpusolver.solvers.fv.solver import STALL_STEPS

    solver = perturbed_solver(grid_mesh(6, 6, "triangle"), scheme=Scheme("jst"),
                              stepping=Stepping("lusgs", cfl=10.0, cfl_max=1e4,
                                                freeze_limiter=1e-2))
    solver.step()
    solver.first_residual = 1.0
    for _ in range(3 * STALL_STEPS):
        solver._adapt(1e-3)
    assert not [note for note in solver.take_notes() if "limiter" in note]
    assert solver.discretisations[0].limiter_ceiling is None
