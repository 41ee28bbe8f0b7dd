"""Reference geometries: markers, cell types, and cell counts near the target."""

from pathlib import Path

import numpy as np
import pytest

from meshorder import Topology, read_mesh
from meshorder.generate import GEOMETRIES, generate

DATA = Path(__file__).resolve().parents[2] / "data"

CASES = {
    "couette": ({"bottom", "top", "inlet", "outlet"}, {"quad"}, 200),
    "naca0012-ogrid": ({"airfoil", "farfield"}, {"quad"}, 2000),
    "naca0012-tri": ({"airfoil", "farfield"}, {"triangle"}, 2000),
    "cylinder": ({"cylinder", "farfield"}, {"quad", "triangle"}, 3000),
    "flap": ({"main", "flap", "farfield"}, {"triangle"}, 3000),
    "box": ({"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"}, {"tetra"}, 3000),
    "wing": ({"wing", "symmetry", "farfield"}, {"tetra", "wedge"}, 30000),
    "oneram6": ({"wing", "symmetry", "farfield"}, {"tetra"}, 100000),
}


def test_every_geometry_has_a_case():
    assert set(CASES) == set(GEOMETRIES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_geometry_markers_types_and_size(tmp_path, name):
    markers, types, cells = CASES[name]
    mesh = read_mesh(generate(name, tmp_path / f"{name}.msh", cells))
    assert set(mesh.marker_names.values()) == markers
    assert {b.type for b in mesh.cells} == types
    assert cells / 2 <= mesh.n_cells <= 2 * cells
    topo = Topology(mesh)
    assert topo.components()[0] == 1
    assert "unmarked" not in topo.marker_names.values()  # every boundary face is named


def test_wing_prism_layer_sits_on_the_wall_and_the_plain_wing_has_none(tmp_path):
    mesh = read_mesh(generate("wing", tmp_path / "w.msh", 30000, prism_layers=3))
    topo = Topology(mesh)
    wedges = next(b for b in mesh.cells if b.type == "wedge")
    wall_cells = topo.boundary_cells(topo.marker_ids(["wing"]))
    first_wedge = sum(len(b) for b in mesh.cells[:mesh.cells.index(wedges)])
    assert np.all(wall_cells >= first_wedge)  # only prisms touch the wing
    assert len(wedges) == 3 * len(wall_cells)  # three layers on every wall triangle
    symmetry = next(k for k, name in mesh.marker_names.items() if name == "symmetry")
    on_plane = np.concatenate([block.nodes[markers == symmetry].ravel()
                               for block, markers in zip(mesh.facets, mesh.facet_markers,
                                                         strict=True)])
    assert on_plane.size and np.all(mesh.points[on_plane, 1] == 0.0)
    assert np.isclose(mesh.points[:, 1].min(), 0.0)  # spanwise y from the root, z up
    assert mesh.points[:, 1].max() == pytest.approx(3.0 + 8.0)
    assert mesh.points[:, 2].min() == pytest.approx(-8.0)
    plain = read_mesh(generate("wing", tmp_path / "p.msh", 20000, prism_layers=0))
    assert {b.type for b in plain.cells} == {"tetra"}


def test_negative_prism_layers_are_refused_before_meshing(tmp_path):
    with pytest.raises(ValueError, match="prism_layers must be 0 .none. or more, got -1"):
        generate("wing", tmp_path / "w.msh", 1000, prism_layers=-1)
    assert not (tmp_path / "w.msh").exists()


def test_generation_is_deterministic(tmp_path):
    a = read_mesh(generate("flap", tmp_path / "a.msh", 2000))
    b = read_mesh(generate("flap", tmp_path / "b.msh", 2000))
    assert a.digest() == b.digest()


@pytest.mark.parametrize("n", [50, 200, 800])
@pytest.mark.parametrize("kind", ["quad", "tri"])
def test_shipped_couette_meshes_have_exact_sizes(kind, n):
    mesh = read_mesh(DATA / f"couette_{kind}_{n}.msh")
    assert abs(mesh.n_cells - n) <= 0.1 * n


def test_shipped_meshes_read():
    for path in sorted(DATA.glob("*.msh")):
        mesh = read_mesh(path)
        assert mesh.n_cells > 0 and mesh.marker_names, path


def test_unknown_geometry_lists_the_valid_ones(tmp_path):
    with pytest.raises(KeyError, match="unknown geometry 'ship'; choose from box, couette"):
        generate("ship", tmp_path / "x.msh", 100)


def test_oneram6_has_the_agard_planform_a_symmetry_plane_and_its_far_field(tmp_path):
    from meshorder.cli import main

    out = tmp_path / "m6.msh"
    assert main(["generate", "oneram6", str(out), "--cells", "100000", "--far", "10"]) == 0
    mesh = read_mesh(out)
    assert 60_000 < mesh.n_cells < 250_000
    areas = {}
    for block, markers in zip(mesh.facets, mesh.facet_markers, strict=True):
        a, b, c = (mesh.points[block.nodes[:, k]] for k in range(3))
        area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
        for marker in np.unique(markers):
            name = mesh.marker_names[int(marker)]
            areas[name] = areas.get(name, 0.0) + area[markers == marker].sum()
    planform = 0.5 * (0.8059 + 0.8059 * 0.562) * 1.1963
    assert areas["wing"] == pytest.approx(2 * 1.01 * planform, rel=0.03)  # thin section
    # the leading edge (radius 1.5% of the chord) is meshed finer than the rest of the wall
    wing = next(k for k, name in mesh.marker_names.items() if name == "wing")
    triangles = np.concatenate([block.nodes[markers == wing] for block, markers
                                in zip(mesh.facets, mesh.facet_markers, strict=True)])
    centre = mesh.points[triangles].mean(axis=1)
    chord = 0.8059 * (1 - (1 - 0.562) * centre[:, 1] / 1.1963)
    x_over_c = (centre[:, 0] - centre[:, 1] * np.tan(np.radians(30))) / chord
    edge = np.linalg.norm(mesh.points[triangles[:, 0]] - mesh.points[triangles[:, 1]], axis=1)
    leading, middle = x_over_c < 0.01, (x_over_c > 0.4) & (x_over_c < 0.6)
    assert np.median(edge[leading]) < 0.5 * np.median(edge[middle])
    assert np.isclose(mesh.points[:, 1].min(), 0.0)
    assert mesh.points[:, 0].max() == pytest.approx(1.1963 * np.tan(np.radians(30))
                                                   + 0.8059 * 0.562 + 10 * 0.8059)


def test_a_prism_layered_oneram6_has_its_first_layer_and_a_sharp_trailing_edge(tmp_path):
    """RANS: 20 layers of prisms on the wing, the first 1e-5 root chords thick; in metres,
    the span along y."""
    from meshorder.cli import main

    out = tmp_path / "m6.msh"
    assert main(["generate", "oneram6", str(out), "--cells", "100000", "--prism-layers", "20",
                 "--first-layer", "1e-5"]) == 0
    mesh = read_mesh(out)
    assert {b.type for b in mesh.cells} == {"tetra", "wedge"}
    topo = Topology(mesh)
    wall_cells = topo.boundary_cells(topo.marker_ids(["wing"]))
    wedges = next(b for b in mesh.cells if b.type == "wedge")
    assert len(wedges) == 20 * len(wall_cells)
    heights = np.linalg.norm(mesh.points[wedges.nodes[:, 3:]] - mesh.points[wedges.nodes[:, :3]],
                             axis=2).mean(axis=1) / 0.8059
    first = np.sort(heights)[:len(wall_cells)]
    assert np.median(first) == pytest.approx(1e-5, rel=1e-3)  # thinner only where it must
    assert np.isclose(mesh.points[:, 1].min(), 0.0)
    assert mesh.points[:, 1].max() == pytest.approx(1.1963 + 20 * 0.8059)
    wing = next(k for k, name in mesh.marker_names.items() if name == "wing")
    nodes = np.unique(np.concatenate([block.nodes[markers == wing].ravel() for block, markers
                                      in zip(mesh.facets, mesh.facet_markers, strict=True)]))
    root = mesh.points[nodes][mesh.points[nodes, 1] == 0.0]
    trailing = root[np.argmax(root[:, 0])]
    assert trailing[0] == pytest.approx(0.8059) and trailing[2] == pytest.approx(0.0, abs=1e-12)
    # the two root nodes next to the trailing edge sit above and below it: a sharp edge
    near = root[np.argsort(-root[:, 0])[1:3]]
    assert near[:, 2].min() < 0 < near[:, 2].max()


def test_prism_layers_thicker_than_the_wall_cells_or_a_layer_without_prisms_are_refused():
    with pytest.raises(ValueError, match="thicker than half the wall cells"):
        generate("oneram6", None, 100000, prism_layers=10, first_layer=0.01)
    with pytest.raises(ValueError, match="give prism_layers too"):
        generate("oneram6", None, 100000, first_layer=1e-5)
    with pytest.raises(ValueError, match="prism_layers must be 0 .none. or more, got -2"):
        generate("oneram6", None, 100000, prism_layers=-2)


def test_oneram6_refuses_a_far_field_inside_the_wing():
    with pytest.raises(ValueError, match="far must be positive"):
        generate("oneram6", None, 100000, far=0.0)


@pytest.mark.parametrize("name", ["naca0012-ogrid", "naca0012-tri", "flap"])
def test_second_order_meshes_curve_their_walls_only(tmp_path, name):
    """``order=2``: the mid nodes of wall edges lie off their chords (on the splines), the
    interior edges' on them; read back from the file as kept in memory."""
    path = generate(name, tmp_path / "m.msh", 1500, order=2)
    mesh, memory = read_mesh(path), generate(name, None, 1500, order=2)
    np.testing.assert_allclose(np.sort(memory.points[memory.mid_edge_nodes[:, 2]], axis=0),
                               np.sort(mesh.points[mesh.mid_edge_nodes[:, 2]], axis=0))
    a, b, mid = mesh.mid_edge_nodes.T
    xy = mesh.points[:, :2]
    off = (np.linalg.norm(xy[mid] - 0.5 * (xy[a] + xy[b]), axis=1)
           > 1e-10 * np.linalg.norm(xy[b] - xy[a], axis=1))
    topo = Topology(mesh)
    assert len(mid) == topo.n_faces
    boundary = {tuple(sorted(f)) for f in topo.face_nodes[~topo.interior][:, :2].tolist()}
    curved = {tuple(edge) for edge in mesh.mid_edge_nodes[off, :2].tolist()}
    assert curved and curved <= boundary


def test_one_edge_with_two_mid_nodes_is_refused():
    from meshorder.errors import TopologyError
    from meshorder.mesh import Mesh

    points = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0], [0.5, 0.5], [0, 0.5],
                       [1, 0.5], [0.5, 1], [0.5, 0.51]], dtype=float)
    cells = np.array([[0, 1, 2, 4, 5, 6], [1, 3, 2, 7, 8, 9]])
    with pytest.raises(TopologyError, match="between nodes 1 and 2 has two mid nodes, 5 and 9"):
        Mesh.from_blocks(points, [("triangle6", cells, None)])


def test_an_order_other_than_one_or_two_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(ValueError, match="order must be 1 or 2, not 3"):
        generate("naca0012-tri", tmp_path / "m.msh", 500, order=3)
    assert not (tmp_path / "m.msh").exists()


def test_a_mesh_far_from_the_asked_size_says_so(tmp_path, capsys):
    """``--cells 1000`` on the cylinder gives about four times as many: said, not silent."""
    from meshorder.cli import main

    assert main(["generate", "cylinder", str(tmp_path / "c.msh"), "--cells", "1000"]) == 0
    printed = capsys.readouterr().out
    cells = int(printed.split(": ", 1)[1].split(" cells")[0])
    assert cells > 2000 and f"note: {cells} cells where --cells 1000 was asked" in printed
    assert main(["generate", "cylinder", str(tmp_path / "d.msh"), "--cells", str(cells)]) == 0
    assert "note:" not in capsys.readouterr().out
