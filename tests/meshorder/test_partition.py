"""Partitions for several GPUs: every cell in one part, interior cells first, halos exact."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology, read_mesh
from meshorder.orderings import OrderingInput, get_ordering
from meshorder.partition import PartitionError, partition_cells
from meshorder.testing import box_mesh, grid_mesh

DATA = Path(__file__).resolve().parents[2] / "data"


def check_partition(graph, split, cell_order=None) -> None:
    """Every property a solver relies on, checked the slow obvious way."""
    n = graph.n
    assert sorted(split.order.tolist()) == list(range(n))
    assert split.offsets[0] == 0 and split.offsets[-1] == n
    assert (np.diff(split.offsets) > 0).all()
    new = np.empty(n, dtype=np.int64)
    new[split.order] = np.arange(n)
    part = split.part_of()
    rank = np.arange(n) if cell_order is None else np.argsort(cell_order)
    for p in range(split.n_parts):
        first, end = split.offsets[p], split.offsets[p + 1]
        for position in range(first, end):
            cell = split.order[position]
            neighbour_parts = part[new[graph.indices[graph.indptr[cell]:graph.indptr[cell + 1]]]]
            crosses = bool((neighbour_parts != p).any())
            assert crosses == (position >= first + split.n_interior[p])
        for group in (slice(first, first + split.n_interior[p]),
                      slice(first + split.n_interior[p], end)):
            assert (np.diff(rank[split.order[group]]) > 0).all()  # the given order kept
    expected: dict = {}
    for cell in range(n):
        for other in graph.indices[graph.indptr[cell]:graph.indptr[cell + 1]]:
            p, q = part[new[cell]], part[new[other]]
            if p != q:
                expected.setdefault((int(p), int(q)), set()).add(int(new[cell]))
    assert set(split.send) == set(expected)
    for (p, q), cells in split.send.items():
        assert cells.tolist() == sorted(expected[p, q])
        assert (q, p) in split.send  # neighbours both ways
        assert split.receive(q, p) is cells
    crossing = sum(int(part[new[cell]] != part[new[other]]) for cell in range(n)
                   for other in graph.indices[graph.indptr[cell]:graph.indptr[cell + 1]])
    assert split.metrics(graph)["edge_cut"] == crossing // 2  # each edge seen from both ends


@settings(max_examples=15, deadline=None)
@given(nx=st.integers(2, 12), ny=st.integers(2, 12), kind=st.sampled_from(["quad", "triangle"]),
       n_parts=st.integers(1, 4), seed=st.integers(0, 3))
def test_partitions_of_grids_have_every_property(nx, ny, kind, n_parts, seed):
    graph = Topology(grid_mesh(nx, ny, kind)).cell_graph
    if n_parts > graph.n:
        n_parts = graph.n
    check_partition(graph, partition_cells(graph, n_parts, seed=seed))


@pytest.mark.parametrize("n_parts", [2, 3, 4])
def test_partitions_of_a_real_mesh_keep_the_rcm_order_inside_parts(n_parts):
    mesh = read_mesh(DATA / "naca0012_tri.msh")
    graph = Topology(mesh).cell_graph
    rcm = get_ordering("rcm")(OrderingInput(graph, mesh.centroids(), np.zeros(0, np.int64)))
    split = partition_cells(graph, n_parts, rcm)
    check_partition(graph, split, rcm)
    metrics = split.metrics(graph)
    assert metrics["parts"] == n_parts
    assert metrics["imbalance"] < 1.1  # METIS balances to a few percent
    assert metrics["edge_cut"] < 0.1 * graph.n  # a thin interface, not a scatter


def test_partitions_of_a_3d_mesh():
    graph = Topology(box_mesh(5, 4, 4)).cell_graph
    check_partition(graph, partition_cells(graph, 3))


def test_one_part_is_the_whole_mesh_with_no_halo():
    graph = Topology(grid_mesh(4, 3)).cell_graph
    split = partition_cells(graph, 1)
    assert split.offsets.tolist() == [0, 12]
    assert split.n_interior.tolist() == [12]
    assert split.send == {}
    assert split.metrics(graph)["edge_cut"] == 0


def test_more_parts_than_cells_is_refused():
    graph = Topology(grid_mesh(2, 1)).cell_graph
    with pytest.raises(PartitionError, match="cannot split 2 cells into 3 parts"):
        partition_cells(graph, 3)


def test_reorder_with_partitions_stores_them_in_the_plan(tmp_path, capsys):
    from meshorder.cli import main
    from meshorder.plan import Plan

    out = tmp_path / "plan.npz"
    mesh_file = DATA / "naca0012_tri.msh"
    assert main(["reorder", str(mesh_file), str(out), "--partitions", "3", "--hyperplanes",
                 "--quiet"]) == 0
    plan = Plan.load(out)
    assert plan.n_parts == 3 and plan.metrics["parts"] == 3
    graph = Topology(read_mesh(mesh_file)).cell_graph
    split = plan.partition()
    # the plan's numbering is the partitioned one: check the halos on the renumbered graph
    from meshorder.metrics import renumber_graph

    check_partition(renumber_graph(graph, plan.cell_order), split)
    assert main(["info", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 parts" in printed and "halo cells" in printed
    assert main(["plot", str(mesh_file), str(out), "-o", str(tmp_path / "parts.png")]) == 0


def test_a_plan_without_partitions_has_one_part(tmp_path):
    from meshorder.pipeline import make_plan

    plan = make_plan(grid_mesh(3, 3))
    assert plan.n_parts == 1 and plan.partition() is None
    plan.save(tmp_path / "p.npz")
    from meshorder.plan import Plan

    assert Plan.load(tmp_path / "p.npz").n_parts == 1


@pytest.mark.parametrize("args, message", [
    (["--partitions", "2", "--renumber-by-level"], "exclude each other"),
    (["--partitions", "999999"], "has only 7960 cells"),
    (["--partitions", "0"], "--partitions"),
])
def test_bad_partition_options_are_usage_errors(tmp_path, capsys, args, message):
    from meshorder.cli import main

    out = tmp_path / "plan.npz"
    try:
        code = main(["reorder", str(DATA / "naca0012_tri.msh"), str(out), *args])
    except SystemExit as stop:  # argparse's own checks
        code = stop.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_damaged_partition_is_refused_on_load(tmp_path):
    from meshorder.errors import PlanError
    from meshorder.pipeline import PlanOptions, make_plan

    plan = make_plan(grid_mesh(6, 5), PlanOptions(partitions=2))
    plan.replace(part_offsets=np.array([0, 40, 30])).save(tmp_path / "bad.npz")
    from meshorder.plan import Plan

    with pytest.raises(PlanError, match="part offsets must rise"):
        Plan.load(tmp_path / "bad.npz")
    for changes, message in (({"send_cells": plan.send_cells + 100}, "halo lists hold cells"),
                             ({"part_interior": np.array([99, 0])}, "part_interior must hold"),
                             ({"send_offsets": plan.send_offsets[:-1]}, "do not match the parts")):
        with pytest.raises(PlanError, match=message):
            plan.replace(**changes).validate()


def test_partitions_and_renumbering_by_level_exclude_each_other():
    from meshorder.pipeline import PlanOptions, make_plan

    with pytest.raises(PartitionError, match="exclude each other"):
        make_plan(grid_mesh(4, 4), PlanOptions(partitions=2, hyperplanes=True,
                                               renumber_by_level=True))


def test_a_part_left_empty_by_metis_is_refused(monkeypatch):
    import meshorder.partition as partition

    graph = Topology(grid_mesh(4, 3)).cell_graph
    monkeypatch.setattr(partition, "clusters", lambda g, n, seed: np.zeros(g.n, np.int64))
    with pytest.raises(PartitionError, match="METIS left part 1 of 2 empty"):
        partition_cells(graph, 2)
