"""Biot-Savart velocities of vortex elements: exact solutions, the kernel against the
NumPy reference (host compile on CPU, CUDA on the GPU), and the API's refusals."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.backends import get_backend
from gpusolver.backends.host import compiler
from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.biot_savart import _pair_kernel_velocity, direct_velocity
from gpusolver.vortex import velocity

HOST = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
TOLERANCE = {"fp64": 1e-12, "fp32": 1e-5}


def test_a_single_vortex_is_a_point_vortex_outside_its_core_and_turns_solidly_inside():
    eps = 0.1
    angle = np.linspace(0, 2 * np.pi, 7)
    for radius in (0.03, 0.07, 0.5, 3.0):
        targets = radius * np.column_stack([np.cos(angle), np.sin(angle)])
        got = velocity([[0.0, 0.0]], [2.0], eps, targets)
        speed = 2.0 / (2 * math.pi) * (radius / eps**2 if radius < eps else 1 / radius)
        tangent = np.column_stack([-np.sin(angle), np.cos(angle)])  # counter-clockwise
        np.testing.assert_allclose(got, speed * tangent, rtol=1e-13, atol=1e-15)


def test_an_element_induces_nothing_at_its_own_centre_and_a_pair_co_rotates():
    got = velocity([[0.0, 0.0], [2.0, 0.0]], [1.0, 1.0], 0.1)
    # each turns the other about the midpoint: (0, -1/(4 pi)) at the left, (0, +) at the right
    np.testing.assert_allclose(got, [[0.0, -1 / (4 * math.pi)], [0.0, 1 / (4 * math.pi)]],
                               atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(-5, 5), st.floats(-5, 5), st.floats(0.1, 10))
def test_velocity_is_linear_in_the_circulations_and_moves_with_the_elements(seed, sx, sy,
                                                                             factor):
    rng = np.random.default_rng(seed)
    positions, gammas = rng.normal(size=(40, 2)), rng.normal(size=40)
    targets = rng.normal(size=(15, 2))
    base = velocity(positions, gammas, 0.05, targets)
    np.testing.assert_allclose(velocity(positions, factor * gammas, 0.05, targets),
                               factor * base, rtol=1e-12, atol=1e-12)
    shift = np.array([sx, sy])
    np.testing.assert_allclose(velocity(positions + shift, gammas, 0.05, targets + shift), base,
                               rtol=1e-9, atol=1e-9)


def _random_elements(seed: int, n: int, m: int):
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-1, 1, (n, 2))
    positions[:5] = positions[0]  # coincident elements, and targets inside cores
    targets = np.concatenate([positions[:m // 2], rng.uniform(-1.2, 1.2, (m - m // 2, 2))])
    return positions, rng.normal(size=n), targets


def _compare(backend: str, precision: str, n: int, m: int) -> None:
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    positions, gammas, targets = _random_elements(seed, n, m)
    expected = velocity(positions, gammas, 0.01, targets)
    got = velocity(positions, gammas, 0.01, targets, backend=backend, precision=precision)
    got = got.get() if hasattr(got, "get") else got
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert error < TOLERANCE[precision], f"relative error {error:.2e} (seed {seed})"


@HOST
def test_the_kernel_compiled_for_the_cpu_equals_the_reference_in_fp32():
    _compare("numpy", "fp32", 300, 70)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("n", [1, 255, 256, 1000])  # below, at and across tile edges
def test_the_cuda_kernel_equals_the_reference(precision, n):
    _compare("cupy", precision, n, 700)  # targets across two blocks of 512


def _compare_at_the_elements(backend: str, precision: str, n: int) -> None:
    """The velocities at the elements themselves (the pair kernel) against the reference."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    positions, gammas, _ = _random_elements(seed, n, 1)
    expected = direct_velocity(positions, gammas, 0.01, positions)
    if backend == "host":  # the kernel compiled for the CPU, in the precision asked
        dtype = np.float32 if precision == "fp32" else np.float64
        got = _pair_kernel_velocity(get_backend("numpy"), positions.astype(dtype),
                                    gammas.astype(dtype), 0.01)
    else:
        got = velocity(positions, gammas, 0.01, backend=backend, precision=precision).get()
    error = np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-300)
    assert error < TOLERANCE[precision], f"relative error {error:.2e} (seed {seed})"


#: Element counts of one tile and of several (odd and even numbers of tiles of 1,024).
PAIR_COUNTS = [1, 1023, 1025, 3000, 5200]


@HOST
@pytest.mark.parametrize("n", PAIR_COUNTS)
def test_the_pair_kernel_compiled_for_the_cpu_evaluates_every_pair_once(n):
    _compare_at_the_elements("host", "fp64", n)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("n", [*PAIR_COUNTS, 20_000])  # 20,000: blocks share a tile's partners
def test_the_cuda_pair_kernel_equals_the_reference(precision, n):
    _compare_at_the_elements("cupy", precision, n)


@pytest.mark.parametrize(("args", "message"), [
    (([[0.0, 0.0, 0.0]], [1.0], 0.1), r"positions must be \(N, 2\), got shape \(1, 3\)"),
    (([[0.0, 0.0]], [1.0, 2.0], 0.1), r"gammas must be \(1,\) like the positions"),
    (([[0.0, 0.0]], [1.0], 0.0), "the core radius eps must be positive, got 0.0"),
    (([[0.0, 0.0]], [1.0], 0.1, [1.0, 2.0]), r"targets must be \(M, 2\), got shape \(2,\)"),
])
def test_bad_input_is_refused_naming_what_was_expected(args, message):
    with pytest.raises(ConfigError, match=message):
        velocity(*args)


def test_unknown_method_and_precision_are_refused_with_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown velocity method 'fmm'; valid: direct, tree"):
        velocity([[0.0, 0.0]], [1.0], 0.1, method="fmm")
    with pytest.raises(ConfigError, match="unknown precision 'fp16'; valid: fp64, fp32"):
        velocity([[0.0, 0.0]], [1.0], 0.1, precision="fp16")


def test_bench_vortex_refuses_a_bad_element_count_as_a_usage_error(capsys):
    from gpusolver.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench-vortex", "--elements", "1024,abc"])
    assert exit_info.value.code == 2
    assert "expected an integer of 1 or more, got 'abc'" in capsys.readouterr().err


@HOST
def test_the_vortex_benchmark_rows_check_the_kernel_against_the_reference():
    from gpusolver.bench.vortex import COLUMNS, run_vortex_benchmark

    rows = run_vortex_benchmark([300], ["fp32", "fp64"], repeats=1, backend="numpy",
                                log=lambda s: None)
    tree_only = {"theta", "terms"}
    assert [(r["precision"], r["method"]) for r in rows] == [
        ("fp32", "direct"), ("fp32", "direct-pairs"), ("fp64", "direct"), ("fp64", "direct-pairs")]
    assert set(COLUMNS) - tree_only <= set(rows[0])
    assert all(r["max_rel_error"] < 1e-5 for r in rows[:2])
    assert all(r["max_rel_error"] < 1e-12 for r in rows[2:])


@HOST
def test_the_vortex_benchmark_tree_rows_trace_error_against_theta():
    from gpusolver.bench.vortex import COLUMNS, run_vortex_benchmark

    rows = run_vortex_benchmark([2000], ["fp64"], repeats=1, backend="numpy",
                                log=lambda s: None, methods=("tree",), clouds=("wake",),
                                thetas=(0.3, 0.7), terms=(8,))
    assert [(r["method"], r["theta"], r["terms"]) for r in rows] == [("tree", 0.3, 8),
                                                                       ("tree", 0.7, 8)]
    assert set(COLUMNS) - {"interactions_per_s", "tflops"} <= set(rows[0])
    assert 0 < rows[0]["max_rel_error"] < rows[1]["max_rel_error"] < 1e-2


@pytest.mark.parametrize("argv, message", [
    (["--thetas", "0.5,1.5"], "expected a number between 0 and 1, got 1.5"),
    (["--thetas", "0.5,x"], "expected a number between 0 and 1, got 'x'"),
    (["--methods", "direct,fmm"], "unknown method(s) fmm; valid: direct, tree"),
    (["--clouds", "gauss"], "unknown cloud(s) gauss; valid: uniform, wake"),
])
def test_bench_vortex_refuses_bad_tree_options_as_usage_errors(argv, message, capsys):
    from gpusolver.cli import main

    try:
        code = main(["bench-vortex", *argv])
    except SystemExit as exit_info:  # argparse's own refusals
        code = exit_info.code
    assert code == 2
    assert message in capsys.readouterr().err
