"""Curved elements in the modal DG solver: second-order meshes keep their walls' curvature."""

from __future__ import annotations

import numpy as np
import pytest

from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from meshorder.generate import generate
from meshorder.testing import annulus_mesh

from .dg_cases import assert_kernels_match_the_rate, assert_the_rate_conserves
from .kernel_backends import BACKENDS

GAMMA = 1.4
RING = {"inner": "slip-wall", "outer": "slip-wall"}


def swirl(points: np.ndarray, t: float, mach: float = 0.5) -> np.ndarray:
    """Isentropic swirl about the origin, ``u_theta = M c r_i / r``: a steady solution of
    the Euler equations between slip walls on circles (``r_i = 0.5``, density 1 and sound
    speed 1 there)."""
    x, y = points
    r2 = x * x + y * y
    rho = (1 + 0.5 * (GAMMA - 1) * mach**2 * (1 - 0.25 / r2)) ** (1 / (GAMMA - 1))
    pressure = rho**GAMMA / GAMMA
    speed = 0.5 * mach / r2  # u_theta / r
    u, v = -speed * y, speed * x
    return np.stack([rho, rho * u, rho * v, pressure / (GAMMA - 1) + 0.5 * rho * (u * u + v * v)])


def _ring_solver(n: int, kind: str, order: int, degree: int, **options) -> DGSolver:
    return DGSolver(annulus_mesh(2 * n, max(1, n // 4), kind, order), Gas(dim=2, mach=0.5),
                    options.pop("boundaries", RING), degree=degree, **options)


@pytest.mark.parametrize("kind", ["quad", "triangle"])
def test_curved_elements_integrate_the_rings_area_and_wall_to_fourth_order(kind):
    """Straight sides lose the ring's area and the wall's length at order 2; quadratic
    edges at order 4 (the quadrature is exact for neither)."""
    errors = {}
    for order in (1, 2):
        for n in (8, 16):
            lay = _ring_solver(n, kind, order, 2).layout
            area = sum(float(g.weights.sum()) for g in lay.groups)
            first, end = lay.markers["inner"]
            wall = float((lay.face_weights[:, None] * lay.line_jacobian[:, first:end]).sum())
            errors[order, n] = (abs(area / (0.75 * np.pi) - 1), abs(wall / np.pi - 1))
    for measure in range(2):
        straight = errors[1, 8][measure] / errors[1, 16][measure]
        curved = errors[2, 8][measure] / errors[2, 16][measure]
        print(f"{kind}: straight {straight:.2f}, curved {curved:.2f}")
        assert 3.5 < straight < 4.5 and curved > 14
        assert errors[2, 16][measure] < 1e-3 * errors[1, 16][measure]


@pytest.mark.parametrize("kind", ["quad", "triangle"])
@pytest.mark.parametrize("degree", [0, 1, 2, 3])
def test_free_stream_is_preserved_on_curved_elements(kind, degree):
    solver = _ring_solver(8, kind, 2, degree, boundaries=dict.fromkeys(RING, "farfield"))
    assert len(solver.layout.curved_faces) > 0
    assert np.abs(solver.discretisation.rate(solver.u)).max() < 1e-12


@pytest.mark.parametrize("degree", [2, 3])
def test_curved_walls_hold_the_steady_swirl_and_straight_ones_do_not(degree):
    """The rate of the exact swirl's projection (its truncation error): with straight walls
    the wall's normal is wrong by O(h) and the rate does not fall with h (measured: by
    2^0.5 a halving); with curved walls it falls about as h^p (2^1.6 at p = 2, 2^2.6 at
    p = 3)."""
    norms = {}
    for order in (1, 2):
        for n in (8, 16):
            solver = _ring_solver(n, "quad", order, degree)
            rate = solver.discretisation.rate(solver.discretisation.project(swirl))
            norms[order, n] = sum(float((np.einsum("mq,me->qe", g.values, rate[0][:, g.elements])
                                         ** 2 * g.weights).sum()) for g in solver.layout.groups)
    straight = 0.5 * np.log2(norms[1, 8] / norms[1, 16])
    curved = 0.5 * np.log2(norms[2, 8] / norms[2, 16])
    print(f"p = {degree}: rate falls at order {straight:.2f} (straight), {curved:.2f} (curved)")
    assert straight < 0.7 and curved > degree - 0.5
    assert norms[2, 16] < 0.02 * norms[1, 16]


def test_the_rate_on_curved_elements_conserves_what_the_boundary_fluxes_carry():
    solver = _ring_solver(8, "triangle", 2, 2, boundaries={"inner": "slip-wall",
                                                           "outer": "farfield"})
    assert_the_rate_conserves(solver, np.random.default_rng(5))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("kind", ["quad", "triangle"])
@pytest.mark.parametrize("reynolds", [None, 100.0], ids=["euler", "navier-stokes"])
def test_kernels_match_the_numpy_rate_on_curved_elements(backend, precision, degree, kind,
                                                         reynolds):
    """Every element of the ring is curved, every face along it too."""
    if backend == "host" and (precision == "fp32" or degree != 2):
        pytest.skip("host: fp64 at one degree is enough (compile time)")
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    wall = "no-slip-adiabatic" if reynolds else "slip-wall"
    solver = DGSolver(annulus_mesh(8, 2, kind), Gas(dim=2, mach=0.5, aoa_deg=10.0,
                                                    reynolds=reynolds),
                      {"inner": wall, "outer": "farfield"}, degree=degree)
    assert_kernels_match_the_rate(solver, backend, precision, rng)


def test_generated_second_order_walls_lie_on_the_geometry():
    """``meshorder generate cylinder --order 2``: every wall face's mid node is on the
    circle, and the DG layout maps those faces as curves."""
    mesh = generate("cylinder", None, 400, order=2)
    solver = DGSolver(mesh, Gas(dim=2, mach=0.2), {"cylinder": "slip-wall",
                                                   "farfield": "farfield"}, degree=1)
    lay = solver.layout
    first, end = lay.markers["cylinder"]
    on_wall = np.arange(first, end)
    assert np.isin(on_wall, lay.curved_faces).all()
    radius = np.linalg.norm(lay.face_points[:, :, first:end], axis=0)
    chord_radius = np.linalg.norm(lay.face_centre[:, first:end], axis=0)
    np.testing.assert_allclose(chord_radius, 0.5, rtol=1e-12)
    assert np.abs(radius - 0.5).max() < 1e-4


def test_an_element_is_mapped_by_its_corners_or_twice_as_many_nodes():
    from gpusolver.solvers.dg.layout import shape_functions

    with pytest.raises(ValueError, match="a quad is mapped by 4 or 8 nodes, not 9"):
        shape_functions("quad", np.zeros((2, 1)), 9)
