"""PLOT3D grids and their Neutral Map Files: NASA TMR's grids, and small written ones."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import MeshReadError, Topology, read_mesh
from meshorder.geometry import signed_measures

TMR = Path(__file__).resolve().parents[3] / "shared" / "meshes" / "tmr"

needs_tmr = pytest.mark.skipif(not TMR.is_dir(), reason="../shared/meshes/tmr absent")


def _marker_faces(mesh) -> dict[str, int]:
    topology = Topology(mesh)
    ids, counts = np.unique(topology.face_marker[~topology.interior], return_counts=True)
    names = [topology.marker_names.get(int(i), "unmarked") for i in ids]
    return dict(zip(names, counts.tolist(), strict=True))


def _write_grid(path: Path, blocks: list[np.ndarray]) -> None:
    """Formatted 2D PLOT3D, ``blocks``: ``(2, jdim, idim)`` coordinates each."""
    lines = [str(len(blocks))]
    lines += [f"{b.shape[2]} {b.shape[1]}" for b in blocks]
    for b in blocks:
        lines += [" ".join(f"{v:.17g}" for v in b.ravel())]
    path.write_text("\n".join(lines) + "\n")


def _rectangle(x0: float, x1: float, ni: int, nj: int) -> np.ndarray:
    x, y = np.meshgrid(np.linspace(x0, x1, ni), np.linspace(0.0, 1.0, nj))
    return np.stack([x, y])


@needs_tmr
def test_the_flat_plate_grid_gets_tmrs_boundaries_from_its_map():
    mesh = read_mesh(TMR / "flatplate/grids/flatplate_clust2_4levelsdown_35x25.p2dfmt")
    assert mesh.n_cells == 34 * 24 and mesh.n_points == 35 * 25
    # the wall from point 7 to 35 of row j = 1; symmetry ahead of it (nmf lines)
    assert _marker_faces(mesh) == {"subsonic_inflow_pt": 24, "back_pressure": 24,
                                   "symmetry_z_strong": 6, "viscous_solid": 28,
                                   "farfield_riem": 34}
    topology = Topology(mesh)
    wall = next(k for k, name in topology.marker_names.items() if name == "viscous_solid")
    nodes = np.unique(topology.face_nodes[topology.face_marker == wall])
    nodes = nodes[nodes >= 0]
    np.testing.assert_allclose(mesh.points[nodes, 1], 0.0)
    assert mesh.points[nodes, 0].min() == pytest.approx(0.0) and \
        mesh.points[nodes, 0].max() == pytest.approx(2.0)


@needs_tmr
def test_a_c_grids_wake_cut_is_joined():
    """NACA 0012 113x33: the one-to-one line merges 25 points of the cut; no boundary
    faces remain there, and the wall is one closed loop."""
    mesh = read_mesh(TMR / "naca0012/grids/n0012_113-33.p2dfmt")
    assert mesh.n_points == 113 * 33 - 25
    assert _marker_faces(mesh) == {"farfield_riem": 112 + 2 * 32, "viscous_solid": 64}
    topology = Topology(mesh)
    wall = next(k for k, name in topology.marker_names.items() if name == "viscous_solid")
    edges = topology.face_nodes[topology.face_marker == wall][:, :2]
    assert (np.bincount(edges.ravel())[np.unique(edges)] == 2).all()


@needs_tmr
def test_the_3d_form_of_a_grid_is_its_2d_form_one_cell_thick():
    two = read_mesh(TMR / "flatplate/grids/flatplate_clust2_4levelsdown_35x25.p2dfmt")
    three = read_mesh(TMR / "flatplate/grids/flatplate_clust2_4levelsdown_35x25.p3dfmt")
    faces = _marker_faces(three)
    assert faces.pop("symmetry_y_strong") == 2 * two.n_cells
    assert faces == _marker_faces(two)
    # the planes lie one unit apart: each cell's volume is its 2D cell's area
    np.testing.assert_allclose(np.sort(_measures(three)), np.sort(_measures(two)), rtol=1e-9)


def _measures(mesh) -> np.ndarray:
    """Every cell's area (2D) or volume (3D): positive, the reader oriented them."""
    return np.concatenate([signed_measures(mesh.points, block) for block in mesh.cells])


@needs_tmr
def test_a_grid_without_a_map_names_its_block_faces():
    mesh = read_mesh(TMR / "bump/grids/bump_5levelsdown_45x21.p2dfmt")
    assert _marker_faces(mesh) == {"jmin": 44, "jmax": 44, "imin": 20, "imax": 20}


def test_two_blocks_joined_by_a_map_are_one_mesh(tmp_path):
    grid = tmp_path / "two.p2dfmt"
    _write_grid(grid, [_rectangle(0.0, 1.0, 5, 4), _rectangle(1.0, 2.0, 3, 4)])
    (tmp_path / "two.nmf").write_text(
        "# Type B1 F1 S1 E1 S2 E2 B2 F2 S1 E1 S2 E2 Swap\n"
        "'wall'  1 1 1 2 1 5 \\\n"
        "'wall'  2 1 1 2 1 3 \\\n"
        "'top'   1 2 1 2 1 5\n"
        "'top'   2 2 1 2 1 3\n"
        "'in'    1 5 1 4 1 2\n"
        "'out'   2 6 1 4 1 2\n"
        "'one-to-one' 1 6 1 4 1 2 2 5 1 4 1 2 false\n")
    mesh = read_mesh(grid)
    assert mesh.n_cells == 4 * 3 + 2 * 3 and mesh.n_points == 5 * 4 + 3 * 4 - 4
    assert _marker_faces(mesh) == {"wall": 6, "top": 6, "in": 3, "out": 3}


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 9), st.integers(2, 9))
def test_a_block_has_its_cells_and_four_boundary_edges(tmp_path_factory, ni, nj):
    grid = tmp_path_factory.mktemp("grid") / "block.x"
    _write_grid(grid, [_rectangle(0.0, 2.0, ni, nj)])
    mesh = read_mesh(grid)
    assert mesh.n_cells == (ni - 1) * (nj - 1)
    assert _marker_faces(mesh) == {"jmin": ni - 1, "jmax": ni - 1, "imin": nj - 1,
                                   "imax": nj - 1}
    assert (_measures(mesh) > 0).all()
    np.testing.assert_allclose(_measures(mesh).sum(), 2.0)


@pytest.mark.parametrize("text, message", [
    ("1\n3 3\n0 1 2 0 1 2\n", r"file ends after 6 of 18 coordinates"),
    ("x y z\n", "not a PLOT3D grid"),
    ("1\n1 3\n", "1 block\\(s\\) of 2 point dimensions each expected"),
])
def test_a_broken_grid_is_refused_naming_the_file(tmp_path, text, message):
    grid = tmp_path / "broken.p2dfmt"
    grid.write_text(text)
    with pytest.raises(MeshReadError, match=f"broken.p2dfmt: {message}"):
        read_mesh(grid)


def test_a_map_line_outside_the_grid_is_refused_naming_the_line(tmp_path):
    grid = tmp_path / "block.p2dfmt"
    _write_grid(grid, [_rectangle(0.0, 1.0, 4, 3)])
    (tmp_path / "block.nmf").write_text("'wall' 1 1 1 2 1 4\n'top' 1 2 1 2 1 9\n")
    with pytest.raises(MeshReadError, match=r"block.nmf, line 2: point range 1..9 is "
                                            r"outside block 1's 1..4"):
        read_mesh(grid)


def test_binary_plot3d_is_refused(tmp_path):
    grid = tmp_path / "binary.x"
    grid.write_bytes(b"\x00\x01\xff\xfe" * 10)
    with pytest.raises(MeshReadError, match="binary PLOT3D is not read"):
        read_mesh(grid)


def test_a_grid_whose_counts_fit_no_dimension_is_refused(tmp_path):
    grid = tmp_path / "odd.x"
    grid.write_text("1\n3 3\n0 1 2\n")
    with pytest.raises(MeshReadError, match="odd.x: neither a 2D nor a 3D PLOT3D grid"):
        read_mesh(grid)


@pytest.mark.parametrize("lines, message", [
    ("'wall' 1 a 1 2 1 4\n", r"line 1: 'name' then block, face and four point indices"),
    ("'wall' 1 1 1\n", r"line 1: 6 numbers expected after 'wall', found 3"),
    ("'wall' 2 1 1 2 1 4\n", r"line 1: block 2 face 1 does not exist"),
    ("'wall' 1 7 1 2 1 4\n", r"line 1: block 1 face 7 does not exist"),
    ("# only a comment\n", r"no boundary segments"),
    ("'wall' 1 1 1 2 1 4\n'one-to-one' 1 1 1 2 1 4 1 2 1 2 1 3 false\n",
     r"line 2: the one-to-one segments have 4 and 3 points"),
    ("'wall' 1 1 1 2 1 4\n'one-to-one' 1 1 1 2 1 4 1 2 1 2 1 4 false\n",
     r"line 2: the one-to-one segments' points are 1 apart; they must coincide"),
])
def test_a_map_that_does_not_fit_is_refused_naming_its_line(tmp_path, lines, message):
    grid = tmp_path / "block.p2dfmt"
    _write_grid(grid, [_rectangle(0.0, 1.0, 4, 3)])
    (tmp_path / "block.nmf").write_text(lines)
    with pytest.raises(MeshReadError, match=f"block.nmf.*{message}"):
        read_mesh(grid)
