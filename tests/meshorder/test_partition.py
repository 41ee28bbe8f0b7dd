"""Partitions for several GPUs: every cell in one part, interior cells first, halos exact."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology, read_mesh
from meshorder.orderings import OrderingInput, get_ordering
from meshorder.partition import PartitionError, partition_cells
from meshorder.testing import annulus_mesh, box_mesh, grid_mesh

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
    def neighbours(cells: set) -> set:
        return {int(other) for cell in cells
                for other in graph.indices[graph.indptr[cell]:graph.indptr[cell + 1]]}

    expected: dict = {}
    for q in range(split.n_parts):
        own = {int(cell) for cell in range(n) if part[new[cell]] == q}
        layer1 = neighbours(own) - own
        for cell in (layer1 | neighbours(layer1)) - own:  # HALO_LAYERS = 2
            expected.setdefault((int(part[new[cell]]), q), set()).add(int(new[cell]))
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


@pytest.mark.parametrize("max_parts_per_call", [1024, 2])
def test_weighted_parts_balance_the_weights_not_the_cells(monkeypatch, max_parts_per_call):
    """Cells of the left third weigh 4: METIS balances the parts' weight sums (in one
    k-way call, or in regions first when there are more parts than one call takes)."""
    import meshorder.orderings.metis as metis

    monkeypatch.setattr(metis, "MAX_PARTS_PER_CALL", max_parts_per_call)
    mesh = grid_mesh(60, 30, "quad")
    graph = Topology(mesh).cell_graph
    weights = np.where(mesh.centroids()[:, 0] < 1 / 3, 4.0, 1.0)
    for n_parts in (2, 4):
        plain = partition_cells(graph, n_parts)
        weighted = partition_cells(graph, n_parts, weights=weights)
        check_partition(graph, weighted)
        loads = np.bincount(weighted.part_of(), weights[weighted.order])
        assert loads.max() / loads.mean() < 1.05
        assert weighted.metrics(graph, weights)["imbalance"] == pytest.approx(
            loads.max() / loads.mean())
        plain_loads = np.bincount(plain.part_of(), weights[plain.order])
        assert plain_loads.max() / plain_loads.mean() > 1.3
        assert np.ptp(np.diff(weighted.offsets)) > 0.3 * graph.n / n_parts  # unequal cells


def test_face_weights_weigh_each_cell_by_its_faces(shared_meshes):
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = read_mesh(shared_meshes / "su2" / "mesh_brick_pyra_ffd.su2")
    topology = Topology(mesh)
    faces = topology.faces_per_cell()
    assert sorted(np.unique(faces).tolist()) == [4, 5]  # tetrahedra and pyramids
    counts = np.bincount(topology.face_cells[:, 0], minlength=mesh.n_cells)
    counts += np.bincount(topology.face_cells[topology.interior, 1], minlength=mesh.n_cells)
    np.testing.assert_array_equal(faces, counts)
    plan = make_plan(mesh, PlanOptions(partitions=3, weights="faces"), topology=topology)
    part = np.repeat(np.arange(3), np.diff(plan.part_offsets))
    loads = np.bincount(part, faces[plan.cell_order])
    assert plan.parameters["weights"] == "faces"
    assert plan.metrics["imbalance"] == pytest.approx(loads.max() / loads.mean())


@pytest.mark.parametrize("content, message", [
    ("1\n2\n", "2 weight(s) for a mesh of 7960 cells; expected one per cell"),
    ("1\nx\n", "not one number per cell (could not convert string 'x'"),
    ("\n".join(["1"] * 7959 + ["-2"]), "the weight of cell 7959 is -2.0; expected a positive"),
    (None, "no such weights file"),
])
def test_bad_weights_files_are_refused_by_name(tmp_path, capsys, content, message):
    from meshorder.cli import main

    weights, out = tmp_path / "w.txt", tmp_path / "plan.npz"
    if content is not None:
        weights.write_text(content)
    out.write_text("the user's earlier plan")
    assert main(["reorder", str(DATA / "naca0012_tri.msh"), str(out), "--partitions", "2",
                 "--weights", str(weights), "--quiet"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{weights}: {message}" in error
    assert out.read_text() == "the user's earlier plan"


def test_weights_from_a_file_reach_the_plan(tmp_path):
    from meshorder.cli import main
    from meshorder.plan import Plan

    mesh = read_mesh(DATA / "naca0012_tri.msh")
    weights = np.where(mesh.centroids()[:, 0] > 0.5, 3.0, 1.0)
    np.save(tmp_path / "w.npy", weights)
    assert main(["reorder", str(DATA / "naca0012_tri.msh"), str(tmp_path / "p.npz"),
                 "--partitions", "2", "--weights", str(tmp_path / "w.npy"), "--quiet"]) == 0
    plan = Plan.load(tmp_path / "p.npz")
    part = np.repeat(np.arange(2), np.diff(plan.part_offsets))
    loads = np.bincount(part, weights[plan.cell_order])
    assert plan.metrics["imbalance"] == pytest.approx(loads.max() / loads.mean())
    assert plan.metrics["imbalance"] < 1.05


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
    (["--weights", "faces"], "--weights balances parts: it needs --partitions N"),
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
    monkeypatch.setattr(partition, "clusters", lambda g, *_: np.zeros(g.n, np.int64))
    with pytest.raises(PartitionError, match="METIS left part 1 of 2 empty"):
        partition_cells(graph, 2)


@pytest.mark.parametrize("mesh", [grid_mesh(9, 7, "triangle"), box_mesh(5, 4, 3)],
                         ids=["triangles", "tetrahedra"])
def test_each_part_mesh_holds_its_cells_its_halo_and_their_facets(mesh):
    from meshorder.pipeline import PlanOptions, make_plan

    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(partitions=3), topology=topology)
    split = plan.partition()
    facet_markers = mesh.all_facet_markers()
    for p, part in enumerate(plan.parts):
        expected = np.concatenate([np.arange(split.offsets[p], split.offsets[p + 1]),
                                   split.halo(p)])
        assert sorted(part.cells.tolist()) == sorted(expected.tolist())
        np.testing.assert_array_equal(part.file_cells, plan.cell_order[part.cells])
        # every cell keeps its corners (as coordinates)
        corners = [part.mesh.points[b.nodes] for b in part.mesh.cells]
        original = mesh.points[np.concatenate([b.nodes for b in mesh.cells])[part.file_cells]]
        np.testing.assert_array_equal(np.concatenate(corners), original)
        # the facets: those of the original mesh on the boundary faces of these cells
        boundary = topology.face_cells[:, 1] < 0
        inside = np.isin(topology.face_cells[:, 0], part.file_cells)
        np.testing.assert_array_equal(part.facet_ids,
                                      np.sort(topology.face_facet[boundary & inside]))
        np.testing.assert_array_equal(part.mesh.all_facet_markers(),
                                      facet_markers[part.facet_ids])
        # faces without a facet bound the halo's outer layer only
        sub = Topology(part.mesh)
        unmarked = (sub.face_cells[:, 1] < 0) & (sub.face_facet < 0)
        outer = np.isin(part.cells[sub.face_cells[unmarked, 0]], split.halo(p))
        assert outer.all()


def test_part_meshes_keep_the_curved_edges_of_their_cells_through_the_plan_file(tmp_path):
    """A second-order mesh's mid-edge nodes (the DG solver's curved walls) travel with
    each part: the same edges, between the same corners, bent through the same points."""
    from meshorder.pipeline import PlanOptions, make_plan
    from meshorder.plan import read_plan_part

    mesh = annulus_mesh(12, 3, "triangle")  # second order: its arcs are curved
    plan = make_plan(mesh, PlanOptions(partitions=3))
    plan.save(tmp_path / "plan.npz")

    def edges(points, table):  # (corner a, corner b, mid node) as coordinates, sorted
        rows = np.concatenate([points[table[:, k], :2] for k in range(3)], axis=1)
        return rows[np.lexsort(rows.T[::-1])]

    covered = 0
    for p in range(3):
        part = read_plan_part(tmp_path / "plan.npz", p).mesh
        ids = part.point_ids
        corners = np.unique(np.concatenate([b.nodes.ravel() for b in part.mesh.cells]))
        whole = mesh.mid_edge_nodes[np.isin(mesh.mid_edge_nodes[:, :2], ids[corners])
                                    .all(axis=1)]
        np.testing.assert_array_equal(edges(part.mesh.points, part.mesh.mid_edge_nodes),
                                      edges(mesh.points, whole))
        covered += len(part.mesh.mid_edge_nodes)
    assert covered > len(mesh.mid_edge_nodes)  # halos share edges


def test_a_rank_reads_its_part_of_the_plan_file_and_nothing_of_the_whole_mesh(tmp_path,
                                                                             monkeypatch):
    from meshorder.npz import NpzArrays
    from meshorder.pipeline import PlanOptions, make_plan
    from meshorder.plan import PART_PREFIX, read_plan_part

    plan = make_plan(box_mesh(5, 4, 3), PlanOptions(partitions=3))
    plan.save(tmp_path / "plan.npz")
    read = []
    getitem = NpzArrays.__getitem__
    monkeypatch.setattr(NpzArrays, "__getitem__",
                        lambda self, key: read.append(key) or getitem(self, key))
    part = read_plan_part(tmp_path / "plan.npz", 1)
    own = [key for key in read if key.startswith(f"{PART_PREFIX}1.")]
    assert own and set(read) - set(own) <= {"meta", "part_offsets", "part_interior",
                                            "send_pairs", "send_offsets", "send_cells"}
    expected = plan.part(1)
    assert part.mesh.mesh.digest() == expected.mesh.mesh.digest()
    for name in ("cells", "file_cells", "point_ids", "facet_ids"):
        np.testing.assert_array_equal(getattr(part.mesh, name), getattr(expected.mesh, name))
    assert part.n_parts == 3 and part.n_cells == plan.n_cells
    assert part.mesh_digest == plan.mesh_digest
    assert part.boundary_markers == expected.boundary_markers
    assert {key: cells.tolist() for key, cells in part.send.items()} == {
        key: cells.tolist() for key, cells in expected.send.items()}


def test_asking_a_plan_for_a_part_it_does_not_have_is_refused(tmp_path):
    from meshorder.errors import PlanError
    from meshorder.pipeline import PlanOptions, make_plan
    from meshorder.plan import read_plan_part

    make_plan(grid_mesh(4, 4)).save(tmp_path / "whole.npz")
    make_plan(grid_mesh(4, 4), PlanOptions(partitions=2)).save(tmp_path / "two.npz")
    with pytest.raises(PlanError, match="whole.npz: the plan has no parts"):
        read_plan_part(tmp_path / "whole.npz", 0)
    with pytest.raises(PlanError, match="two.npz: the plan has 2 parts, not a part 2"):
        read_plan_part(tmp_path / "two.npz", 2)


def test_a_damaged_part_is_refused(tmp_path):
    import zipfile

    from meshorder.errors import PlanError
    from meshorder.pipeline import PlanOptions, make_plan
    from meshorder.plan import read_plan_part

    plan = make_plan(grid_mesh(6, 5), PlanOptions(partitions=2))
    with pytest.raises(PlanError, match="holds 1 part meshes for 2 parts"):
        plan.replace(parts=plan.parts[:1]).validate()
    plan.save(tmp_path / "plan.npz")
    for dropped, message in (("part.1.file_cells", r"\(part 1\): lacks file_cells"),
                             ("send_cells", "plan lacks 'send_cells"),
                             ("part.1.cells", r"\(part 1\): lacks cells")):
        with zipfile.ZipFile(tmp_path / "plan.npz") as source, \
                zipfile.ZipFile(tmp_path / "bad.npz", "w") as damaged:
            for item in source.infolist():
                if item.filename != f"{dropped}.npy":
                    damaged.writestr(item, source.read(item.filename))
        with pytest.raises(PlanError, match=message):
            read_plan_part(tmp_path / "bad.npz", 1)
    arrays = plan.parts[1].arrays()
    arrays["cells"] = arrays["cells"][:-1]
    from meshorder.part_mesh import PartMesh

    with pytest.raises(PlanError, match="cell numbers for"):
        PartMesh.from_arrays(1, arrays, ["quad"], [b.type for b in plan.parts[1].mesh.facets],
                             plan.marker_names, "bad part")


def test_parts_that_touch_no_boundary_are_written_and_read_back(tmp_path):
    """Many parts on a small mesh (a scaling study's first step): parts inside the mesh
    have no boundary facets, and the plan still writes and reads every part."""
    from meshorder.cli import main
    from meshorder.plan import read_plan_part

    out = tmp_path / "plan.npz"
    assert main(["reorder", str(DATA / "naca0012_tri.msh"), str(out), "--partitions", "16",
                 "--quiet"]) == 0
    parts = [read_plan_part(out, k) for k in range(16)]
    facets = [sum(len(block) for block in part.mesh.mesh.facets) for part in parts]
    assert 0 in facets and sum(facets) > 0
    n_cells = read_mesh(DATA / "naca0012_tri.msh").n_cells
    assert sum(part.mesh.mesh.n_cells for part in parts) > n_cells  # with their halos
