"""Implicit lines: chains of strongly coupled cells and the sweep levels over them."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder.lines import LINE_RATIO, implicit_lines, line_levels


def stretched_grid(nx: int, ny: int, thickness: float):
    """Faces of an ``nx`` by ``ny`` grid of cells ``thickness`` high and 1 wide (cell
    ``j * nx + i``), each with its weight (length over centroid distance)."""
    cell = np.arange(nx * ny).reshape(ny, nx)
    left = np.concatenate([cell[:, :-1].ravel(), cell[:-1, :].ravel()])
    right = np.concatenate([cell[:, 1:].ravel(), cell[1:, :].ravel()])
    weight = np.concatenate([np.full(ny * (nx - 1), thickness / 1.0),
                             np.full((ny - 1) * nx, 1.0 / thickness)])
    return left, right, weight


def line_lists(lines) -> list[list[int]]:
    return [lines.cells[a:b].tolist() for a, b in zip(lines.offsets[:-1], lines.offsets[1:],
                                                      strict=True)]


def test_thin_cells_make_columns_from_one_side_to_the_other():
    left, right, weight = stretched_grid(4, 5, 0.01)
    columns = line_lists(implicit_lines(left, right, weight, 20))
    assert sorted(columns) == [[i + 4 * j for j in range(5)] for i in range(4)]


def test_square_cells_make_no_lines():
    left, right, weight = stretched_grid(4, 5, 1.0)
    assert implicit_lines(left, right, weight, 20).lengths().tolist() == [1] * 20


def test_lines_stop_where_the_cells_stop_being_thin():
    """Rows 0-2 ten times thinner than wide, rows 3-4 square: the columns end at row 2."""
    left, right, _ = stretched_grid(3, 5, 1.0)
    height = np.array([0.1, 0.1, 0.1, 1.0, 1.0]).repeat(3)
    centre = np.cumsum(np.r_[0, height[::3]])[:-1] + height[::3] / 2
    y = centre.repeat(3)
    vertical = np.abs(y[right] - y[left]) > 0
    weight = np.where(vertical, 1.0 / np.abs(y[right] - y[left] + 1e-300), height[left])
    lengths = sorted(implicit_lines(left, right, weight, 15).lengths().tolist())
    assert lengths == [1] * 6 + [3] * 3


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 25), seed=st.integers(0, 2**31 - 1),
       ratio=st.sampled_from([1.0, 2.0, LINE_RATIO]))
def test_every_cell_once_and_neighbours_along_a_line_share_a_face(n, seed, ratio):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, size=(3 * n, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    left, right = pairs[:, 0], pairs[:, 1]
    weight = rng.lognormal(0.0, 2.0, len(left))
    lines = implicit_lines(left, right, weight, n, ratio)
    assert sorted(lines.cells.tolist()) == list(range(n))
    faces = {(a, b) for a, b in zip(left.tolist(), right.tolist(), strict=True)}
    for line in line_lists(lines):
        for a, b in itertools.pairwise(line):
            assert (min(a, b), max(a, b)) in faces
    forward, backward = line_levels(lines, left, right)
    for levels in (forward, backward):
        assert sorted(levels.order.tolist()) == list(range(n))
        line = lines.line_of()
        touching = line[left] != line[right]
        # no two touching lines share a level; a line's cells share one
        assert np.all(levels.level[left[touching]] != levels.level[right[touching]])
        assert np.all(levels.level[left[~touching]] == levels.level[right[~touching]])
        for k in range(levels.n_levels):  # each level is its lines, whole
            first, last = levels.level_lines[k], levels.level_lines[k + 1]
            assert levels.line_offsets[first] == levels.offsets[k]
            assert levels.line_offsets[last] == levels.offsets[k + 1]
    assert np.array_equal(backward.level, forward.level.max() - forward.level)


def test_a_ring_of_strong_faces_is_cut_into_one_line():
    """Four thin cells around a ring, each coupled strongly to both neighbours."""
    left, right = np.array([0, 1, 2, 3, 0, 1, 2, 3]), np.array([1, 2, 3, 0, 4, 5, 6, 7])
    weight = np.array([10.0] * 4 + [1.0] * 4)
    lines = line_lists(implicit_lines(left, right, weight, 8))
    ring = [line for line in lines if len(line) > 1]
    assert len(ring) == 1 and sorted(ring[0]) == [0, 1, 2, 3] and ring[0][0] == 0


def test_a_face_that_may_not_join_splits_its_line_and_still_weighs():
    """Column 0 of thin cells loses the face between rows 1 and 2: two lines; the face
    still counts among its cells' heaviest, so no side face joins in its place."""
    left, right, weight = stretched_grid(3, 4, 0.01)
    joinable = ~((left == 3) & (right == 6))
    lines = line_lists(implicit_lines(left, right, weight, 12, joinable=joinable))
    assert [0, 3] in lines and [6, 9] in lines
    assert all(len(line) in (2, 4) for line in lines)
