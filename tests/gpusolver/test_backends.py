"""The backends: one timing helper, one precision table."""

import time
from pathlib import Path

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


def test_the_shared_ids_header_on_disk_is_the_generated_one():
    from gpusolver.backends import ids

    assert ids.header_path().read_text() == ids.cuda_header(), (
        "regenerate: python -m gpusolver.backends.ids")


def test_kernels_compile_with_the_python_ids_and_define_them_nowhere_else():
    """Every shared enum reaches the kernels from ``backends/ids.py`` alone: the inlined
    sources hold the generated definitions once, and no ``.cu``/``.cuh`` file defines an
    enum or constant of that name by hand."""
    import re
    from importlib import resources

    from gpusolver.backends import ids
    from gpusolver.backends.cuda import kernel_source

    for package, filename in [("gpusolver.solvers.fv", "kernels/residual.cu"),
                              ("gpusolver.solvers.dg", "kernels/dg.cu")]:
        text = kernel_source(package, filename)
        assert text.count(ids.cuda_header()) == 1
    root = Path(str(resources.files("gpusolver")))
    names = [enum.__name__ for enum in ids.ENUMS] + list(ids.CONSTANTS)
    alternatives = "|".join(names)
    pattern = re.compile(rf"enum\s+({alternatives})\s*{{|#define\s+({alternatives})\b"
                         rf"|constexpr\s+\w+\s+({alternatives})\s*=")
    sources = [*root.rglob("*.cu"), *root.rglob("*.cuh")]
    hand_written = {str(path.relative_to(root)):
                    pattern.findall(re.sub(r"//[^\n]*", "", path.read_text()))
                    for path in sources if path != ids.header_path()}
    assert not any(hand_written.values()), hand_written


def test_the_python_registries_map_onto_the_shared_ids():
    from gpusolver.backends import ids
    from gpusolver.physics.boundary import CONDITION_CODES, CONDITIONS
    from gpusolver.physics.fluxes import FLUX_CODES, FLUXES
    from gpusolver.solvers.fv.fused import ACCUMULATION, GRADIENT_CODES
    from gpusolver.solvers.fv.gradients import GRADIENTS

    # every condition has a kernel branch
    assert set(CONDITION_CODES) == set(CONDITIONS)
    assert set(CONDITION_CODES.values()) == set(ids.Condition)
    assert set(FLUX_CODES) == {*FLUXES, "jst"} and set(FLUX_CODES.values()) == set(ids.Flux)
    assert set(GRADIENT_CODES) == set(GRADIENTS)
    assert all(isinstance(code, ids.Accumulation) for code in ACCUMULATION.values())
