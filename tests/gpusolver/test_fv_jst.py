"""The JST central scheme: free stream, conservation, its boundary Laplacian, convergence."""

from unittest.mock import patch

import numpy as np
import pytest

from gpusolver.errors import ConfigError
from gpusolver.solvers.fv import jst
from gpusolver.solvers.fv.case import scheme_of
from gpusolver.systems import load_case
from meshorder import read_mesh
from meshorder.testing import box_mesh, grid_mesh

from .fv_cases import AIRFOIL, DATA, Gas, Scheme, Solver, Stepping, perturbed_solver, steps_to_fall
from .test_run_case import write_case

BOX_MARKERS = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
MIXED_3D = {"xmin": "farfield", "xmax": "farfield", "ymin": "slip-wall", "ymax": "farfield",
            "zmin": "symmetry", "zmax": "farfield"}


def test_a_jst_scheme_has_no_reconstruction_and_roe_on_its_boundaries():
    scheme = Scheme("jst", order=2, limiter="venkatakrishnan")
    assert (scheme.order, scheme.limiter, scheme.riemann_flux) == (1, "none", "roe")
    assert scheme.first_order() == Scheme("roe", 1, limiter="none")


@pytest.mark.parametrize("mesh", [grid_mesh(8, 7, "triangle"), box_mesh(4, 3, 3)],
                         ids=["2d", "3d"])
def test_the_strategies_give_the_same_jst_residual(mesh):
    boundaries = MIXED_3D if mesh.dim == 3 else {"left": "farfield", "right": "farfield",
                                                 "bottom": "slip-wall", "top": "symmetry"}
    solvers = [perturbed_solver(mesh, gas=Gas(dim=mesh.dim, mach=0.7, aoa_deg=4.0),
                                boundaries=boundaries, scheme=Scheme("jst"), strategy=name)
               for name in ("atomic", "colour", "reduce")]
    residuals = [solver.rate(solver.u) for solver in solvers]
    assert np.abs(residuals[0]).max() > 1e-3  # a perturbed state: not vacuous
    for other in residuals[1:]:
        np.testing.assert_allclose(other, residuals[0], rtol=1e-12, atol=1e-12)


def test_jst_keeps_a_uniform_stream_and_conserves():
    mesh = box_mesh(4, 3, 3)
    gas = Gas(dim=3, mach=0.8, aoa_deg=3.0)
    uniform = Solver(mesh, gas, {m: "farfield" for m in BOX_MARKERS}, backend="numpy",
                     scheme=Scheme("jst"))
    assert np.abs(uniform.discretisation.residual(uniform.u)).max() < 1e-13
    solver = perturbed_solver(mesh, gas=gas, boundaries=MIXED_3D, scheme=Scheme("jst"))
    d = solver.discretisation
    residual = d.residual(solver.u)
    np.testing.assert_allclose(residual.sum(axis=1), -d.boundary_flux.sum(axis=1), atol=1e-13)


def test_a_wall_cells_laplacian_differences_its_mirror_image():
    """Only the normal momentum differs across a slip wall: a uniform stream in a closed
    box has a Laplacian in the wall cells' normal momenta alone. (Leaving the walls out
    made the fourth difference anti-diffusive there and the scheme blow up at wing
    tips.)"""
    mesh = grid_mesh(6, 5)
    solver = Solver(mesh, Gas(dim=2, mach=0.5), {m: "slip-wall" for m in
                                                 ("left", "right", "bottom", "top")},
                    backend="numpy", scheme=Scheme("jst"))
    velocity = np.array([0.3, 0.2])
    w = np.tile(np.array([[1.0, *velocity, 0.7]]).T, (1, solver.host.n_cells))
    solver.set_primitive(w)
    d, g, ni = solver.discretisation, solver.host, solver.host.n_interior
    w_left = d.gas.to_primitive(solver.u)[:, g.left]
    w_right = np.concatenate([w_left[:, :ni], d.ghost_states(w_left)], axis=1)
    laplacian, sensor = jst.differences(solver.u[:, g.left], d.gas.to_conserved(w_right),
                                        w_left[-1], w_right[-1], d.accumulator)
    np.testing.assert_allclose(sensor, 0.0, atol=1e-15)
    np.testing.assert_allclose(laplacian[[0, 3]], 0.0, atol=1e-14)
    x, y = g.centroid
    expected = np.zeros((2, g.n_cells))  # each wall face: -2 rho (u . n) n
    for axis, value in ((0, x.min()), (0, x.max()), (1, y.min()), (1, y.max())):
        expected[axis] -= 2 * velocity[axis] * np.isclose(g.centroid[axis], value)
    np.testing.assert_allclose(laplacian[1:3], expected, atol=1e-14)


@pytest.mark.parametrize("aspect", [1.0, 10.0, 1000.0])
def test_the_stretching_factor_grows_across_the_short_faces_of_long_cells(aspect):
    """At rest (spectral radius c A) on rectangles ``aspect`` times longer than high, every
    cell's radii sum to ``2 c (dx + dy)``: the factor is ``2 ((a + 1) / 2)^p`` across the
    short faces and ``2 ((1 + 1 / a) / 2)^p`` across the long ones (2 on squares)."""
    mesh = grid_mesh(6, 5)
    mesh.points[:, 1] /= aspect * 6 / 5  # cells 1/6 long, 1/(6 aspect) high
    solver = Solver(mesh, Gas(dim=2, mach=1e-12), {m: "farfield" for m in
                                                   ("left", "right", "bottom", "top")},
                    backend="numpy", scheme=Scheme("jst"))
    d, g, ni = solver.discretisation, solver.host, solver.host.n_interior
    w_left = d.gas.to_primitive(solver.u)[:, g.left]
    w_right = np.concatenate([d.gas.to_primitive(solver.u)[:, g.right[:ni]],
                              d.ghost_states(w_left)], axis=1)
    speed, cell = jst.spectral_radii(d.gas, w_left, w_right, g.normal, g.area, d.accumulator)
    factor = jst.stretching(cell[g.left[:ni]], cell[g.right[:ni]], (speed * g.area)[:ni])
    short = np.abs(g.normal[0, :ni]) > 0.5  # the faces between neighbours along x
    p = jst.STRETCHING
    np.testing.assert_allclose(factor[short], 2 * ((aspect + 1) / 2) ** p, rtol=1e-12)
    np.testing.assert_allclose(factor[~short], 2 * ((1 + 1 / aspect) / 2) ** p, rtol=1e-12)


def test_jst_converges_an_airfoil_without_a_limiter():
    """M 0.5, AoA 2 on the 7,960-triangle airfoil, LU-SGS with 3 coarse levels: three
    orders in about 150 steps (measured; 4.2 orders in 400). The lift approaches the
    Prandtl-Glauert estimate 2 pi alpha / sqrt(1 - M^2) = 0.25 of a thin plate."""
    solver = Solver(read_mesh(DATA / "naca0012_tri.msh"), Gas(dim=2, mach=0.5, aoa_deg=2.0),
                    AIRFOIL, scheme=Scheme("jst"), backend="numpy",
                    stepping=Stepping("lusgs", cfl=50.0, cfl_max=1e4, multigrid=3,
                                      sweeps="colours"))
    assert steps_to_fall(solver, 1e-3, 200) is not None
    assert solver.wall_forces()["total"].lift == pytest.approx(0.25, abs=0.02)


def test_jst_refuses_navier_stokes():
    with pytest.raises(ConfigError, match="'jst' is for inviscid flow"):
        Solver(grid_mesh(4, 4), Gas(dim=2, mach=0.3, reynolds=100.0),
               {m: "farfield" for m in ("left", "right", "bottom", "top")},
               backend="numpy", scheme=Scheme("jst"))


def test_a_case_file_sets_the_jst_coefficients(tmp_path):
    path = write_case(tmp_path)
    path.write_text(path.read_text().replace('flux = "roe"',
                                              'flux = "jst"\njst_k2 = 1.0\njst_k4 = 0.03'))
    scheme = scheme_of(load_case(path))
    assert (scheme.flux, scheme.jst_k2, scheme.jst_k4, scheme.order) == ("jst", 1.0, 0.03, 1)
    assert scheme.jst_stretching and scheme.stretching_power == jst.STRETCHING
    path.write_text(path.read_text().replace("jst_k4 = 0.03", "jst_stretching = false"))
    assert scheme_of(load_case(path)).stretching_power == 0.0


def test_without_the_stretching_factor_the_dissipation_is_the_plain_spectral_radius():
    """``jst_stretching = false``: the residual is the one of a factor of 1 everywhere,
    which differs from the stretched one on any mesh (twice on a regular cell)."""
    mesh = box_mesh(3, 3, 2)
    boundaries = dict.fromkeys(BOX_MARKERS, "farfield")
    residuals = {}
    for stretched in (True, False):
        solver = Solver(mesh, Gas(dim=3, mach=0.5, aoa_deg=3.0), boundaries, backend="numpy",
                        scheme=Scheme("jst", jst_stretching=stretched))
        u = solver.conserved()
        u *= 1 + 0.05 * np.random.default_rng(7).uniform(-1, 1, u.shape)
        residuals[stretched] = solver.discretisation.residual(u)
    with patch.object(jst, "stretching", lambda *args: 1.0):
        solver = Solver(mesh, Gas(dim=3, mach=0.5, aoa_deg=3.0), boundaries, backend="numpy",
                        scheme=Scheme("jst"))
        plain = solver.discretisation.residual(u)
    np.testing.assert_allclose(residuals[False], plain, rtol=1e-13, atol=1e-15)
    assert not np.allclose(residuals[True], plain)
