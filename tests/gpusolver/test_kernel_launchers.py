"""Launcher checks of ``gpusolver.solvers.fv.face_kernels`` that fail before any GPU work."""

import numpy as np
import pytest

from gpusolver.backends import cuda
from gpusolver.layout.faces import FaceLayout
from gpusolver.solvers.fv import face_kernels as kernels


def star(n_faces: int) -> FaceLayout:
    """Cell 0 with ``n_faces`` interior faces, one to each of cells 1..n_faces."""
    return FaceLayout(left=np.zeros(n_faces, dtype=np.int32),
                      right=np.arange(1, n_faces + 1, dtype=np.int32),
                      normal=np.zeros((3, n_faces)), area=np.ones(n_faces))


def test_unknown_strategy_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown strategy 'magic'; valid: atomic, colour"):
        kernels.FaceFlux(star(3), 4, "magic")


def test_flat_colouring_needs_the_plan_colours():
    with pytest.raises(ValueError, match="'colour' needs the plan's face colours"):
        kernels.FaceFlux(star(3), 4, "colour")


def test_gather_refuses_cells_with_more_than_six_faces():
    with pytest.raises(ValueError, match="at most 6 faces, this mesh has 7"):
        kernels.FaceFlux(star(7), 8, "gather")


@pytest.mark.parametrize(("out", "index", "values", "error", "message"), [
    (np.zeros((2, 5)), np.zeros(3, np.int64), np.zeros((2, 3), np.float32), TypeError,
     "values have dtype float32, expected float64"),
    (np.zeros((2, 5)), np.zeros(3, np.int32), np.zeros((2, 3)), TypeError,
     "index has dtype int32, expected int64"),
    (np.zeros((2, 5)), np.zeros(3, np.int64), np.zeros((3, 3)), ValueError,
     "differ in leading shape"),
    (np.zeros((5, 2)).T, np.zeros(3, np.int64), np.zeros((2, 3)), ValueError,
     "out must be C-contiguous"),
])
def test_scatter_checks_its_arrays(out, index, values, error, message):
    with pytest.raises(error, match=message):
        cuda.scatter("min", out, index, values)
