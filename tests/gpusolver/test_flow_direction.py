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


def _wing_case(tmp_path, mesh_file, name, mesh_keys="", run_keys=""):
    case = tmp_path / f"{name}.toml"
    case.write_text(f'[mesh]\nfile = "{mesh_file}"\n{mesh_keys}\n[physics]\nmach = 0.6\n'
                    'aoa_deg = 3.0\nlift_axis = "y"\n[boundaries]\nwing = "slip-wall"\n'
                    'symmetry = "symmetry"\nfarfield = "farfield"\n[run]\nbackend = "numpy"\n'
                    f'time_integrator = "rk4"\ncfl = 0.5\niterations = 2\n{run_keys}\n'
                    f'[output]\ndirectory = "{name}"\n')
    return case


@pytest.mark.parametrize(("lift_axis", "sideslip", "angle"), [
    ("z", 0.0, "3"), ("y", 0.0, None), ("y", 4.0, "4")])
def test_a_free_stream_through_the_symmetry_plane_is_named(tmp_path, lift_axis, sideslip, angle):
    """data/wing.msh is y-up (its symmetry plane z = 0): lifting along z, or sideslip,
    takes the free stream through that plane, and the log says so before the run."""
    from gpusolver.run import build_system
    from gpusolver.systems import load_case

    case = _wing_case(tmp_path, DATA / "wing.msh", "c")
    case.write_text(case.read_text().replace('lift_axis = "y"', f'lift_axis = "{lift_axis}"\n'
                                             f'sideslip_deg = {sideslip}'))
    lines = []
    build_system(load_case(case), notify=lines.append)
    crossings = [line for line in lines if "crosses the symmetry plane" in line]
    if angle is None:
        assert not crossings
    else:
        (line,) = crossings
        assert f"'symmetry' (normal z) at {angle} degrees" in line
        assert ("lift_axis = 'y' here?" in line) == (lift_axis == "z")


def test_a_mesh_in_millimetres_with_scale_has_the_loads_of_the_mesh_in_metres(tmp_path):
    """``[mesh] scale = 0.001`` on a millimetre copy of the wing (plan made for that file)
    gives the metre wing's loads; its checkpoint does not restart the unscaled case."""
    from gpusolver.run import run_case
    from gpusolver.systems import load_case
    from meshorder import write_mesh
    from meshorder.cli import main as meshorder_main

    metres = read_mesh(DATA / "wing.msh")
    write_mesh(replace(metres, points=metres.points * 1000.0), tmp_path / "wing_mm.msh")
    assert meshorder_main(["reorder", str(tmp_path / "wing_mm.msh"),
                           str(tmp_path / "mm.npz"), "--quiet"]) == 0
    expected = run_case(load_case(_wing_case(tmp_path, DATA / "wing.msh", "m")),
                        progress=False).solver.wall_forces()["total"]
    scaled = _wing_case(tmp_path, tmp_path / "wing_mm.msh", "mm",
                        'plan = "mm.npz"\nscale = 0.001')
    total = run_case(load_case(scaled), progress=False).solver.wall_forces()["total"]
    np.testing.assert_allclose([total.lift, total.drag], [expected.lift, expected.drag],
                               rtol=1e-9)
    unscaled = _wing_case(tmp_path, tmp_path / "wing_mm.msh", "again", 'plan = "mm.npz"',
                          f'restart = "{tmp_path / "mm" / "checkpoint.npz"}"')
    with pytest.raises(ConfigError, match="other physics"):
        run_case(load_case(unscaled), progress=False)
