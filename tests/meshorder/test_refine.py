"""Uniform refinement (``meshorder refine``): every cell type into its children, with the
volume, the boundary and its markers kept, on meshes of one type and mixed ones."""

from pathlib import Path

import numpy as np
import pytest

from meshorder import Mesh, Topology, read_mesh
from meshorder.errors import MeshorderError
from meshorder.geometry import signed_measures
from meshorder.refine import refine
from meshorder.testing import SIDES_3D, _with_side_markers, box_cells, grid_mesh

DATA = Path(__file__).resolve().parents[2] / "data"

#: Children of a cell (or facet) of each type, by type.
CHILDREN = {"tetra": {"tetra": 8}, "hexahedron": {"hexahedron": 8}, "wedge": {"wedge": 8},
            "pyramid": {"pyramid": 6, "tetra": 4}, "triangle": {"triangle": 4},
            "quad": {"quad": 4}, "line": {"line": 2}}


def _count(blocks, levels: int) -> int:
    """Cells (or facets) after ``levels`` refinements of ``blocks``."""
    counts = {}
    for block in blocks:
        counts[block.type] = counts.get(block.type, 0) + len(block)
    for _ in range(levels):
        after = {}
        for kind, n in counts.items():
            for child, m in CHILDREN[kind].items():
                after[child] = after.get(child, 0) + n * m
        counts = after
    return sum(counts.values())


def _wedges_and_pyramids(n: int, seed: int) -> Mesh:
    """A cube of ``n^3`` hexahedra: the lower half split into two wedges each, the upper
    half into six pyramids about a centre node each; inner points moved at random."""
    points, hexes = box_cells(n, n, n, "hexahedron")
    rng = np.random.default_rng(seed)
    inner = np.all((points > 1e-9) & (points < 1 - 1e-9), axis=1)
    points = points.copy()
    points[inner] += rng.uniform(-0.15, 0.15, (int(inner.sum()), 3)) / n
    nodes = hexes.nodes
    lower = points[nodes].mean(axis=1)[:, 2] < 0.5
    low, high = nodes[lower], nodes[~lower]
    wedges = np.concatenate([low[:, [0, 1, 2, 4, 5, 6]], low[:, [0, 2, 3, 4, 6, 7]]])
    centres = len(points) + np.arange(len(high))
    points = np.concatenate([points, points[high].mean(axis=1)])
    faces = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    pyramids = np.concatenate([np.column_stack([high[:, list(f)], centres]) for f in faces])
    return _with_side_markers(points, [("wedge", wedges), ("pyramid", pyramids)], SIDES_3D,
                              "wedges and pyramids")


def _total(mesh: Mesh) -> float:
    return float(sum(signed_measures(mesh.points, block).sum() for block in mesh.cells))


def _check(coarse: Mesh, levels: int = 1) -> Mesh:
    fine = refine(coarse, levels)
    assert _total(fine) == pytest.approx(_total(coarse), rel=1e-12)
    for block in fine.cells:
        assert (signed_measures(fine.points, block) > 0).all()
    assert fine.n_cells == _count(coarse.cells, levels)
    # the boundary: each facet into its children, markers kept, every face matched
    topology = Topology(fine)
    boundary = int(np.count_nonzero(~topology.interior))
    assert boundary == _count(coarse.facets, levels)
    for name in coarse.marker_names.values():
        code = next(k for k, v in fine.marker_names.items() if v == name)
        before = sum(np.count_nonzero(m == code) * 4 ** levels for b, m
                     in zip(coarse.facets, coarse.facet_markers, strict=True)
                     if b.type != "line")
        before += sum(np.count_nonzero(m == code) * 2 ** levels for b, m
                      in zip(coarse.facets, coarse.facet_markers, strict=True)
                      if b.type == "line")
        after = sum(np.count_nonzero(m == code) for m in fine.facet_markers)
        assert after == before, name
    return fine


@pytest.mark.parametrize("kind", ["quad", "triangle"])
def test_2d_cells_split_in_four_twice(kind):
    _check(grid_mesh(4, 3, kind), levels=2)


@pytest.mark.parametrize("kind", ["tetra", "hexahedron"])
def test_3d_boxes_split_in_eight(kind):
    from meshorder.testing import box_mesh

    _check(box_mesh(3, 2, 2, kind))


@pytest.mark.parametrize("seed", [0, 1])
def test_wedges_and_pyramids_beside_each_other_split_and_still_fit(seed):
    """Distorted cells of both kinds meet on quadrilaterals; refined twice."""
    _check(_wedges_and_pyramids(2, seed), levels=2)


@pytest.mark.parametrize("seed", range(5))
def test_a_tetrahedron_cuts_its_octahedron_along_the_shortest_diagonal(seed):
    """The children's longest edge is the longer of half the longest coarse edge and the
    shortest of the octahedron's three diagonals."""
    points = np.random.default_rng(seed).uniform(0, 1, (4, 3)) * [4.0, 1.0, 1.0]
    mesh = Mesh.from_blocks(points, [("tetra", np.array([[0, 1, 2, 3]]), None)])
    fine = refine(mesh)
    edges = [np.linalg.norm(fine.points[a] - fine.points[b]) for cell in fine.cells[0].nodes
             for a in cell for b in cell]
    mid = {(i, j): 0.5 * (points[i] + points[j]) for i in range(4) for j in range(i + 1, 4)}
    diagonals = [np.linalg.norm(mid[a] - mid[b]) for a, b in
                 (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2)))]
    half = max(np.linalg.norm(points[i] - points[j]) / 2 for i in range(4) for j in range(4))
    assert max(edges) == pytest.approx(max(half, min(diagonals)), rel=1e-12)


def test_a_real_third_party_mesh_refines(shared_meshes):
    mesh = read_mesh(shared_meshes / "su2" / "mesh_NACA0012_inv.su2")
    fine = _check(mesh)
    assert fine.n_points > mesh.n_points


def test_second_order_meshes_and_negative_levels_are_refused():
    curved = read_mesh(DATA / "cylinder_order2.msh")
    with pytest.raises(MeshorderError, match="second order"):
        refine(curved)
    assert refine(curved, 0) is curved  # no refinement asked: any mesh passes
    with pytest.raises(MeshorderError, match="0 or more"):
        refine(grid_mesh(2, 2), -1)


def test_the_cli_refines_and_refuses_its_input_as_output(tmp_path, capsys):
    from meshorder.cli import main

    out = tmp_path / "wing2.msh"
    assert main(["refine", str(DATA / "wing.msh"), str(out), "--quiet"]) == 0
    assert read_mesh(out).n_cells == 8 * read_mesh(DATA / "wing.msh").n_cells
    assert capsys.readouterr().out.startswith(f"{out}: 220896 cells (27612 refined 1 time)")
    assert main(["refine", str(out), str(out)]) == 2
    assert "is the input mesh" in capsys.readouterr().err
    assert main(["refine", str(out), str(tmp_path / "fine.foo")]) == 2
    assert "cannot write files with extension '.foo'" in capsys.readouterr().err
    assert not (tmp_path / "fine.foo").exists()


def test_a_case_refines_its_mesh_at_start(tmp_path):
    """``[mesh] refine = 1`` runs the refined mesh: the cells of `meshorder refine`'s."""
    from gpusolver.errors import ConfigError
    from gpusolver.run import run_case
    from gpusolver.systems import load_case
    from meshorder.cli import main

    case = tmp_path / "c.toml"
    text = (f'[mesh]\nfile = "{DATA / "naca0012_tri.msh"}"\nrefine = 1\n[physics]\n'
            'mach = 0.5\n[boundaries]\nairfoil = "slip-wall"\nfarfield = "farfield"\n'
            '[run]\nbackend = "numpy"\ntime_integrator = "rk4"\niterations = 1\n')
    case.write_text(text)
    result = run_case(load_case(case), progress=False)
    assert result.solver.n_cells == 4 * read_mesh(DATA / "naca0012_tri.msh").n_cells
    # with a plan, one process refines the plan's mesh as one part: 3-D meshes only
    assert main(["reorder", str(DATA / "naca0012_tri.msh"), str(tmp_path / "p.npz"),
                 "--quiet"]) == 0
    case.write_text(text.replace("refine = 1", 'refine = 1\nplan = "p.npz"'))
    with pytest.raises(ConfigError, match="refine: .*takes 3-D meshes"):
        run_case(load_case(case), progress=False)
