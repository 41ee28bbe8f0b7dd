"""Bodies of the vortex method: generated shapes and contours from mesh markers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.body import Body, body_from_mesh, circle, naca_airfoil, rounded_plate
from meshorder import read_mesh
from meshorder.mesh import CellBlock, Mesh


def _check_contour(body: Body) -> None:
    """Counter-clockwise, unit tangents along the panels, normals out of the body."""
    assert body.area > 0
    assert np.allclose(np.hypot(*body.tangents.T), 1)
    assert np.allclose(body.vertices + body.lengths[:, None] * body.tangents, body.ends)
    assert np.allclose((body.tangents * body.normals).sum(axis=1), 0)
    # the normal points right of the counter-clockwise tangent: outwards
    n, t = body.normals, body.tangents
    assert np.allclose(n[:, 0] * t[:, 1] - n[:, 1] * t[:, 0], 1)


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 400), st.floats(0.1, 10), st.floats(-5, 5), st.floats(-5, 5))
def test_a_circle_is_the_regular_polygon_inscribed_in_it(n, radius, x, y):
    body = circle(n, radius, (x, y))
    _check_contour(body)
    assert body.n_panels == n
    assert math.isclose(body.perimeter, 2 * n * radius * math.sin(math.pi / n), rel_tol=1e-12)
    assert math.isclose(body.area, n / 2 * radius**2 * math.sin(2 * math.pi / n),
                        rel_tol=1e-12)
    outward = ((body.midpoints - [x, y]) * body.normals).sum(axis=1)
    assert np.allclose(outward, radius * math.cos(math.pi / n))


@pytest.mark.parametrize("n", [12, 101, 2576])
def test_a_rounded_plate_has_its_area_and_nearly_equal_panels(n):
    plate = rounded_plate(n, length=1.0, thickness=0.02)
    _check_contour(plate)
    assert plate.n_panels == n
    exact = 0.98 * 0.02 + math.pi * 0.01**2
    assert abs(plate.area - exact) < 0.02 * exact * (100 / n) ** 2 + 1e-12
    assert plate.vertices[:, 0].min() >= -1e-15 and plate.vertices[:, 0].max() <= 1 + 1e-15
    if n > 100:
        assert plate.lengths.max() / plate.lengths.min() < 1.6


def test_naca_sections_have_their_thickness_and_camber():
    symmetric = naca_airfoil("0012", 400)
    _check_contour(symmetric)
    assert symmetric.n_panels == 400
    assert math.isclose(symmetric.vertices[:, 1].max(), 0.06, rel_tol=2e-3)
    # the thickness law integrated: 10 t (0.2969 2/3 - 0.126/2 - 0.3516/3 + 0.2843/4 - 0.1036/5)
    assert math.isclose(symmetric.area, 0.68088 * 0.12, rel_tol=1e-3)
    cambered = naca_airfoil("2412", 400)
    _check_contour(cambered)
    assert cambered.vertices[:, 1].max() > 0.06 + 0.015  # thickness on the raised mean line


@pytest.mark.parametrize("make, message", [
    (lambda: circle(2), "integer number of panels >= 3"),
    (lambda: rounded_plate(100, thickness=1.5), "thickness must lie in"),
    (lambda: naca_airfoil("12", 100), "expected four digits"),
    (lambda: naca_airfoil("0012", 101), "even number of panels"),
    (lambda: naca_airfoil("2012", 100), "camber position"),
    (lambda: rounded_plate(5), "5 panels are too few for a rounded plate"),
    (lambda: Body(np.zeros((4, 2))), "zero length"),
    (lambda: Body(np.zeros((2, 2))), r"at least 3 \(x, y\) vertices, got shape \(2, 2\)"),
    (lambda: Body(np.array([[0, 0], [1, np.nan], [0, 1]])), "vertices must be finite"),
])
def test_bad_bodies_are_refused_with_the_reason(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_a_body_from_a_mesh_marker_is_its_closed_contour():
    mesh = read_mesh("data/naca0012_tri.msh")
    body = body_from_mesh(mesh, "airfoil")
    _check_contour(body)
    assert body.n_panels == 508  # the marker's lines
    assert math.isclose(body.perimeter, 2.0395, rel_tol=2e-3)  # a NACA 0012's contour
    assert math.isclose(body.vertices[:, 0].max() - body.vertices[:, 0].min(), 1.0,
                        rel_tol=1e-3)


def test_a_mesh_marker_that_is_not_one_closed_loop_is_refused():
    mesh = read_mesh("data/naca0012_tri.msh")
    with pytest.raises(ConfigError, match="not in the mesh; it has airfoil, farfield"):
        body_from_mesh(mesh, "wall")
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [2, 0], [3, 0], [3, 1]], float)
    two_loops = Mesh(points=square, cells=[CellBlock("triangle", np.array([[0, 1, 2]]))],
                     facets=[CellBlock("line", np.array([[0, 1], [1, 2], [2, 0],
                                                         [4, 5], [5, 6], [6, 4]]))],
                     facet_markers=[np.ones(6, np.int64)], marker_names={1: "wall"},
                     source="two.msh")
    with pytest.raises(ConfigError, match="two.msh: marker 'wall': its 6 lines form more "
                                          "than one loop"):
        body_from_mesh(two_loops, "wall")
    open_line = Mesh(points=square, cells=two_loops.cells,
                     facets=[CellBlock("line", np.array([[0, 1], [1, 2], [2, 3]]))],
                     facet_markers=[np.ones(3, np.int64)], marker_names={1: "wall"},
                     source="open.msh")
    with pytest.raises(ConfigError, match="node 0 ends 1 of its lines, expected 2"):
        body_from_mesh(open_line, "wall")


def test_a_body_needs_a_2d_mesh_and_a_marker_with_enough_lines():
    with pytest.raises(ConfigError, match="box.msh: a vortex body needs a 2D mesh, this one "
                                          "is 3D"):
        body_from_mesh(read_mesh("data/box.msh"), "wall")
    points = np.array([[0, 0], [1, 0], [1, 1]], float)
    two = Mesh(points=points, cells=[CellBlock("triangle", np.array([[0, 1, 2]]))],
               facets=[CellBlock("line", np.array([[0, 1], [1, 2], [2, 0]]))],
               facet_markers=[np.array([1, 1, 2], np.int64)],
               marker_names={1: "wall", 2: "far"}, source="two.msh")
    with pytest.raises(ConfigError, match="marker 'wall' holds 2 boundary lines; a body needs "
                                          "at least 3"):
        body_from_mesh(two, "wall")
