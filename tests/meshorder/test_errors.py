"""Every error path names the file and the offending line, cell or face."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import (
    CellBlock,
    Mesh,
    MeshorderError,
    MeshReadError,
    Topology,
    TopologyError,
    read_mesh,
)

from .conftest import make_square


def test_missing_file():
    with pytest.raises(MeshReadError, match="nope.msh: no such file"):
        read_mesh("nope.msh")


@pytest.mark.parametrize("suffix", [".msh", ".vtu", ".su2", ".cgns", ".xdmf"])
def test_file_that_is_not_a_mesh(tmp_path, suffix):
    path = tmp_path / f"garbage{suffix}"
    path.write_bytes(b"this is not a mesh at all\n\x00\x01\x02")
    with pytest.raises(MeshReadError, match=re.escape(str(path))):
        read_mesh(path)


def test_truncated_msh(tmp_path):
    full = make_square(tmp_path / "full.msh", version=2.2).read_text()
    cut = tmp_path / "cut.msh"
    cut.write_text(full[: len(full) // 2])
    with pytest.raises(MeshReadError, match="cut.msh"):
        read_mesh(cut)


def test_truncated_su2_names_the_section(tmp_path, shared_meshes):
    lines = (shared_meshes / "su2/mesh_NACA0012_inv.su2").read_text().splitlines()
    cut = tmp_path / "cut.su2"
    cut.write_text("\n".join(lines[:5000]))
    with pytest.raises(MeshReadError, match=r"cut.su2: file ends after \d+ of 10216 elements"):
        read_mesh(cut)


def test_su2_bad_line_names_the_line(tmp_path):
    path = tmp_path / "bad.su2"
    path.write_text("NDIME= 2\nNELEM= 1\n5 0 1\nNPOIN= 3\n0 0\n1 0\n0 1\n")
    with pytest.raises(MeshReadError, match=r"bad.su2:3: a triangle \(type 5\) needs 3"):
        read_mesh(path)


def test_su2_unknown_element_type(tmp_path):
    path = tmp_path / "bad.su2"
    path.write_text("NDIME= 2\nNELEM= 1\n7 0 1 2\n")
    with pytest.raises(MeshReadError, match=r"bad.su2:3: unknown element type 7"):
        read_mesh(path)


SQUARE = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [2, 0], [2, 1]], float)


def test_face_shared_by_three_cells():
    points = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, -1, 0], [0.5, 2, 0]], float)
    mesh = Mesh(points, [CellBlock("triangle", np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4]]))])
    with pytest.raises(TopologyError, match=r"face with nodes \[0, 1\] is shared by 3 cells"):
        Topology(mesh)


def test_facet_that_is_no_face():
    blocks = [("quad", np.array([[0, 1, 2, 3]]), None),
              ("line", np.array([[0, 2]]), np.array([7]))]
    mesh = Mesh.from_blocks(SQUARE, blocks, {7: "wall"})
    with pytest.raises(TopologyError, match=r"boundary facet 0 \(nodes \[0, 2\], marker 'wall'\)"
                                            " is not a face of any cell"):
        Topology(mesh)


def test_degenerate_cell():
    points = np.array([[0, 0], [1, 0], [2, 0], [0, 1]], float)
    blocks = [("triangle", np.array([[0, 1, 3], [1, 3, 0], [0, 1, 2]]), None)]
    with pytest.raises(TopologyError,
                       match=r"cell 2 \(triangle, nodes \[0, 1, 2\]\) is degenerate"):
        Mesh.from_blocks(points, blocks)


def test_inverted_cell():
    points = np.vstack([SQUARE, [[3, 0], [3, 1]]])
    blocks = [("quad", np.array([[0, 1, 2, 3], [1, 4, 5, 2], [4, 6, 7, 5][::-1]]), None)]
    with pytest.raises(TopologyError, match=r"cell 2 \(quad, nodes \[5, 7, 6, 4\]\) is inverted"):
        Mesh.from_blocks(points, blocks)


def test_clockwise_mesh_is_oriented_not_rejected():
    blocks = [("quad", np.array([[3, 2, 1, 0], [2, 5, 4, 1]]), None)]
    mesh = Mesh.from_blocks(SQUARE, blocks)
    assert mesh.cells[0].nodes.tolist() == [[3, 0, 1, 2], [2, 1, 4, 5]]


def test_no_volume_cells(tmp_path):
    blocks = [("line", np.array([[0, 1]]), None), ("vertex", np.array([[0]]), None)]
    with pytest.raises(TopologyError, match="no volume cells"):
        Mesh.from_blocks(SQUARE, blocks, source="lines.msh")


def test_cell_referring_to_missing_point():
    with pytest.raises(TopologyError, match=r"element 0 refers to point \[0, 1, 99\]"):
        Mesh.from_blocks(SQUARE, [("triangle", np.array([[0, 1, 99]]), None)])


DATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "data"


def test_truncated_gmsh_file_names_the_open_section(tmp_path):
    data = (DATA / "couette_tri_50.msh").read_bytes()
    path = tmp_path / "cut.msh"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(MeshReadError, match=r"cut.msh: truncated\? \$\w+ opens at byte \d+ "
                                            r"but never closes"):
        read_mesh(path)


def test_empty_file_and_folder_say_so(tmp_path):
    (tmp_path / "empty.msh").write_bytes(b"")
    with pytest.raises(MeshReadError, match="empty.msh: empty file"):
        read_mesh(tmp_path / "empty.msh")
    (tmp_path / "folder.msh").mkdir()
    with pytest.raises(MeshReadError, match="folder.msh: is a folder"):
        read_mesh(tmp_path / "folder.msh")


@settings(max_examples=30, deadline=None)
@given(cut=st.floats(0.0, 1.0), flips=st.lists(st.integers(0, 10**9), max_size=4))
def test_damaged_gmsh_files_read_or_fail_with_a_meshorder_error(tmp_path_factory, cut, flips):
    data = bytearray((DATA / "couette_tri_50.msh").read_bytes())
    for position in flips:
        data[position % len(data)] ^= 0x55
    path = tmp_path_factory.mktemp("damaged") / "mesh.msh"
    path.write_bytes(bytes(data[:int(cut * len(data))]))
    try:
        read_mesh(path)
    except MeshorderError as error:
        assert str(path) in str(error) or "cell" in str(error)


def test_a_file_cut_inside_its_elements_fails_with_a_meshorder_error(tmp_path):
    # found by the property test above: meshio reads the cut block as triangles of no nodes
    data = (DATA / "couette_tri_50.msh").read_bytes()
    path = tmp_path / "cut.msh"
    path.write_bytes(data[:int(0.63671875 * len(data))])
    with pytest.raises(MeshorderError, match="triangle cells with 0 nodes each"):
        read_mesh(path)
