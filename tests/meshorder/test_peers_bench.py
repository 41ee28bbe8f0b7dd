"""Peer orderings (SciPy, networkx, gmsh) and the ordering benchmark command."""

import json

import numpy as np
import pytest

from meshorder import Topology
from meshorder.cli import main
from meshorder.mesh import CellBlock, Mesh
from meshorder.peers import PEERS, cells_from_node_ranks
from meshorder.permutation import check_permutation
from meshorder.testing import box_mesh, grid_mesh


@pytest.mark.parametrize("name", sorted(PEERS))
@pytest.mark.parametrize("mesh", [grid_mesh(5, 4, "triangle"), box_mesh(3, 2, 2)],
                         ids=["2d", "3d"])
def test_peer_orderings_are_permutations(name, mesh):
    check_permutation(PEERS[name](mesh, Topology(mesh)), mesh.n_cells)


def test_node_ranks_carry_to_cells_by_lowest_then_mean():
    points = np.zeros((5, 3))
    cells = CellBlock("triangle", np.array([[0, 1, 2], [2, 3, 4], [0, 3, 4]]))
    mesh = Mesh(points, [cells])
    # node ranks: cell 0 -> (4, 3, 0), cell 1 -> (0, 1, 2), cell 2 -> (4, 1, 2)
    order = cells_from_node_ranks(mesh, np.array([4, 3, 0, 1, 2]))
    assert order.tolist() == [1, 0, 2]


def test_scipy_rcm_is_scipys_own(monkeypatch):
    mesh = grid_mesh(4, 3)
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    expected = reverse_cuthill_mckee(Topology(mesh).cell_graph.to_scipy(), symmetric_mode=True)
    assert PEERS["scipy-rcm"](mesh, Topology(mesh)).tolist() == expected.tolist()


def test_bench_command_writes_json_and_markdown(tmp_path):
    from meshorder.generate import generate

    mesh = generate("flap", tmp_path / "flap.msh", 2000)
    js, md = tmp_path / "b.json", tmp_path / "b.md"
    assert main(["bench", str(mesh), "--json", str(js), "--markdown", str(md)]) == 0
    rows = json.loads(js.read_text())
    names = {r["ordering"] for r in rows}
    assert {"rcm", "metis", "scipy-rcm", "networkx-rcm", "gmsh-rcmk", "gmsh-metis"} <= names
    assert all(r["order_s"] >= 0 and r["sectors_per_warp_fp64"] > 0 for r in rows)
    assert "| rcm" in md.read_text()
