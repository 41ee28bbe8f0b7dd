"""A refinement's new wall nodes on the true surface of a generated body (meshorder.surface)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from meshorder.errors import MeshorderError
from meshorder.generate import body_section, generate
from meshorder.geometry import signed_measures
from meshorder.part_refine import refine_part
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.refine import refine, refine_tracked
from meshorder.surface import WALL_MARKER, body_surface, section_projection

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def wing():
    """``meshorder generate wing --cells 20000 --prism-layers 0``: about 27,600 tetrahedra
    (x chordwise, y spanwise, z up)."""
    return generate("wing", None, 20000, prism_layers=0)


def _wall_nodes(mesh) -> np.ndarray:
    marker = {name: m for m, name in mesh.marker_names.items()}[WALL_MARKER]
    return np.unique(np.concatenate([b.nodes[k == marker].ravel() for b, k
                                     in zip(mesh.facets, mesh.facet_markers, strict=True)]))


def _fluid_volume(mesh) -> float:
    return float(sum(signed_measures(mesh.points, block).sum() for block in mesh.cells))


def test_the_generators_wall_nodes_lie_on_the_section_surface(wing):
    """The surface model (the section's spline, sampled, lofted straight) holds the wall
    nodes gmsh placed on the wing: each within 1e-6 chords of its projection."""
    mesh = wing
    project = section_projection(body_section("wing"))
    wall = mesh.points[_wall_nodes(mesh)]
    on_tip = wall[:, 1] >= body_section("wing").span * (1 - 1e-9)
    moved = np.linalg.norm(project(wall) - wall, axis=1)
    assert np.count_nonzero(~on_tip) > 500
    assert moved[~on_tip].max() < 1e-6
    assert np.all(moved[on_tip] == 0)  # the flat tip keeps its nodes


def test_new_wall_nodes_go_onto_the_surface_and_the_body_fills_out(wing):
    """Refined once with the surface: the new wall nodes lie on it (but the tip's and those
    farther than MAX_MOVE of their edge, which stay), no other node moves but a few
    halving a fold of the faceted wall (an edge through the fluid between two wall
    nodes), no cell turns, and the fluid's volume falls (the faceted wall bulges out)."""
    mesh = wing
    plain = refine(mesh, 1)
    with body_surface("wing") as place:
        placed = refine(mesh, 1, place)
    project = section_projection(body_section("wing"))
    new = _wall_nodes(placed)
    new = new[new >= mesh.n_points]
    moved = np.any(placed.points != plain.points, axis=1)
    assert not moved[:mesh.n_points].any()
    assert 0.8 * len(new) < np.count_nonzero(moved[new])
    off = np.linalg.norm(project(placed.points[moved]) - placed.points[moved], axis=1)
    assert off.max() < 1e-6
    folds = np.setdiff1d(np.flatnonzero(moved), new)
    assert len(folds) < 0.01 * len(new)
    assert np.abs(placed.points[folds] - plain.points[folds]).max() < 0.01
    assert all(signed_measures(placed.points, b).min() > 0 for b in placed.cells)
    assert _fluid_volume(placed) < _fluid_volume(plain) - 1e-4
    # a new wall node left where it was lies on the flat tip or was far from the surface
    stays = new[~moved[new]]
    far = np.linalg.norm(project(plain.points[stays]) - plain.points[stays], axis=1)
    on_tip = plain.points[stays, 1] >= body_section("wing").span * (1 - 1e-9)
    assert np.all(on_tip | (far > 1e-6)) and np.count_nonzero(~on_tip) > 10


def test_parts_place_their_shared_nodes_as_the_whole_mesh_does(wing):
    """Each part refined with the surface on its own gives its cells the nodes of the
    whole mesh refined with it: the same volume, cell for cell (file numbers)."""
    mesh = wing
    plan = make_plan(mesh, PlanOptions(partitions=3))
    with body_surface("wing") as place:
        whole = refine_tracked(mesh, 1, place)
    volumes = np.concatenate([signed_measures(whole.mesh.points, b) for b in whole.mesh.cells])
    file_cell = whole.cell_parent * 8 + whole.cell_child
    by_file = np.empty_like(volumes)
    by_file[file_cell] = volumes
    for p in range(3):
        part = refine_part(plan.part(p), 1, "wing")
        mine = np.concatenate([signed_measures(part.mesh.mesh.points, b)
                               for b in part.mesh.mesh.cells])
        np.testing.assert_allclose(mine, by_file[part.mesh.file_cells], rtol=1e-12)
        assert part.mesh_digest != refine_part(plan.part(p), 1).mesh_digest


def test_a_placement_that_turns_cells_is_refused_by_the_cli(tmp_path, capsys):
    """A prism layer thinner than the facets' distance from the surface: one line naming
    the mesh and the count, exit 1, nothing written; a mesh without the marker, too."""
    from meshorder.cli import main

    prisms = tmp_path / "prisms.msh"
    assert main(["generate", "wing", str(prisms), "--cells", "20000"]) == 0
    out = tmp_path / "fine.msh"
    assert main(["refine", str(prisms), str(out), "--surface", "wing", "--quiet"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "prisms.msh: placing" in error
    assert "cells inside out" in error and not out.exists()
    assert main(["refine", str(DATA / "box.msh"), str(out), "--surface", "oneram6",
                 "--quiet"]) == 1
    assert "no marker 'wing'" in capsys.readouterr().err and not out.exists()


def test_an_unknown_surface_is_refused():
    with pytest.raises(MeshorderError, match="no surface 'box'"), body_surface("box"):
        pass


def test_a_case_places_its_refined_wall_on_the_surface(tmp_path, wing):
    """``[mesh] surface`` with ``refine``: the case's mesh is the placed refinement, whole
    or as the one part of a plan; without ``refine`` the key is named as doing nothing."""
    from gpusolver.io.case import keys_unread
    from gpusolver.solvers.mesh_system import _one_part, _read, _refined
    from gpusolver.systems import load_case
    from meshorder.io import write_mesh

    write_mesh(wing, tmp_path / "wing.msh")
    case = tmp_path / "c.toml"
    text = ('[mesh]\nfile = "wing.msh"\nrefine = 1\nsurface = "wing"\n[physics]\n'
            'mach = 0.8\n[boundaries]\nwing = "slip-wall"\nsymmetry = "symmetry"\n'
            'farfield = "farfield"\n[run]\nbackend = "numpy"\n')
    case.write_text(text)
    with body_surface("wing") as place:
        expected = refine(wing, 1, place)
    np.testing.assert_array_equal(_read(load_case(case)).points, expected.points)
    plan = tmp_path / "p.npz"
    make_plan(wing, PlanOptions()).save(plan)
    case.write_text(text.replace('refine = 1', 'refine = 1\nplan = "p.npz"'))
    loaded = load_case(case)
    part = _refined(loaded, _one_part(loaded))
    assert _fluid_volume(part.mesh.mesh) == pytest.approx(_fluid_volume(expected), rel=1e-12)
    case.write_text(text.replace("refine = 1\n", ""))
    assert any("[mesh] surface does nothing here" in line
               for line in keys_unread(load_case(case)))
