"""Golden permutations on tiny meshes, and properties of every registered ordering."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology
from meshorder.graph import cuthill_mckee, first_occurrences, pseudo_peripheral_node
from meshorder.hyperplanes import wavefront_levels
from meshorder.metrics import renumber_graph
from meshorder.orderings import ORDERINGS, OrderingInput, get_ordering
from meshorder.orderings.rcm import reverse_cuthill_mckee
from meshorder.permutation import check_permutation
from meshorder.testing import box_mesh, grid_mesh
from meshorder.topology import CSR


def ordering_input(mesh, markers=None) -> OrderingInput:
    topo = Topology(mesh)
    ids = topo.marker_ids(markers) if markers else None
    return OrderingInput(topo.cell_graph, mesh.centroids(), topo.boundary_cells(ids))


def path_graph(n: int) -> CSR:
    return CSR.from_pairs(np.arange(n - 1), np.arange(1, n), n)


def test_rcm_golden_on_2x3_grid():
    # cells i*3+j; CM from pseudo-peripheral cell 0 visits 0, 3, 1, 4, 2, 5: four levels
    graph = ordering_input(grid_mesh(2, 3)).graph
    assert reverse_cuthill_mckee(graph, wavefront_passes=0).tolist() == [5, 2, 4, 1, 3, 0]
    # 5 moves after 2 and 4 inside the group of the first four, then 0 before 1 and 3
    # inside the group shifted by two: the red-black order, two levels (a plan with
    # sweeps)
    refined = get_ordering("rcm")(ordering_input(grid_mesh(2, 3)), lusgs_levels=True)
    assert refined.tolist() == [2, 4, 5, 0, 1, 3]
    assert wavefront_levels(renumber_graph(graph, refined)).n_levels == 2


def test_rcm_takes_components_by_lowest_degree_and_isolated_vertices_last():
    # triangle 1-2-3 (lowest degree 2) and edge 4-5 (degree 1, so it comes first, before
    # the reversal); 0 is isolated
    graph = CSR.from_pairs(np.array([1, 2, 3, 4]), np.array([2, 3, 1, 5]), 6)
    plain = reverse_cuthill_mckee(graph, wavefront_passes=0)
    assert plain.tolist() == [0, 3, 2, 1, 5, 4]


def test_layers_golden_seeded_from_bottom():
    data = ordering_input(grid_mesh(2, 2), ["bottom"])
    assert get_ordering("layers")(data).tolist() == [0, 2, 1, 3]


def test_layers_seeded_from_right_runs_backwards():
    data = ordering_input(grid_mesh(3, 1), ["right"])
    assert get_ordering("layers")(data).tolist() == [2, 1, 0]


def test_morton_golden_on_4x4_grid():
    data = ordering_input(grid_mesh(4, 4))
    expected = [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]
    assert get_ordering("morton")(data).tolist() == expected


@pytest.mark.parametrize("n", [2, 4, 8])
def test_hilbert_walks_a_power_of_two_grid_cell_to_neighbour(n):
    mesh = grid_mesh(n, n)
    order = get_ordering("hilbert")(ordering_input(mesh))
    centroids = mesh.centroids()[order]
    steps = np.abs(np.diff(centroids, axis=0)).sum(axis=1)
    assert np.allclose(steps, 1.0 / n)


def test_pseudo_peripheral_node_of_a_path_is_an_end():
    assert pseudo_peripheral_node(path_graph(9), 4) in (0, 8)


def test_cuthill_mckee_orders_children_by_degree():
    # star centre 0 with leaves 1, 2, 3; leaf 2 also touches 4, so it has degree 2
    graph = CSR.from_pairs(np.array([0, 0, 0, 2]), np.array([1, 2, 3, 4]), 5)
    order, sizes = cuthill_mckee(graph, np.array([0]))
    assert order.tolist() == [0, 1, 3, 2, 4]
    assert sizes.tolist() == [1, 3, 1]


def test_cuthill_mckee_keeps_children_of_the_same_two_parents_together():
    # seed 0; parents 1 (rank 1) and 2 (rank 2); 3 hangs from both, 4 from 1 only,
    # 6 from 2 only. 3 and 4 share their earliest parent 1 and their degree, so plain
    # Cuthill-McKee takes 3 first (lower id); its latest parent is 2, so it goes after 4
    # and next to 6, its sibling under 2.
    graph = CSR.from_pairs(np.array([0, 0, 1, 2, 1, 4, 2]), np.array([1, 2, 3, 3, 4, 5, 6]), 7)
    order, sizes = cuthill_mckee(graph, np.array([0]))
    assert order.tolist() == [0, 1, 2, 4, 3, 6, 5]
    assert sizes.tolist() == [1, 2, 3, 1]
    order, _ = cuthill_mckee(graph, np.array([0]), by_degree=False)
    assert order.tolist() == [0, 1, 2, 4, 3, 6, 5]


def test_rcm_handles_components_and_isolated_vertices():
    graph = CSR.from_pairs(np.array([0, 1, 4]), np.array([1, 2, 5]), 7)  # 3 isolated
    data = OrderingInput(graph, np.zeros((7, 3)), np.array([], dtype=np.int64))
    order = get_ordering("rcm")(data)
    check_permutation(order, 7)


def test_rcm_reduces_bandwidth_of_a_shuffled_grid():
    from meshorder.metrics import matrix_metrics, renumber_graph

    data = ordering_input(grid_mesh(12, 9, "triangle"))
    shuffled = renumber_graph(data.graph, np.random.default_rng(1).permutation(data.n))
    ranked = renumber_graph(data.graph, get_ordering("rcm")(data))
    assert matrix_metrics(ranked)["bandwidth"] <= 2 * 9 + 2
    assert matrix_metrics(ranked)["bandwidth"] < matrix_metrics(shuffled)["bandwidth"] / 4


@settings(max_examples=25, deadline=None)
@given(nx=st.integers(1, 7), ny=st.integers(1, 7), kind=st.sampled_from(["quad", "triangle"]),
       name=st.sampled_from(sorted(ORDERINGS)))
def test_every_ordering_is_a_permutation(nx, ny, kind, name):
    data = ordering_input(grid_mesh(nx, ny, kind))
    order = get_ordering(name)(data)
    check_permutation(order, data.n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), edges=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39)),
                                             max_size=120))
def test_rcm_and_layers_on_random_graphs_are_permutations(n, edges):
    pairs = np.array([(a % n, b % n) for a, b in edges if a % n != b % n], dtype=np.int64)
    pairs = pairs.reshape(-1, 2)
    graph = CSR.from_pairs(pairs[:, 0], pairs[:, 1], n)
    data = OrderingInput(graph, np.random.default_rng(0).random((n, 3)), np.array([0]))
    for name in ("rcm", "layers", "metis"):
        check_permutation(get_ordering(name)(data, **({"cluster_size": 4} if name == "metis"
                                                      else {})), n)


def test_unknown_ordering_lists_valid_names():
    with pytest.raises(KeyError, match="unknown ordering 'fancy'; choose from hilbert"):
        get_ordering("fancy")


def test_metis_two_level_clusters_cover_the_graph_evenly(monkeypatch):
    from meshorder.orderings import metis

    monkeypatch.setattr(metis, "MAX_PARTS_PER_CALL", 4)
    graph = ordering_input(grid_mesh(24, 24, "triangle")).graph  # 1152 cells
    parts = metis.clusters(graph, 18)
    sizes = np.bincount(parts)
    assert len(sizes) == 18 and sizes.min() > 0
    assert sizes.max() <= 2.0 * graph.n / 18
    # every cluster is one connected piece or close to it: few cut edges
    rows = np.repeat(np.arange(graph.n), graph.degrees())
    assert np.mean(parts[rows] != parts[graph.indices]) < 0.2


def test_unknown_face_order_lists_valid_names():
    from meshorder.faceorder import get_face_order

    with pytest.raises(KeyError, match="unknown face order 'zigzag'; choose from greedy, "
                                       "layered, strided"):
        get_face_order("zigzag")


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 12), st.integers(1, 12), st.sampled_from(["quad", "triangle", "mixed"]),
       st.integers(0, 2**31 - 1))
def test_strided_faces_take_the_greedy_order_in_sweeps(nx, ny, kind, seed):
    """A permutation, interior faces first and boundary faces by marker; the interior in
    sweeps of strictly rising lower cell, each cell's k-th face in sweep k."""
    from meshorder.faceorder import strided_faces

    topology = Topology(grid_mesh(nx, ny, kind))
    rank = (np.arange(topology.mesh.n_cells) if seed % 2 else
            np.random.default_rng(seed).permutation(topology.mesh.n_cells))
    order = strided_faces(topology, rank)
    check_permutation(order, topology.n_faces, "faces")
    interior = topology.interior[order]
    n_interior = int(interior.sum())
    assert interior[:n_interior].all()
    assert np.all(np.diff(topology.face_marker[order][n_interior:]) >= 0)
    cells = np.where(topology.face_cells >= 0, rank[np.maximum(topology.face_cells, 0)], -1)
    low = cells[order[:n_interior]].min(axis=1)
    sweeps = np.split(low, np.flatnonzero(np.diff(low) <= 0) + 1)
    counts = np.bincount(low)
    assert len(sweeps) == counts.max()
    for k, sweep in enumerate(sweeps):
        assert np.array_equal(sweep, np.flatnonzero(counts > k))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.sampled_from(["quad", "triangle", "mixed"]),
       st.integers(0, 2**31 - 1))
def test_greedy_faces_are_the_lexsort_of_marker_lower_and_higher_cell(nx, ny, kind, seed):
    """The faces by boundary marker (interior first), then their lower and their higher
    cell in the new order, ties in the native order: NumPy's lexsort of the three (2-D
    grids, and boxes of every 3-D cell type)."""
    from meshorder.faceorder import greedy_faces

    three_d = ("hexahedron", "tetra", "wedge", "pyramid")[seed // 2 % 4]
    mesh = grid_mesh(nx, ny, kind) if seed % 2 else box_mesh(min(nx, 4), min(ny, 4), 2, three_d)
    topology = Topology(mesh)
    rank = np.random.default_rng(seed).permutation(topology.mesh.n_cells)
    cells = np.where(topology.face_cells >= 0, rank[np.maximum(topology.face_cells, 0)], -1)
    low = np.where(topology.interior, cells.min(axis=1), cells[:, 0])
    group = np.where(topology.interior, -1, topology.face_marker)
    expected = np.lexsort((cells.max(axis=1), low, group))
    assert np.array_equal(greedy_faces(topology, rank), expected)


def test_strided_faces_spare_the_atomic_adds_that_greedy_repeats():
    """Triangles in the file's own order (each face's first cell its lower one): greedy
    repeats about 10 adds in each warp of 32 faces, strided none."""
    from meshorder.faceorder import greedy_faces, strided_faces
    from meshorder.metrics import repeated_adds_per_warp

    topology = Topology(grid_mesh(40, 40, "triangle"))
    rank = np.arange(topology.mesh.n_cells)
    greedy, strided = (repeated_adds_per_warp(topology.face_cells[order(topology, rank)])
                       for order in (greedy_faces, strided_faces))
    assert greedy > 9.0 and strided == 0.0


@given(st.lists(st.integers(0, 30), max_size=80))
def test_first_occurrences_keeps_each_value_where_it_first_appears(values):
    values = np.array(values, dtype=np.int64)
    scratch = np.full(31, 12345, dtype=np.int64)  # stale content must not matter
    _, first = np.unique(values, return_index=True)
    expected = values[np.sort(first)]
    assert first_occurrences(values, scratch).tolist() == expected.tolist()
