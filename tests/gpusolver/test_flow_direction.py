"""The free stream's direction in 3D: a y-up mesh with ``lift_axis = "y"`` gives the
loads of the same body z-up, with and without sideslip."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gpusolver.errors import ConfigError
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv import Solver, Stepping
from meshorder import read_mesh

DATA = Path(__file__).resolve().parents[2] / "data"
WING = {"wing": "slip-wall", "symmetry": "symmetry", "farfield": "farfield"}


def _loads(mesh, gas, backend="numpy", integrator="rk4"):
    solver = Solver(mesh, gas, WING, stepping=Stepping(integrator, cfl=0.5), backend=backend)
    for _ in range(2):
        solver.step()
    total = solver.wall_forces()["total"]
    return np.array([total.lift, total.drag])


@pytest.mark.parametrize("backend, integrator", [
    ("numpy", "rk4"),
    pytest.param("cupy", "rk4", marks=pytest.mark.gpu),
    pytest.param("cupy", "lusgs", marks=pytest.mark.gpu),
])
@pytest.mark.parametrize("sideslip", [0.0, 4.0])
def test_a_y_up_mesh_lifting_along_y_has_the_z_up_loads(sideslip, backend, integrator):
    """On the CPU's array code, and on the GPU's fused RK4 and LU-SGS steps."""
    z_up = read_mesh(DATA / "wing.msh")
    # the same wing exported y-up: (x, y, z) -> (x, z, -y), a rotation
    y_up = replace(z_up, points=z_up.points[:, [0, 2, 1]] * np.array([1.0, 1.0, -1.0]))
    expected = _loads(z_up, Gas(dim=3, mach=0.6, aoa_deg=3.0, sideslip_deg=sideslip),
                      backend, integrator)
    loads = _loads(y_up, Gas(dim=3, mach=0.6, aoa_deg=3.0, lift_axis="y",
                             sideslip_deg=sideslip), backend, integrator)
    np.testing.assert_allclose(loads, expected, rtol=1e-9)
    assert abs(expected[0]) > 1e-3  # the wing lifts: the comparison is not of zeros


def test_directions_form_a_right_handed_frame_with_the_free_stream():
    gas = Gas(dim=3, mach=0.5, aoa_deg=10.0, lift_axis="y", sideslip_deg=5.0)
    flow, lift = gas.flow_direction, gas.lift_direction
    assert np.isclose(np.linalg.norm(flow), 1.0) and np.isclose(np.linalg.norm(lift), 1.0)
    assert flow[2] < 0  # sideslip towards -z, the side axis of a y-up frame
    assert lift[2] == 0.0 and lift[1] > 0.9


def test_a_2d_case_that_lifts_along_z_is_refused(tmp_path):
    from gpusolver.systems import load_case

    case = tmp_path / "c.toml"
    case.write_text(f'[mesh]\nfile = "{DATA / "naca0012_tri.msh"}"\n[physics]\nmach = 0.5\n'
                    'lift_axis = "z"\n[boundaries]\nairfoil = "slip-wall"\n'
                    'farfield = "farfield"\n')
    with pytest.raises(ConfigError, match=r"\[physics\] a 2D flow lifts along y"):
        load_case(case).gas_for(2)


def test_an_unknown_lift_axis_is_refused():
    with pytest.raises(ValueError, match="unknown lift axis 'x'; valid: z, y"):
        Gas(dim=3, mach=0.5, lift_axis="x")
