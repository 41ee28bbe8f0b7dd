"""Prism layers: normals, extrusion, the symmetry plane, and the wall's root loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

from meshorder.errors import TopologyError
from meshorder.prism_layer import (
    boundary_loop,
    check_prisms,
    extrude,
    geometric_heights,
    node_normals,
    prism_volumes,
)

# a unit square in z = 0 split into two triangles facing +z
SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
SQUARE_TRIANGLES = np.array([[0, 1, 2], [0, 2, 3]])


def outward_hull(points):
    """Triangles of the convex hull of ``points``, each facing outwards."""
    hull = ConvexHull(points)
    triangles = hull.simplices.copy()
    corners = points[triangles]
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    inward = np.einsum("ij,ij->i", normal, corners.mean(axis=1) - points.mean(axis=0)) < 0
    triangles[inward] = triangles[inward][:, ::-1]
    return triangles


def test_flat_layer_is_a_stack_of_exact_prisms():
    layer = extrude(SQUARE, SQUARE_TRIANGLES, [0.1, 0.3])
    assert layer.points.shape == (3, 4, 3)
    np.testing.assert_allclose(layer.points[:, :, 2], [[0] * 4, [0.1] * 4, [0.3] * 4])
    volumes = prism_volumes(layer.points.reshape(-1, 3), layer.prisms)
    np.testing.assert_allclose(volumes, [0.05, 0.05, 0.1, 0.1])


def test_inverted_prisms_are_named():
    layer = extrude(SQUARE, SQUARE_TRIANGLES, [0.1])
    check_prisms(layer.points.reshape(-1, 3), layer.prisms)  # valid: no error
    flipped = layer.prisms.copy()
    flipped[1] = flipped[1][[3, 4, 5, 0, 1, 2]]  # top and bottom swapped
    with pytest.raises(TopologyError, match=r"1 of 2 prisms are inverted .* prism 1 \(nodes"):
        check_prisms(layer.points.reshape(-1, 3), flipped)


def test_a_wall_node_needs_a_normal():
    collinear = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], float)
    with pytest.raises(ValueError, match="no well-defined normal"):
        node_normals(collinear, np.array([[0, 1, 2]]))


def test_heights_must_increase():
    with pytest.raises(ValueError, match="positive and increasing"):
        extrude(SQUARE, SQUARE_TRIANGLES, [0.2, 0.1])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.01, 0.3))
def test_layers_around_convex_bodies_never_invert(seed, height):
    points = np.random.default_rng(seed).normal(size=(40, 3))
    triangles = outward_hull(points)
    normals = node_normals(points, triangles)
    centre = points.mean(axis=0)
    used = np.unique(triangles)
    assert np.all(np.einsum("ij,ij->i", normals[used], points[used] - centre) > 0)  # outwards
    layer = extrude(points, triangles, geometric_heights(height / 5, 1.3, 4))
    assert prism_volumes(layer.points.reshape(-1, 3), layer.prisms).min() > 0


def test_sharp_edge_normals_are_seen_from_both_sides():
    # a thin wedge (16 degrees, like an airfoil's trailing edge) meshed unevenly:
    # three triangles above the edge, one below, so the area-weighted mean leans up
    edge = np.array([[0, 0, 0], [0, 0, 1]], float)
    t = np.tan(np.radians(8))
    upper = np.array([[-1, t, 0], [-1, t, 1], [-0.5, t / 2, 0.5]], float)
    lower = np.array([[-1, -t, 0.5]], float)
    points = np.concatenate([edge, upper, lower])
    triangles = np.array([[0, 1, 4], [0, 4, 2], [1, 3, 4], [0, 5, 1]])
    corners = points[triangles]
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    flip = normal[:, 1] * np.sign(corners[:, :, 1].mean(axis=1)) < 0
    triangles[flip] = triangles[flip][:, ::-1]
    normal[flip] *= -1
    normals = node_normals(points, triangles)
    unit = normal / np.linalg.norm(normal, axis=1, keepdims=True)
    for node in (0, 1):
        seen = [unit[k] @ normals[node] for k in range(4) if node in triangles[k]]
        assert min(seen) > 0.1


def test_symmetry_plane_nodes_stay_in_the_plane_and_none_cross_it():
    # a strip rising from z = 0 and leaning over the fluid (its normals point down)
    points = np.array([[0, 0, 0], [1, 0, 0], [1, 0.44, 0.09], [0, 0.44, 0.09]], float)
    triangles = np.array([[0, 2, 1], [0, 3, 2]])
    assert node_normals(points, triangles)[2, 2] < -0.9
    layer = extrude(points, triangles, [0.05, 0.3], symmetry_axis=2)
    assert np.all(layer.points[:, :2, 2] == 0.0)  # exactly in the plane
    assert layer.points[..., 2].min() == 0.0
    assert np.all(layer.points[:, 2:, 2] >= 0.09 / 2)


def test_sliver_triangles_cap_the_layer_height():
    points = np.array([[0, 0, 0], [1, 0, 0], [0.5, 0.01, 0]], float)
    layer = extrude(points, np.array([[0, 1, 2]]), [0.5])
    assert layer.points[-1, :, 2].max() == pytest.approx(0.01, rel=0.02)


def test_boundary_loop_follows_the_flagged_edges_in_order():
    # a 2 x 2 patch of squares on a 3 x 3 grid of nodes (node 3 y + x), triangles
    # counter-clockwise; every node but the centre is flagged
    triangles = []
    for y in range(2):
        for x in range(2):
            a = 3 * y + x
            triangles += [[a, a + 1, a + 4], [a, a + 4, a + 3]]
    triangles = np.array(triangles)
    ring = np.ones(9, bool)
    ring[4] = False
    loop = boundary_loop(triangles, ring)
    assert np.roll(loop, -list(loop).index(0)).tolist() == [0, 1, 2, 5, 8, 7, 6, 3]
    with pytest.raises(ValueError, match="no boundary edge"):
        boundary_loop(triangles, np.zeros(9, bool))
    partial = np.zeros(9, bool)
    partial[[0, 1, 2]] = True
    with pytest.raises(ValueError, match="one closed loop"):
        boundary_loop(triangles, partial)
    bowtie = np.array([[0, 1, 2], [0, 3, 4]])  # two loops through node 0
    with pytest.raises(ValueError, match="simple loop"):
        boundary_loop(bowtie, np.ones(5, bool))
