"""Reading each supported source format, with its quirks."""

from pathlib import Path

import numpy as np
import pytest

from meshorder import Topology, read_mesh
from meshorder.io.gmsh_model import gmsh_session

from .conftest import make_square

SU2_TWO_TRIANGLES = """\
% a comment line
NDIME= 2
% another comment
NELEM= 2
5 0 1 2 0
5 0 2 3 1
NPOIN= 4 4
0.0 0.0 0
1.0 0.0 1
1.0 1.0 2
0.0 1.0 3
NMARK= 2
{tag}= wall
MARKER_ELEMS= 2
3 0 1
3 1 2
{tag}= far
MARKER_ELEMS= 2
3 2 3
3 3 0
"""


@pytest.mark.parametrize("tag", ["MARKER_TAG", "MARKERTAG"])
def test_su2_keeps_marker_names_in_both_spellings(tmp_path, tag):
    path = tmp_path / "two.su2"
    path.write_text(SU2_TWO_TRIANGLES.format(tag=tag))
    mesh = read_mesh(path)
    assert mesh.marker_names == {0: "wall", 1: "far"}
    assert mesh.cells[0].nodes.tolist() == [[0, 1, 2], [0, 2, 3]]
    topo = Topology(mesh)
    names = [topo.marker_names[m] for m in topo.face_marker[~topo.interior]]
    assert sorted(names) == ["far", "far", "wall", "wall"]


@pytest.mark.parametrize("version", [2.2, 4.1])
@pytest.mark.parametrize("binary", [False, True])
def test_msh_versions_and_encodings_read_the_same(tmp_path, version, binary):
    reference = read_mesh(make_square(tmp_path / "ref.msh", version=4.1))
    mesh = read_mesh(make_square(tmp_path / f"sq_{version}_{binary}.msh", version=version,
                                 binary=binary))
    assert mesh.n_cells == reference.n_cells
    assert np.array_equal(mesh.cells[0].nodes, reference.cells[0].nodes)
    assert set(mesh.marker_names.values()) == {"wall", "far"}


def test_msh_with_comments_block(tmp_path):
    plain = make_square(tmp_path / "plain.msh", version=2.2)
    text = plain.read_text()
    commented = tmp_path / "commented.msh"
    commented.write_text("$Comments\nwritten by hand\n$EndComments\n" + text)
    assert read_mesh(commented).digest() == read_mesh(plain).digest()
    assert read_mesh(commented).n_cells == read_mesh(plain).n_cells


def test_msh_without_physical_groups_uses_entities(tmp_path):
    mesh = read_mesh(make_square(tmp_path / "entities.msh", physical=False))
    assert sorted(mesh.marker_names.values()) == ["curve_1", "curve_2", "curve_3", "curve_4"]


def test_cgns_that_meshio_cannot_read_goes_through_gmsh(tmp_path):
    path = tmp_path / "square.cgns"
    with gmsh_session() as gmsh:
        gmsh.model.occ.addRectangle(0, 0, 0, 1, 1)
        gmsh.model.occ.synchronize()
        gmsh.model.addPhysicalGroup(1, [1, 2, 3, 4], name="wall")
        gmsh.model.addPhysicalGroup(2, [1], name="fluid")
        gmsh.option.setNumber("Mesh.MeshSizeMax", 0.25)
        gmsh.model.mesh.generate(2)
        gmsh.write(str(path))
    mesh = read_mesh(path)
    assert mesh.dim == 2 and mesh.n_cells > 20
    assert "wall" in mesh.marker_names.values()


def test_vtu_from_meshio_reads(tmp_path):
    import meshio

    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
    cells = [("tetra", np.array([[0, 1, 2, 3], [1, 2, 3, 4]]))]
    meshio.write(tmp_path / "two.vtu", meshio.Mesh(points, cells))
    mesh = read_mesh(tmp_path / "two.vtu")
    assert mesh.n_cells == 2
    topo = Topology(mesh)
    assert topo.interior.sum() == 1 and topo.n_faces == 7
    assert topo.marker_names[int(topo.face_marker[~topo.interior][0])] == "unmarked"


@pytest.mark.parametrize("name", ["naca0012_tri.msh", "wing_prisms.msh"])
def test_su2_written_in_plan_order_reads_back_with_its_markers(tmp_path, name):
    from pathlib import Path

    from meshorder import write_mesh
    from meshorder.geometry import signed_measures
    from meshorder.pipeline import make_plan

    mesh = read_mesh(Path(__file__).resolve().parents[2] / "data" / name)
    plan = make_plan(mesh)
    out = tmp_path / "reordered.su2"
    write_mesh(mesh, out, cell_order=plan.cell_order, node_order=plan.node_order)
    back = read_mesh(out)
    assert sorted(back.marker_names.values()) == sorted(mesh.marker_names.values())
    counts = {mesh.marker_names[m]: int(sum((k == m).sum() for k in mesh.facet_markers))
              for m in mesh.marker_names}
    assert {back.marker_names[m]: int(sum((k == m).sum() for k in back.facet_markers))
            for m in back.marker_names} == counts
    assert [(b.type, len(b)) for b in back.cells] == [(b.type, len(b)) for b in mesh.cells]
    np.testing.assert_allclose(back.points[:, :mesh.dim], mesh.points[plan.node_order, :mesh.dim])
    volumes = [np.sort(signed_measures(m.points, b)) for m in (mesh, back) for b in m.cells]
    half = len(volumes) // 2
    for a, b in zip(volumes[:half], volumes[half:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("suffix", [".vtu", ".vtk", ".xdmf", ".msh", ".su2"])
def test_marker_names_survive_every_written_format(tmp_path, suffix, capsys):
    from pathlib import Path

    from meshorder import write_mesh

    mesh = read_mesh(Path(__file__).resolve().parents[2] / "data" / "naca0012_tri.msh")
    out = tmp_path / f"copy{suffix}"
    write_mesh(mesh, out)
    back = read_mesh(out)
    assert sorted(back.marker_names.values()) == ["airfoil", "farfield"]
    assert "Warning" not in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [".msh", ".vtu"])
def test_a_second_order_mesh_is_written_second_order(tmp_path, suffix):
    """``meshorder reorder --write-mesh`` on a curved mesh keeps its curved wall: every
    edge's node comes back, at its place, in the renumbered file (it wrote linear cells
    and left those nodes orphaned)."""
    from meshorder.cli import main

    source = Path(__file__).resolve().parents[2] / "data" / "cylinder_order2.msh"
    out = tmp_path / f"reordered{suffix}"
    assert main(["reorder", str(source), str(tmp_path / "plan.npz"), "--write-mesh", str(out),
                 "--quiet"]) == 0
    before, after = read_mesh(source), read_mesh(out)
    assert after.n_cells == before.n_cells
    assert len(after.mid_edge_nodes) == len(before.mid_edge_nodes)

    def curved(mesh):  # every edge's node, as coordinates, in one order
        return np.sort(mesh.points[mesh.mid_edge_nodes[:, 2]].round(12), axis=0)

    np.testing.assert_array_equal(curved(after), curved(before))
