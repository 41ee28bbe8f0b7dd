"""The refined mesh's topology from the coarse one's (meshorder.refined_topology) is the
sorted one's (meshorder.topology) to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology, read_mesh
from meshorder.mesh import Mesh
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.refine import split_once
from meshorder.refined_topology import refined_topology
from meshorder.testing import box_mesh, grid_mesh

from .test_refine import _wedges_and_pyramids

ATTRIBUTES = ("face_nodes", "face_cells", "face_marker", "face_facet", "cell_faces")


def _assert_same(fast: Topology, slow: Topology) -> None:
    for name in ATTRIBUTES:
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    assert fast.marker_names == slow.marker_names


def _check(mesh: Mesh, levels: int = 1) -> Topology:
    topology = Topology(mesh, cell_faces=True)
    for _ in range(levels):
        split = split_once(topology.mesh)
        topology = refined_topology(topology, split)
        _assert_same(topology, Topology(split.mesh, cell_faces=True))
    return topology


@pytest.mark.parametrize("kind", ["triangle", "quad"])
def test_2d_cells_twice(kind):
    _check(grid_mesh(5, 3, kind), levels=2)


@pytest.mark.parametrize("kind", ["tetra", "hexahedron", "wedge"])
def test_3d_boxes_twice(kind):
    _check(box_mesh(3, 2, 2, kind), levels=2)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_wedges_and_pyramids_beside_each_other(seed):
    """Pyramids split into pyramids and tetrahedra, wedges beside them, nodes moved at
    random (so each tetrahedron's inner diagonal varies)."""
    print(f"seed {seed}")
    _check(_wedges_and_pyramids(3, seed))


def test_a_part_with_its_halo_has_unmarked_outer_faces():
    plan = make_plan(box_mesh(4, 3, 3), PlanOptions(partitions=3))
    part = plan.part(1).mesh.mesh
    fine = _check(part)
    assert "unmarked" in fine.marker_names.values()


def test_boundary_faces_without_facets_and_a_real_mesh(shared_meshes):
    mesh = read_mesh(shared_meshes / "su2" / "mesh_brick_pyra_ffd.su2")
    _check(mesh)
    bare = Mesh(mesh.points, mesh.cells, [], [], {}, "bare")
    assert set(_check(bare).marker_names.values()) == {"unmarked"}


def test_a_facet_on_an_interior_face_falls_back_to_the_sort():
    mesh = grid_mesh(3, 1)
    inner = Mesh(mesh.points, mesh.cells, [*mesh.facets, type(mesh.facets[0])(
        "line", np.array([[2, 3]]))], [*mesh.facet_markers, np.array([9])],
        {**mesh.marker_names, 9: "inside"}, "inner facet")
    with pytest.warns(UserWarning):
        _check(inner)


def test_a_coarse_topology_without_its_cell_faces_is_refused():
    mesh = grid_mesh(2, 2)
    with pytest.raises(ValueError, match="cell_faces"):
        refined_topology(Topology(mesh), split_once(mesh))
