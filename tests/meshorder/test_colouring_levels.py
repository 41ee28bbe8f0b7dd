"""Properties of colourings and LU-SGS hyperplanes on random graphs, and golden cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology
from meshorder.colouring import ColouringError, colour_cells, colour_items
from meshorder.hyperplanes import colour_levels, renumber_by_level, wavefront_levels
from meshorder.metrics import renumber_graph
from meshorder.permutation import check_permutation
from meshorder.testing import box_mesh, grid_mesh
from meshorder.topology import CSR

edge_lists = st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=150)


def random_graph(n: int, edges: list[tuple[int, int]]) -> CSR:
    pairs = np.array([(a % n, b % n) for a, b in edges if a % n != b % n], np.int64)
    pairs = pairs.reshape(-1, 2)
    return CSR.from_pairs(pairs[:, 0], pairs[:, 1], n)


def assert_valid_colouring(a, b, colouring):
    for c in range(colouring.n_colours):
        items = colouring.order[colouring.offsets[c] : colouring.offsets[c + 1]]
        assert np.all(colouring.colour[items] == c)
        touched = np.concatenate([a[items], b[items][b[items] >= 0]])
        assert len(np.unique(touched)) == len(touched), f"colour {c} has a conflict"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 30), edges=edge_lists, boundary=st.lists(st.integers(0, 29), max_size=20),
       balanced=st.booleans())
def test_colouring_has_no_conflicts_and_few_colours(n, edges, boundary, balanced):
    pairs = np.array([(x % n, y % n) for x, y in edges if x % n != y % n], np.int64).reshape(-1, 2)
    a = np.concatenate([pairs[:, 0], np.array(boundary, np.int64) % n])
    b = np.concatenate([pairs[:, 1], -np.ones(len(boundary), np.int64)])
    colouring = colour_items(a, b, n, balanced=balanced)
    check_permutation(colouring.order, len(a))
    assert_valid_colouring(a, b, colouring)
    incidence = np.bincount(np.concatenate([a, b[b >= 0]]), minlength=n).max(initial=0)
    assert colouring.n_colours <= max(1, 2 * incidence - 1)  # greedy bound


def test_face_colouring_of_a_tet_box_is_near_optimal():
    topo = Topology(box_mesh(4, 4, 4))
    a, b = topo.face_cells.T
    colouring = colour_items(a, b, topo.n_cells)
    assert_valid_colouring(a, b, colouring)
    assert topo.max_faces_per_cell() <= colouring.n_colours <= 8
    assert colouring.balance() < 1.05


def test_one_vertex_items_on_distinct_vertices_share_one_colour():
    # boundary faces of different cells never conflict (regression: a shared dummy vertex)
    colouring = colour_items(np.arange(50), -np.ones(50, np.int64), 50)
    assert colouring.n_colours == 1


def test_structured_quads_get_few_balanced_colours():
    # sequential first-fit would find 4; the parallel colouring stays within 2k - 1 = 7
    topo = Topology(grid_mesh(12, 10))
    colouring = colour_items(topo.face_cells[:, 0], topo.face_cells[:, 1], topo.n_cells)
    assert 4 <= colouring.n_colours <= 7
    assert colouring.balance() < 1.1


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), edges=edge_lists, seed=st.integers(0, 1000))
def test_cell_colours_differ_across_every_edge_and_stay_within_the_greedy_bound(n, edges, seed):
    graph = random_graph(n, edges)
    colouring = colour_cells(graph, seed)
    check_permutation(colouring.order, n)
    rows = np.repeat(np.arange(n), graph.degrees())
    assert np.all(colouring.colour[rows] != colouring.colour[graph.indices])
    assert colouring.n_colours <= graph.degrees().max(initial=0) + 1
    assert np.all(np.diff(colouring.offsets) > 0)
    forward, backward = colour_levels(graph, seed)
    np.testing.assert_array_equal(forward.level, colouring.colour)
    np.testing.assert_array_equal(backward.level, colouring.n_colours - 1 - colouring.colour)
    check_permutation(backward.order, n)


def test_cell_colouring_refuses_a_vertex_with_more_neighbours_than_the_masks_hold():
    from meshorder.colouring import MAX_COLOURS, ColouringError

    leaves = np.arange(1, MAX_COLOURS + 1)
    star = CSR.from_pairs(np.zeros_like(leaves), leaves, MAX_COLOURS + 1)
    with pytest.raises(ColouringError, match=f"{MAX_COLOURS} neighbours"):
        colour_cells(star)


def test_colour_sweeps_and_renumbering_by_level_exclude_each_other():
    from meshorder.errors import UsageError
    from meshorder.pipeline import PlanOptions, make_plan

    with pytest.raises(UsageError, match="renumbering by level"):
        make_plan(grid_mesh(3, 3), PlanOptions(sweep_colours=True, renumber_by_level=True))


def test_a_tet_box_takes_five_sweep_colours_or_fewer():
    graph = Topology(box_mesh(8, 8, 8)).cell_graph
    forward, _ = colour_levels(graph)
    assert forward.n_levels <= 5  # at most 4 neighbours each
    assert wavefront_levels(graph).n_levels > 5 * forward.n_levels


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), edges=edge_lists, backward=st.booleans())
def test_levels_respect_every_dependency(n, edges, backward):
    graph = random_graph(n, edges)
    levels = wavefront_levels(graph, backward=backward)
    check_permutation(levels.order, n)
    for v in range(n):
        upstream = [u for u in graph.indices[graph.indptr[v] : graph.indptr[v + 1]]
                    if (u > v if backward else u < v)]
        expected = 1 + max((levels.level[u] for u in upstream), default=-1)
        assert levels.level[v] == expected
    assert np.all(levels.widths() > 0)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), edges=edge_lists, seed=st.integers(0, 1000))
def test_renumbering_by_level_keeps_the_sequential_sweep(n, edges, seed):
    order = np.random.default_rng(seed).permutation(n)
    graph = renumber_graph(random_graph(n, edges), order)
    levels = wavefront_levels(graph)
    new_order = renumber_by_level(levels)
    rank = np.empty(n, np.int64)
    rank[new_order] = np.arange(n)
    for v in range(n):
        for u in graph.indices[graph.indptr[v] : graph.indptr[v + 1]]:
            assert (u < v) == (rank[u] < rank[v])
    # levels become contiguous, increasing ranges
    assert np.all(np.diff(levels.level[new_order]) >= 0)


def test_gauss_seidel_sweep_is_identical_after_level_renumbering():
    topo = Topology(grid_mesh(6, 5, "triangle"))
    graph = topo.cell_graph
    n = graph.n
    rng = np.random.default_rng(3)
    weights = {(int(i), int(j)): rng.random() for i in range(n)
               for j in graph.indices[graph.indptr[i] : graph.indptr[i + 1]]}
    rhs = rng.random(n)

    def sweep(order):
        """One forward Gauss-Seidel sweep of (4I - W) x = rhs, cells visited in ``order``."""
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        x = np.zeros(n)
        for i in order:
            lower = [j for j in graph.indices[graph.indptr[i] : graph.indptr[i + 1]]
                     if rank[j] < rank[i]]
            x[i] = (rhs[i] + sum(weights[(i, j)] * x[j] for j in lower)) / 4.0
        return x

    levels = wavefront_levels(graph)
    assert levels.n_levels < n
    assert np.array_equal(sweep(np.arange(n)), sweep(renumber_by_level(levels)))


def test_any_degree_colours_a_star_of_a_hundred_leaves_without_conflicts():
    """A hub with 100 neighbours, each leaf in a clique of 70 leaves: more than 64 colours."""
    hub_edges = [(0, leaf) for leaf in range(1, 101)]
    clique = [(a, b) for a in range(1, 71) for b in range(a + 1, 71)]
    pairs = np.array(hub_edges + clique, dtype=np.int64)
    graph = CSR.from_pairs(pairs[:, 0], pairs[:, 1], 101)
    with pytest.raises(ColouringError):
        colour_cells(graph)
    colour = colour_cells(graph, any_degree=True).colour
    assert np.all(colour[pairs[:, 0]] != colour[pairs[:, 1]])
    assert colour.max() >= 70  # the clique needs 71 colours with the hub
