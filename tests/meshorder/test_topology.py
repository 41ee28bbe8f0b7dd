"""Faces, graphs and maps on meshes whose answers are known by hand."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import CellBlock, Mesh, Topology
from meshorder.testing import box_mesh, grid_mesh
from meshorder.topology import _grouping_order, _sort_keys


@pytest.mark.parametrize(("nx", "ny"), [(1, 1), (3, 2), (5, 4)])
def test_quad_grid_face_and_edge_counts(nx, ny):
    topo = Topology(grid_mesh(nx, ny))
    interior = (nx - 1) * ny + nx * (ny - 1)
    boundary = 2 * (nx + ny)
    assert topo.interior.sum() == interior
    assert (~topo.interior).sum() == boundary
    assert len(topo.edges) == interior + boundary  # 2D: edges are faces
    assert topo.cell_graph.indices.size == 2 * interior


def test_faces_follow_left_cell_and_point_outward():
    mesh = grid_mesh(3, 3, "triangle")
    topo = Topology(mesh)
    centroids = mesh.centroids()
    a, b = mesh.points[topo.face_nodes[:, 0]], mesh.points[topo.face_nodes[:, 1]]
    normal = np.column_stack([b[:, 1] - a[:, 1], a[:, 0] - b[:, 0]])  # right of a->b
    to_face = 0.5 * (a + b)[:, :2] - centroids[topo.face_cells[:, 0], :2]
    outward = np.einsum("ij,ij->i", normal, to_face)
    assert np.all(outward > 0)
    interior = topo.interior
    assert np.all(topo.face_cells[interior, 0] < topo.face_cells[interior, 1])
    assert np.all(np.diff(topo.face_cells[:, 0]) >= 0)  # native order: by left cell


def test_box_tets_faces_and_markers():
    mesh = box_mesh(2, 2, 2)
    topo = Topology(mesh)
    assert mesh.n_cells == 48
    assert (~topo.interior).sum() == 6 * 2 * 2 * 2
    assert topo.interior.sum() == (4 * 48 - 48) // 2
    counts = np.bincount(topo.face_marker[~topo.interior])
    assert counts.tolist() == [8] * 6


def test_cell_graph_is_symmetric_and_node_cells_inverts_cells():
    mesh = box_mesh(2, 3, 2, "hexahedron")
    topo = Topology(mesh)
    g = topo.cell_graph.to_scipy()
    assert (g != g.T).nnz == 0
    offsets, nodes = mesh.cell_node_csr()
    nc = topo.node_cells
    for cell in (0, 5, 11):
        for node in nodes[offsets[cell] : offsets[cell + 1]]:
            assert cell in nc.indices[nc.indptr[node] : nc.indptr[node + 1]]
    assert nc.indices.size == nodes.size


def test_node_graph_degrees_of_a_quad_grid():
    topo = Topology(grid_mesh(2, 2))
    assert sorted(topo.node_graph.degrees().tolist()) == [2, 2, 2, 2, 3, 3, 3, 3, 4]


def test_components_and_unreferenced_points_are_reported():
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 0], [6, 5, 0], [5, 6, 0],
                       [9, 9, 0]], float)
    mesh = Mesh(points, [CellBlock("triangle", np.array([[0, 1, 2], [3, 4, 5]]))])
    report = Topology(mesh).report()
    assert report["components"] == 2
    assert report["unreferenced_points"] == 1


def test_mixed_3d_mesh_has_triangle_and_quad_faces():
    # a hexahedron with a pyramid on top and a wedge beside it
    points = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                       [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                       [0.5, 0.5, 1.5], [2, 0, 0], [2, 0, 1]], float)
    blocks = [("hexahedron", np.array([[0, 1, 2, 3, 4, 5, 6, 7]]), None),
              ("pyramid", np.array([[4, 5, 6, 7, 8]]), None),
              ("wedge", np.array([[1, 9, 2, 5, 10, 6]]), None)]
    mesh = Mesh.from_blocks(points, blocks)
    topo = Topology(mesh)
    assert topo.interior.sum() == 2
    widths = (topo.face_nodes >= 0).sum(axis=1)
    assert np.bincount(widths).tolist() == [0, 0, 0, 6, 8]  # 6 triangles, 8 quads
    assert topo.n_faces == 6 + 5 + 5 - 2


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-1, 6), st.integers(0, 6), st.integers(0, 6),
                               st.integers(0, 6)), min_size=1, max_size=40),
       wide=st.booleans())
def test_grouping_order_makes_equal_node_sets_adjacent_and_keeps_their_order(rows, wide):
    # node ids 0-6 collide often in their three highest nodes (the fast path's fallback);
    # wide ids (past 21 bits) take the two-key form
    nodes = np.array(rows, dtype=np.int64)
    nodes[nodes >= 0] += (2**21 if wide else 0)
    order, same = _grouping_order(_sort_keys(nodes))
    assert sorted(order.tolist()) == list(range(len(rows)))
    sets = [tuple(sorted(nodes[i].tolist())) for i in order]  # equal keys: equal multisets
    assert same.tolist() == [k > 0 and sets[k] == sets[k - 1] for k in range(len(sets))]
    seen = set()
    for k, node_set in enumerate(sets):
        if k and node_set != sets[k - 1]:
            assert node_set not in seen  # each group is one run
        seen.add(node_set)
    for node_set in seen:
        members = [i for i, s in zip(order, sets, strict=True) if s == node_set]
        assert members == sorted(members)  # stable inside a group


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(1e-3, 1e4))
def test_tetra_volumes_equal_the_face_sum_at_any_scale_and_orientation(seed, scale):
    from meshorder.geometry import face_sum_volumes, signed_measures

    rng = np.random.default_rng(seed)
    points = rng.normal(size=(40, 3)) * scale + rng.normal(size=3) * 100 * scale
    nodes = np.array([rng.choice(40, 4, replace=False) for _ in range(50)])
    block = CellBlock("tetra", nodes)
    fast, reference = signed_measures(points, block), face_sum_volumes(points, block)
    np.testing.assert_allclose(fast, reference, rtol=1e-9, atol=1e-12 * scale**3)
    assert np.any(fast > 0) and np.any(fast < 0)  # both orientations were drawn
