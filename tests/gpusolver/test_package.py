"""gpusolver imports without a GPU and refuses plans made for other meshes."""

import pytest

import gpusolver
from meshorder import PlanError
from meshorder.pipeline import make_plan
from meshorder.testing import grid_mesh


def test_imports_without_cupy():
    assert gpusolver.__version__


def test_plan_must_belong_to_the_mesh(tmp_path):
    mesh = grid_mesh(3, 3)
    path = tmp_path / "plan.npz"
    make_plan(mesh).save(path)
    assert gpusolver.load_plan_for(mesh, str(path)).n_cells == 9
    with pytest.raises(PlanError, match="made for another mesh"):
        gpusolver.load_plan_for(grid_mesh(3, 2), str(path))
