"""Residual properties: strategies agree, conservation, precision, gradients, divergence."""

import dataclasses
import itertools

import numpy as np
import pytest

from gpusolver import SolverDivergedError
from gpusolver.errors import ConfigError
from gpusolver.layout.slots import face_slots
from gpusolver.solvers.fv.accumulate import boundary_rounds
from meshorder import read_mesh
from meshorder.testing import box_mesh, grid_mesh

from .fv_cases import FARFIELD_SQUARE, Gas, Scheme, Solver, Stepping, perturbed_solver

WALLS = {"left": "farfield", "right": "pressure-outlet", "bottom": "slip-wall",
         "top": "no-slip-adiabatic"}
SCHEMES = [Scheme("roe", 2, "least-squares", "venkatakrishnan"),
           Scheme("ausmpw+", 2, "green-gauss", "none"), Scheme("rusanov", 1)]


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: f"{s.flux}-{s.gradient}-{s.order}")
@pytest.mark.parametrize("viscous", [False, True])
def test_strategies_give_the_same_residual(scheme, viscous):
    mesh = grid_mesh(9, 7, "triangle")
    gas = Gas(dim=2, mach=0.4, aoa_deg=5.0, reynolds=100.0 if viscous else None)
    solvers = [perturbed_solver(mesh, gas=gas, boundaries=WALLS, scheme=scheme, strategy=name)
               for name in ("atomic", "colour", "reduce")]
    residuals = [solver.rate(solver.u) for solver in solvers]
    for other in residuals[1:]:
        np.testing.assert_allclose(other, residuals[0], rtol=1e-12, atol=1e-12)


def test_the_sum_of_residuals_is_the_net_boundary_flux():
    mesh = box_mesh(4, 3, 3)
    solver = perturbed_solver(mesh, gas=Gas(dim=3, mach=0.5, aoa_deg=3.0, reynolds=50.0),
                              boundaries={m: "no-slip-isothermal" if m == "zmin" else "farfield"
                                          for m in ("xmin", "xmax", "ymin", "ymax", "zmin",
                                                    "zmax")})
    residual = solver.discretisation.residual(solver.u)
    boundary = solver.discretisation.boundary_flux
    np.testing.assert_allclose(residual.sum(axis=1), -boundary.sum(axis=1), atol=1e-13)
    assert np.abs(boundary.sum(axis=1)).max() > 1e-4  # the check is not vacuous


def test_fp32_matches_fp64_to_single_precision():
    mesh = grid_mesh(8, 8, "triangle")
    r64 = perturbed_solver(mesh, precision="fp64")
    r32 = perturbed_solver(mesh, precision="fp32")
    assert r32.u.dtype == np.float32
    a, b = r64.rate(r64.u), r32.rate(r32.u)
    assert b.dtype == np.float32
    np.testing.assert_allclose(b, a, rtol=0, atol=2e-5 * np.abs(a).max())


@pytest.mark.parametrize("gradient", ["least-squares", "green-gauss"])
def test_gradients_of_a_linear_field(gradient):
    mesh = grid_mesh(6, 6, "triangle")
    solver = Solver(mesh, Gas(dim=2, mach=0.3), FARFIELD_SQUARE, backend="numpy",
                    scheme=Scheme(gradient=gradient))
    d = solver.discretisation
    g = d.geometry
    x, y = g.centroid
    w = np.vstack([1 + 0.1 * x + 0.2 * y, 0.3 * x, -0.1 * y, 2 + 0.05 * x])
    ni = d.n_interior
    neighbour = w[:, np.maximum(g.right, 0)].copy()
    fx, fy = g.face_centre[:, ni:]
    neighbour[:, ni:] = np.vstack([1 + 0.1 * fx + 0.2 * fy, 0.3 * fx, -0.1 * fy, 2 + 0.05 * fx])
    gradient_value = d.gradient(w[:, g.left], neighbour)
    expected = np.array([[0.1, 0.2], [0.3, 0.0], [0.0, -0.1], [0.05, 0.0]])
    tolerance = 1e-12 if gradient == "least-squares" else 1e-10
    np.testing.assert_allclose(gradient_value, expected[:, :, None] + 0 * gradient_value,
                               atol=tolerance)


def _linear_field_gradient_error(mesh, gradient: str) -> float:
    """Largest error of ``gradient``'s cell gradients of a linear field on ``mesh``."""
    solver = Solver(mesh, Gas(dim=2, mach=0.3), FARFIELD_SQUARE, backend="numpy",
                    scheme=Scheme(gradient=gradient))
    d, slope = solver.discretisation, np.array([0.3, -0.7])
    g, ni = d.geometry, d.n_interior
    value = np.tile(slope @ g.centroid, (4, 1))
    neighbour = value[:, np.maximum(g.right, 0)].copy()
    neighbour[:, ni:] = slope @ g.face_centre[:, ni:]
    return float(abs(d.gradient(value[:, g.left], neighbour) - slope[None, :, None]).max())


def test_least_squares_is_exact_on_irregular_triangles_where_green_gauss_is_not():
    """Why ``gradient = "auto"`` takes least squares in 2-D (docs/validation.md)."""
    mesh = grid_mesh(8, 8, "triangle")
    rng = np.random.default_rng(5)
    print("seed 5")
    inner = np.all((mesh.points[:, :2] > 1e-9) & (mesh.points[:, :2] < 1 - 1e-9), axis=1)
    points = mesh.points.copy()
    points[inner, :2] += rng.uniform(-0.04, 0.04, (int(inner.sum()), 2))
    irregular = dataclasses.replace(mesh, points=points)
    assert _linear_field_gradient_error(irregular, "least-squares") < 1e-12
    assert _linear_field_gradient_error(irregular, "green-gauss") > 1e-3


@pytest.mark.parametrize(("mesh", "gas", "expected"), [
    (grid_mesh(3, 3, "triangle"), Gas(dim=2, mach=0.3), "least-squares"),
    (box_mesh(2, 2, 2), Gas(dim=3, mach=0.3), "green-gauss")])
def test_auto_gradients_are_least_squares_in_2d_and_green_gauss_in_3d(mesh, gas, expected):
    box = {f"{axis}{end}": "farfield" for axis in "xyz" for end in ("min", "max")}
    solver = Solver(mesh, gas, box if mesh.dim == 3 else FARFIELD_SQUARE, backend="numpy")
    assert Scheme().gradient == "auto"
    assert solver.discretisation.scheme.gradient == expected


def test_van_albada_keeps_linear_fields_and_overshoots_a_step_by_the_threshold_only():
    mesh = grid_mesh(8, 6)  # squares: every interior face midway between its cells
    scheme = Scheme(limiter="van-albada", venkatakrishnan_k=0.1)  # eps^2 = (K h)^3 < 4e-6
    solver = Solver(mesh, Gas(dim=2, mach=0.3), FARFIELD_SQUARE, backend="numpy",
                    scheme=scheme)
    d = solver.discretisation
    g, ni = d.geometry, d.n_interior
    x, y = g.centroid
    fx, fy = g.face_centre[:, :ni]
    linear = np.vstack([1 + 0.1 * x + 0.2 * y, 0.3 * x, -0.1 * y, 2 + 0.05 * x])
    w_left, w_right, _, _ = d.face_states(linear)
    at_faces = np.vstack([1 + 0.1 * fx + 0.2 * fy, 0.3 * fx, -0.1 * fy, 2 + 0.05 * fx])
    inner = ~np.isin(g.left[:ni], g.left[ni:]) & ~np.isin(g.right[:ni], g.left[ni:])
    assert inner.sum() >= 10  # faces whose gradients see no boundary ghost
    np.testing.assert_allclose(w_left[:, :ni][:, inner], at_faces[:, inner], atol=1e-12)
    np.testing.assert_allclose(w_right[:, :ni][:, inner], at_faces[:, inner], atol=1e-12)
    step = np.where(x < 0.5, 1.0, 2.0) * np.ones((4, 1))  # density ... pressure jump by 2
    w_left, w_right, _, _ = d.face_states(step)
    for reconstructed in (w_left[:, :ni], w_right[:, :ni]):
        low = np.minimum(step[:, g.left[:ni]], step[:, g.right[:ni]])
        high = np.maximum(step[:, g.left[:ni]], step[:, g.right[:ni]])
        assert np.all(reconstructed >= low - 1e-4) and np.all(reconstructed <= high + 1e-4)


def test_boundary_rounds_never_repeat_a_cell():
    rng = np.random.default_rng(3)
    left = np.concatenate([rng.integers(0, 50, 200), rng.integers(0, 20, 60)])
    rounds = boundary_rounds(left, 200)
    assert sorted(np.concatenate(rounds)) == list(range(200, 260))
    for faces in rounds:
        assert len(np.unique(left[faces])) == len(faces)


def test_face_slots_list_every_face_side_once():
    left = np.array([0, 1, 0, 2])
    right = np.array([1, 2, -1, -1])
    table = face_slots(left, right, 3, 2)
    assert sorted(table[table < 8].tolist()) == [0, 1, 2, 3, 4, 5]
    assert sorted(table[0].tolist()) == [0, 2]
    assert sorted(face_slots(left, right, 4, 2)[3].tolist()) == [8, 8]  # a cell with no faces


def test_divergence_stops_the_run_naming_iteration_and_cell():
    mesh = grid_mesh(6, 6, "triangle")
    solver = perturbed_solver(mesh, amplitude=0.3, stepping=Stepping(cfl=40.0))
    with pytest.raises(SolverDivergedError, match=r"iteration \d+: the solution at cell \d+") \
            as error:
        for _ in range(50):
            solver.step()
    assert 1 <= error.value.iteration <= 50
    assert 0 <= error.value.cell < mesh.n_cells


def test_boundaries_must_match_the_markers():
    mesh = grid_mesh(3, 3)
    with pytest.raises(ConfigError, match="unknown marker.*wing.*no condition.*top"):
        Solver(mesh, Gas(dim=2, mach=0.5), {"left": "farfield", "right": "farfield",
                                              "bottom": "farfield", "wing": "slip-wall"},
               backend="numpy")
    with pytest.raises(ConfigError, match="valid: .*farfield"):
        Solver(mesh, Gas(dim=2, mach=0.5), FARFIELD_SQUARE | {"top": "wall"}, backend="numpy")


def test_a_plan_for_another_mesh_is_refused():
    from meshorder import PlanError
    from meshorder.pipeline import make_plan
    with pytest.raises(PlanError, match="another mesh"):
        Solver(grid_mesh(3, 3), Gas(dim=2, mach=0.5), FARFIELD_SQUARE, backend="numpy",
               plan=make_plan(grid_mesh(3, 4)))


def test_uniform_pressure_at_rest_gives_no_force_and_known_cp(shared_meshes):
    mesh = read_mesh(shared_meshes / "su2/mesh_NACA0012_inv.su2")
    gas = Gas(dim=2, mach=0.5, aoa_deg=3.0)
    solver = Solver(mesh, gas, {"airfoil": "slip-wall", "farfield": "farfield"},
                    backend="numpy")
    w = solver.primitive()
    w[1:-1] = 0.0
    w[-1] = 2.0 / gas.gamma  # twice the free-stream pressure, fluid at rest
    solver.set_primitive(w)
    solver.step(dt=np.float64(1e-9))
    assert np.abs(solver.wall_forces()["total"].force).max() < 1e-12  # closed body
    _, cp = solver.surface_pressure("airfoil")
    np.testing.assert_allclose(cp, (1.0 / gas.gamma) / gas.dynamic_pressure, rtol=1e-12)


def test_periodic_markers_must_match_by_translation():
    mesh = grid_mesh(3, 4)
    with pytest.raises(ConfigError, match="periodic 'left' has 4 faces but 'bottom' has 3"):
        Solver(mesh, Gas(dim=2, mach=0.3),
               FARFIELD_SQUARE | {"left": {"type": "periodic", "partner": "bottom"}},
               backend="numpy")
    with pytest.raises(ConfigError, match="needs partner"):
        Solver(mesh, Gas(dim=2, mach=0.3),
               FARFIELD_SQUARE | {"left": {"type": "periodic", "partner": "nowhere"}},
               backend="numpy")


def test_colour_strategy_colours_a_plan_made_without_colours():
    from meshorder.pipeline import make_plan

    mesh = grid_mesh(6, 5, "triangle")
    plain = perturbed_solver(mesh, plan=make_plan(mesh), strategy="colour", seed=2)
    atomic = perturbed_solver(mesh, plan=make_plan(mesh), strategy="atomic", seed=2)
    offsets = plain.host.interior_colours
    assert len(offsets) > 2
    for a, b in itertools.pairwise(offsets):
        cells = np.concatenate([plain.host.left[a:b], plain.host.right[a:b]])
        assert len(np.unique(cells)) == len(cells)  # no two faces of a colour share a cell
    np.testing.assert_allclose(plain.rate(plain.u), atomic.rate(atomic.u), rtol=1e-12,
                               atol=1e-12)


def test_kernel_only_strategies_are_refused_by_the_solver_with_the_valid_ones():
    with pytest.raises(ConfigError, match="'block-atomic' runs in the face-flux kernels only"):
        perturbed_solver(grid_mesh(3, 3), strategy="block-atomic")


def test_every_strategy_has_a_face_kernel_and_the_solvers_are_among_them():
    from gpusolver.layout.strategies import STRATEGIES
    from gpusolver.solvers.fv import face_kernels
    from gpusolver.solvers.fv.accumulate import STRATEGIES as SOLVER

    assert face_kernels.STRATEGIES == tuple(STRATEGIES)
    assert set(SOLVER) <= set(STRATEGIES)


def test_unknown_kernels_are_refused():
    with pytest.raises(ConfigError, match="unknown kernels 'cuda'; valid: fused, arrays"):
        Solver(grid_mesh(3, 3), Gas(dim=2, mach=0.5), FARFIELD_SQUARE, backend="numpy",
               kernels="cuda")
