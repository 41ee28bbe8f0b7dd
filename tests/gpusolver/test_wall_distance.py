"""Exact wall distances: against every face, one by one, and on exact geometries."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.layout import wall_distance as wd
from gpusolver.layout.wall_distance import face_distance, wall_distance


def _brute_force(points: np.ndarray, faces: np.ndarray) -> np.ndarray:
    return np.array([face_distance(np.repeat(p[None], len(faces), axis=0), faces).min()
                     for p in points])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 40), st.sampled_from([2, 3, 4]))
def test_the_search_finds_the_nearest_face_of_all(seed, n_faces, corners):
    """Random faces of very different sizes (the search's bound reads the largest) and
    points near and far: the tree's answer is the brute force's."""
    rng = np.random.default_rng(seed)
    dim = 2 if corners == 2 else 3
    base = rng.uniform(-1, 1, (n_faces, 1, dim))
    size = 10.0 ** rng.uniform(-3, 0, (n_faces, 1, 1))
    faces = base + size * rng.uniform(-1, 1, (n_faces, corners, dim))
    if corners == 4:  # planar quadrilaterals: a parallelogram, some of them triangles
        faces[:, 3] = faces[:, 0] + faces[:, 2] - faces[:, 1]
        faces[rng.uniform(size=n_faces) < 0.3, 3] = np.nan
    points = rng.uniform(-3, 3, (60, dim)) * 10.0 ** rng.uniform(-2, 0, (60, 1))
    np.testing.assert_allclose(wall_distance(points, faces), _brute_force(points, faces),
                               rtol=1e-12, atol=1e-14)


def test_distances_to_a_polygon_circle_are_exact_above_its_edges():
    """Points on the normals of a 64-gon's edge midpoints, at radius 1 + h: distance h
    (to the edge, not the nearer-looking node)."""
    angles = np.linspace(0, 2 * np.pi, 65)
    nodes = np.column_stack([np.cos(angles), np.sin(angles)])
    faces = np.stack([nodes[:-1], nodes[1:]], axis=1)
    middle = 0.5 * (angles[:-1] + angles[1:])
    apothem = np.cos(np.pi / 64)
    h = np.geomspace(1e-6, 2.0, 64)
    points = (apothem + h)[:, None] * np.column_stack([np.cos(middle), np.sin(middle)])
    np.testing.assert_allclose(wall_distance(points, faces), h, rtol=1e-9)


def test_chunks_give_the_same_answer(monkeypatch):
    rng = np.random.default_rng(3)
    faces = rng.uniform(-1, 1, (50, 3, 3))
    points = rng.uniform(-2, 2, (1000, 3))
    whole = wall_distance(points, faces)
    monkeypatch.setattr(wd, "CHUNK", 77)
    np.testing.assert_array_equal(wall_distance(points, faces), whole)


def test_no_wall_gives_infinite_distances():
    assert np.isinf(wall_distance(np.zeros((3, 2)), np.zeros((0, 2, 2)))).all()


@pytest.mark.parametrize("point, expected", [((0.25, 0.25, 0.5), 0.5),
                                             ((1.5, 0.5, 0.0), 0.5),
                                             ((2.0, 2.0, 0.0), 2 ** 0.5)])
def test_a_quadrilateral_is_two_triangles(point, expected):
    square = np.array([[[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]])
    assert wall_distance(np.array([point]), square)[0] == pytest.approx(expected)
