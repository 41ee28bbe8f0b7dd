"""The backends: one timing helper, one precision table."""

import time

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend


def test_median_seconds_skips_the_warm_up_runs():
    calls = []

    def work():
        time.sleep(0.05 if not calls else 0.002)  # a slow first (warm-up) run
        calls.append(1)

    seconds = get_backend("numpy").median_seconds(work, repeats=3, warmup=1)
    assert len(calls) == 4
    assert 0.001 < seconds < 0.02


def test_precisions_name_numpy_dtypes():
    assert {np.dtype(t).name for t in PRECISIONS.values()} == {"float64", "float32"}


def test_kernel_sources_inline_their_quoted_includes_once():
    from gpusolver.backends.cuda import kernel_source

    text = kernel_source("gpusolver.solvers.fv", "kernels/residual.cu")
    assert '#include "' not in text
    assert text.count("struct Vars {") == 1  # physics/kernels/euler.cuh, inlined once
    assert text.index("void rusanov(") < text.index("void face_flux(")


def test_numpy_scatter_adds_into_rows_and_refuses_an_out_it_would_copy():
    import pytest

    scatter = get_backend("numpy").scatter["add"]
    out = np.zeros((2, 3))
    scatter(out, np.array([0, 2, 0]), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    np.testing.assert_array_equal(out, [[4.0, 0.0, 2.0], [10.0, 0.0, 5.0]])
    fortran = np.zeros((2, 2, 3), order="F")  # its rows reshaped would be a copy, and the
    with pytest.raises(ValueError):            # sums would be lost with it
        scatter(fortran, np.array([0]), np.ones((2, 2, 1)))
