"""Finite-volume solver against exact solutions: free stream, Sod, oblique shock, Couette."""

import numpy as np
import pytest

from gpusolver.physics.exact import oblique_shock_angle, riemann
from meshorder import read_mesh
from meshorder.testing import grid_mesh

from .fv_cases import Gas, Scheme, Solver, Stepping, marker_names, wedge_mesh

SHARED = ["su2/mesh_NACA0012_inv.su2", "su2/mesh_cylinder_lam.su2", "su2/n0012_225-65.su2",
          "su2/mesh_brick_pyra_ffd.su2", "pyfr/euler-vortex.msh", "pyfr/inc-cylinder.msh",
          "pyfr/taylor-green.fixed.msh", "gmsh/naca_boundary_layer_2d.msh",
          "gmsh/gmsh_wing_flap_2d.msh", "gmsh/gmsh_naca12_3d_cl0.3.msh"]


@pytest.mark.parametrize("name", SHARED)
def test_free_stream_is_preserved_on_every_shared_mesh(shared_meshes, name):
    mesh = read_mesh(shared_meshes / name)
    solver = Solver(mesh, Gas(dim=mesh.dim, mach=0.6, aoa_deg=7.0),
                    {m: "farfield" for m in marker_names(mesh)}, backend="numpy",
                    scheme=Scheme(order=2))
    rate = solver.rate(solver.u)
    assert np.abs(rate).max() < 1e-10 * np.abs(solver.backend.to_host(solver.u)).max() / \
        solver.host.volume.min() ** (1 / mesh.dim)


def sod_errors(n: int, flux: str) -> np.ndarray:
    mesh = grid_mesh(n, 1)
    solver = Solver(mesh, Gas(dim=2, mach=0.5),
                    {"left": "supersonic-outflow", "right": "supersonic-outflow",
                     "bottom": "symmetry", "top": "symmetry"}, backend="numpy",
                    scheme=Scheme(flux=flux),
                    stepping=Stepping("ssprk3", cfl=0.5, local_time_step=False))
    x = solver.centroids()[0]
    solver.set_primitive(np.where(x < 0.5, np.array([[1.0, 0, 0, 1.0]]).T,
                                  np.array([[0.125, 0, 0, 0.1]]).T))
    solver.advance_to(0.2)
    w = solver.primitive()
    exact = riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), (x - 0.5) / 0.2)
    return np.array([np.abs(w[0] - exact[0]).mean(), np.abs(w[1] - exact[1]).mean(),
                     np.abs(w[-1] - exact[2]).mean()])


@pytest.mark.parametrize("flux", ["roe", "rusanov", "ausmpw+"])
def test_sod_shock_tube_converges_to_the_exact_solution(flux):
    coarse, fine = sod_errors(100, flux), sod_errors(200, flux)
    assert np.all(fine < 0.65 * coarse)  # discontinuities cap L1 order near 1
    assert fine[0] < 0.0045


def test_oblique_shock_angle_on_a_wedge():
    mach, deflection = 2.5, 10.0
    solver = Solver(wedge_mesh(45, 30, deflection), Gas(dim=2, mach=mach),
                    {"left": "supersonic-inflow", "right": "supersonic-outflow",
                     "bottom": "slip-wall", "top": "supersonic-outflow"}, backend="numpy",
                    stepping=Stepping(cfl=1.5))
    for _ in range(300):
        residual = solver.step()
    assert residual.max() < 1e-6
    w, (x, y) = solver.primitive(), solver.centroids()
    p1, p2 = 1 / 1.4, w[-1].max()
    middle = 0.5 * (p1 + p2)
    crossings = []
    for height in np.linspace(0.15, 0.6, 7):
        row = np.abs(y - height) < 0.6 / 30
        order = np.argsort(x[row])
        xs, ps = x[row][order], w[-1][row][order]
        k = int(np.argmax(ps > middle))
        crossings.append((xs[k - 1] + (middle - ps[k - 1]) / (ps[k] - ps[k - 1])
                          * (xs[k] - xs[k - 1]), height))
    xs, ys = np.array(crossings).T
    measured = np.degrees(np.arctan(np.polyfit(xs, ys, 1)[0]))
    assert measured == pytest.approx(oblique_shock_angle(mach, deflection), abs=0.5)
    # Rankine-Hugoniot pressure ratio behind the shock (theory 1.866 for M 2.5, 10 deg)
    beta = np.radians(oblique_shock_angle(mach, deflection))
    mn = mach * np.sin(beta)
    assert p2 / p1 == pytest.approx(1 + 2 * 1.4 / 2.4 * (mn**2 - 1), rel=0.05)


def test_laminar_couette_flow_matches_the_linear_profile():
    wall_speed = 0.2
    mesh = grid_mesh(3, 8)
    solver = Solver(
        mesh, Gas(dim=2, mach=wall_speed, reynolds=20.0),
        {"left": {"type": "periodic", "partner": "right"},
         "right": {"type": "periodic", "partner": "left"},
         "bottom": "no-slip-isothermal",
         "top": {"type": "no-slip-isothermal", "velocity": [wall_speed, 0.0]}},
        backend="numpy", stepping=Stepping(cfl=1.0))
    start = solver.primitive()
    start[1] *= 0.5
    solver.set_primitive(start)
    for _ in range(900):
        solver.step()
    w, (_, y) = solver.primitive(), solver.centroids()
    np.testing.assert_allclose(w[1], wall_speed * y, atol=5e-4 * wall_speed)
    np.testing.assert_allclose(w[2], 0.0, atol=1e-4 * wall_speed)
