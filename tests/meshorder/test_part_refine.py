"""Each rank refines its own part of a coarse plan (meshorder.part_refine)."""

from __future__ import annotations

import numpy as np
import pytest

from meshorder.errors import MeshorderError
from meshorder.part_refine import refine_part
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.refine import refine_tracked
from meshorder.testing import box_mesh, grid_mesh

from .test_refine import _wedges_and_pyramids


def _parts(mesh, n_parts: int):
    plan = make_plan(mesh, PlanOptions(partitions=n_parts))
    return [plan.part(p) for p in range(n_parts)]


@pytest.mark.parametrize(("kind", "levels"), [("tetra", 1), ("tetra", 2), ("hexahedron", 1)])
def test_the_fine_parts_tile_the_fine_mesh_and_agree_on_their_halo_lists(kind, levels):
    mesh = box_mesh(4, 3, 3, kind)
    fine = [refine_part(part, levels) for part in _parts(mesh, 3)]
    children = 8 ** levels
    own = np.concatenate([part.mesh.cells[part.own()] for part in fine])
    np.testing.assert_array_equal(np.sort(own), np.arange(mesh.n_cells * children))
    assert fine[0].n_cells == mesh.n_cells * children
    # the file numbers: each coarse cell's children together, as the whole mesh's
    refined = refine_tracked(mesh, levels)
    volumes = {}
    for part in fine:
        for file_cell, volume in zip(part.mesh.file_cells, _volumes(part.mesh.mesh),
                                     strict=True):
            volumes[int(file_cell)] = volume
    whole = refined.cell_parent * children + refined.cell_child
    np.testing.assert_allclose([volumes[int(c)] for c in whole[np.isin(whole, list(volumes))]],
                               _volumes(refined.mesh)[np.isin(whole, list(volumes))],
                               rtol=1e-12)
    # what one part sends another is what the other expects, in the same order
    for a in fine:
        for b in fine:
            for pair in set(a.send) & set(b.send):
                np.testing.assert_array_equal(a.send[pair], b.send[pair])
    assert all(part.mesh_digest != _parts(mesh, 3)[0].mesh_digest for part in fine)


def _volumes(mesh) -> np.ndarray:
    from meshorder.geometry import signed_measures

    return np.concatenate([signed_measures(mesh.points, block) for block in mesh.cells])


def test_a_fine_part_holds_the_children_of_its_coarse_part_with_their_topology():
    from meshorder import Topology

    coarse = _parts(box_mesh(4, 4, 3), 2)[0]
    part = refine_part(coarse, 1)
    assert part.mesh.mesh.n_cells == 8 * coarse.mesh.mesh.n_cells
    assert len(part.own()) == 8 * len(coarse.own())
    kept = part.mesh.topology
    np.testing.assert_array_equal(kept.face_cells, Topology(part.mesh.mesh).face_cells)
    # its halo lists name cells within two faces of its own only
    halo = np.concatenate([cells for (p, q), cells in part.send.items() if q == 0])
    left, right = kept.face_cells[kept.interior].T
    local = np.searchsorted(np.sort(part.mesh.cells), halo)
    own = np.zeros(part.mesh.mesh.n_cells, dtype=bool)
    own[part.own()] = True
    reached = own.copy()
    for _ in range(2):
        step = reached.copy()
        step[right[reached[left]]] = step[left[reached[right]]] = True
        reached = step
    by_number = np.argsort(part.mesh.cells)
    assert reached[by_number[local]].all() and not reached.all()


def test_two_dimensional_meshes_pyramids_and_negative_levels_are_refused():
    part = _parts(grid_mesh(4, 3, "triangle"), 2)[0]
    assert refine_part(part, 0) is part
    with pytest.raises(MeshorderError, match="takes 3-D meshes"):
        refine_part(part, 1)
    with pytest.raises(MeshorderError, match="0 or more"):
        refine_part(part, -1)
    with pytest.raises(MeshorderError, match="not pyramid"):
        refine_part(_parts(_wedges_and_pyramids(2, 0), 2)[0], 1)
