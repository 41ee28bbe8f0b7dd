"""Plans: contents, save/load round trip, validation, and the mesh digest."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import PlanError
from meshorder.metrics import matrix_metrics, sectors_per_warp
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.plan import Plan, read_plan_part
from meshorder.testing import box_mesh, grid_mesh
from meshorder.topology import CSR


@pytest.fixture(scope="module")
def box_plan():
    mesh = box_mesh(3, 3, 3)
    return mesh, make_plan(mesh, PlanOptions(cells="rcm", colour=True, hyperplanes=True,
                                             nodes="rcm"))


def test_plan_face_arrays_follow_the_new_order(box_plan):
    _, plan = box_plan
    interior = plan.face_marker < 0
    assert np.all(interior[: plan.n_interior_faces]) and not interior[plan.n_interior_faces:].any()
    low = np.minimum(plan.face_cells[interior, 0], plan.face_cells[interior, 1])
    assert np.all(np.diff(low) >= 0)  # greedy: sorted by lower cell
    markers = plan.face_marker[~interior]
    assert np.all(np.diff(markers) >= 0)  # boundary grouped by marker
    assert set(plan.boundary_ranges()) == {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"}


def test_plan_carries_metrics_colours_levels_and_edges(box_plan):
    _, plan = box_plan
    for key in ("bandwidth", "profile", "mean_span", "max_span", "sectors_per_warp_fp32",
                "sectors_per_warp_fp64", "repeated_adds_per_warp", "colours",
                "colour_balance", "forward_levels",
                "forward_min_width", "forward_mean_width", "backward_levels", "node_bandwidth",
                "edge_colours"):
        assert key in plan.metrics
    assert plan.metrics["bandwidth"] <= plan.metrics["native"]["bandwidth"]
    assert plan.colour_offsets[-1] == plan.n_faces
    assert plan.forward_offsets[-1] == plan.n_cells
    assert len(plan.edges) == plan.edge_colour_offsets[-1]


def test_plan_round_trip(tmp_path, box_plan):
    _, plan = box_plan
    path = tmp_path / "plan.npz"
    plan.save(path)
    loaded = Plan.load(path)
    for name in ("cell_order", "node_order", "face_order", "face_cells", "colour_order",
                 "forward_offsets", "edges"):
        assert np.array_equal(getattr(loaded, name), getattr(plan, name))
    assert loaded.metrics == json.loads(json.dumps(plan.metrics))
    assert loaded.marker_names == plan.marker_names
    assert loaded.parameters["cells"] == "rcm"
    with np.load(path, allow_pickle=False) as data:  # readable with no pickle at all
        assert "meta" in data.files


def test_plan_for_another_mesh_is_refused(box_plan):
    _, plan = box_plan
    with pytest.raises(PlanError, match="made for another mesh"):
        plan.check_mesh(box_mesh(3, 3, 2).digest())


def tamper(tmp_path, plan, **changes):
    path = tmp_path / "bad.npz"
    plan.replace(**changes).save(path)
    return path


def test_load_rejects_a_broken_permutation(tmp_path, box_plan):
    _, plan = box_plan
    broken = plan.cell_order.copy()
    broken[0] = broken[1]
    with pytest.raises(PlanError, match="bad.npz: cell_order is not a permutation"):
        Plan.load(tamper(tmp_path, plan, cell_order=broken))


def test_load_rejects_out_of_range_faces(tmp_path, box_plan):
    _, plan = box_plan
    faces = plan.face_cells.copy()
    faces[0, 1] = plan.n_cells
    with pytest.raises(PlanError, match="face_cells holds cell ids outside"):
        Plan.load(tamper(tmp_path, plan, face_cells=faces))


def rewrite(path, **changes):
    """Change arrays (or, with ``meta``, metadata keys) of a saved plan file in place."""
    with np.load(path) as data:
        contents = {name: data[name] for name in data.files}
    meta = json.loads(str(contents.pop("meta"))) | changes.pop("meta", {})
    np.savez(path, meta=np.array(json.dumps(meta)), **(contents | changes))
    return path


def test_load_rejects_group_ids_out_of_range(tmp_path, box_plan):
    _, plan = box_plan
    path = tamper(tmp_path, plan)
    with np.load(path) as data:
        group = data["forward_group"].astype(np.int64)
    group[0] = 10**6
    with pytest.raises(PlanError, match="forward groups hold ids outside"):
        Plan.load(rewrite(path, forward_group=group))


def test_version_1_plans_still_load(tmp_path, box_plan):
    from meshorder.plan import ARRAY_FIELDS

    _, plan = box_plan
    path = tmp_path / "v1.npz"
    meta = {"format_version": 1, "created_by": "meshorder 0.1", "mesh_digest": plan.mesh_digest,
            "parameters": plan.parameters, "metrics": plan.metrics,
            "marker_names": {str(k): v for k, v in plan.marker_names.items()}}
    np.savez(path, meta=np.array(json.dumps(meta)),
             **{name: getattr(plan, name) for name in ARRAY_FIELDS})
    old = Plan.load(path)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(old, name), getattr(plan, name))


@pytest.mark.parametrize("mesh", [grid_mesh(4, 3, "mixed"), box_mesh(2, 2, 2, "prism")],
                         ids=["2d", "3d"])
def test_plan_faces_hold_the_topologys_nodes_and_facets_in_the_new_order(tmp_path, mesh):
    from meshorder import Topology

    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(cells="rcm"))
    np.testing.assert_array_equal(plan.face_nodes, topology.face_nodes[plan.face_order])
    np.testing.assert_array_equal(plan.face_facet, topology.face_facet[plan.face_order])
    assert np.all(plan.face_facet[: plan.n_interior_faces] == -1)
    plan.save(tmp_path / "plan.npz")
    loaded = Plan.load(tmp_path / "plan.npz")
    assert loaded.has_face_nodes()
    np.testing.assert_array_equal(loaded.face_nodes, plan.face_nodes)
    np.testing.assert_array_equal(loaded.face_facet, plan.face_facet)


def test_format_2_plans_load_without_face_nodes(tmp_path, box_plan):
    _, plan = box_plan
    path = rewrite(tamper(tmp_path, plan), meta={"format_version": 2})
    with np.load(path) as data:
        contents = {name: data[name] for name in data.files
                    if name not in ("face_nodes", "face_facet")}
    np.savez(path, **contents)
    old = Plan.load(path)
    assert not old.has_face_nodes() and old.face_nodes.shape == (0, 2)
    np.testing.assert_array_equal(old.face_cells, plan.face_cells)


def test_load_rejects_face_nodes_outside_the_mesh_or_of_another_shape(tmp_path, box_plan):
    _, plan = box_plan
    nodes = plan.face_nodes.copy()
    nodes[0, 0] = len(plan.node_order)
    with pytest.raises(PlanError, match="face_nodes holds node ids outside"):
        Plan.load(tamper(tmp_path, plan, face_nodes=nodes))
    with pytest.raises(PlanError, match="face_nodes has shape"):
        Plan.load(tamper(tmp_path, plan, face_nodes=plan.face_nodes[:-1]))
    with pytest.raises(PlanError, match="face_facet has shape"):
        Plan.load(tamper(tmp_path, plan, face_facet=plan.face_facet[:-1]))


def test_a_new_face_order_takes_every_face_array_along():
    plan = make_plan(grid_mesh(3, 3, "triangle"))
    order = np.arange(plan.n_faces)[::-1]
    turned = plan.with_face_order(order)
    for name in ("face_order", "face_cells", "face_marker", "face_nodes", "face_facet"):
        np.testing.assert_array_equal(getattr(turned, name), getattr(plan, name)[order])
    coloured = make_plan(grid_mesh(3, 3, "triangle"), PlanOptions(colour=True))
    with pytest.raises(PlanError, match="keeps its face order"):
        coloured.with_face_order(order)


@pytest.mark.parametrize("compress", [False, True])
def test_saved_plans_are_compact_and_round_trip_exactly(tmp_path, compress):
    from meshorder.plan import ARRAY_FIELDS

    plan = make_plan(box_mesh(14, 12, 10), PlanOptions(colour=True, hyperplanes=True,
                                                       nodes="rcm"))
    path = tmp_path / "plan.npz"
    plan.save(path, compress=compress)
    back = Plan.load(path)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(back, name), getattr(plan, name))
    int64_bytes = sum(getattr(plan, name).size * 8 for name in ARRAY_FIELDS)
    assert path.stat().st_size < (0.2 if compress else 0.45) * int64_bytes


def test_load_rejects_newer_format_and_non_plans(tmp_path, box_plan):
    _, plan = box_plan
    with pytest.raises(PlanError, match="newer than this meshorder reads"):
        Plan.load(rewrite(tamper(tmp_path, plan), meta={"format_version": 99}))
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(PlanError, match="junk.npz: not a meshorder plan"):
        Plan.load(junk)
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    with pytest.raises(PlanError, match="no metadata"):
        Plan.load(tmp_path / "other.npz")


def test_failed_save_leaves_existing_file_alone(tmp_path, box_plan, monkeypatch):
    _, plan = box_plan
    path = tmp_path / "plan.npz"
    path.write_bytes(b"precious")

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(np, "savez", explode)
    with pytest.raises(RuntimeError):
        plan.save(path)
    assert path.read_bytes() == b"precious"
    assert os.listdir(tmp_path) == ["plan.npz"]


def test_renumber_by_level_makes_levels_contiguous():
    mesh = grid_mesh(8, 6, "triangle")
    plan = make_plan(mesh, PlanOptions(cells="rcm", hyperplanes=True, renumber_by_level=True))
    assert np.array_equal(plan.forward_order, np.arange(plan.n_cells))


def test_matrix_metrics_golden():
    # path 0-1-2 numbered 1, 0, 2 -> edges (1,0), (0,2) in new ids
    graph = CSR.from_pairs(np.array([1, 0]), np.array([0, 2]), 3)
    assert matrix_metrics(graph) == {"bandwidth": 2, "profile": 3, "mean_span": 5 / 3,
                                     "max_span": 2}


def test_sectors_per_warp_golden():
    # one warp: faces (i, i + 32) for i < 32 -> fp64 sectors 0..7 and 8..15
    faces = np.column_stack([np.arange(32), np.arange(32) + 32])
    assert sectors_per_warp(faces, 8) == 16
    assert sectors_per_warp(faces, 4) == 8
    shuffled = np.column_stack([np.arange(32) * 100, np.full(32, -1)])
    assert sectors_per_warp(shuffled, 8) == 32


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_plan_files_give_one_line_errors(tmp_path, damage):
    from meshorder.cli import main as meshorder_main

    path = tmp_path / "plan.npz"
    make_plan(grid_mesh(6, 5), PlanOptions(colour=True)).save(path)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    else:
        for offset in range(100, len(data), 97):
            data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(PlanError, match="plan.npz: not a"):
        Plan.load(path)
    assert meshorder_main(["info", str(path)]) == 1


@settings(max_examples=60, deadline=None)
@given(offsets=st.lists(st.integers(0, 10**6), min_size=1, max_size=4))
def test_a_plan_with_any_bytes_flipped_loads_or_gives_a_plan_error(tmp_path_factory, offsets):
    """Whatever bytes a damaged disk flips, loading says PlanError or succeeds (a flip in
    an unread zip field); never another exception (zipfile alone raises four kinds)."""
    path = tmp_path_factory.mktemp("flip") / "plan.npz"
    make_plan(grid_mesh(6, 5), PlanOptions(colour=True, partitions=2)).save(path)
    data = bytearray(path.read_bytes())
    for offset in offsets:
        data[offset % len(data)] ^= 0xFF
    path.write_bytes(bytes(data))
    for load in (Plan.load, lambda p: read_plan_part(p, 1)):
        try:
            load(path)
        except PlanError as error:
            assert str(error).startswith(str(path))


def test_temporaries_of_killed_writers_are_removed_by_the_next_write(tmp_path):
    import subprocess
    import sys

    from meshorder.atomic import atomic_path

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f".plan.{dead.stdout.strip()}.abcd1234.npz"
    alive = tmp_path / f".plan.{os.getpid()}.efgh5678.npz"  # a writer still running
    other = tmp_path / ".notes.txt"
    for path in (stale, alive, other):
        path.write_text("x")
    with atomic_path(tmp_path / "plan.npz") as tmp:
        tmp.write_text("new plan")
    assert not stale.exists() and alive.exists() and other.exists()
    assert (tmp_path / "plan.npz").read_text() == "new plan"


_PLAN_BYTES: list[bytes] = []


def _plan_bytes(tmp_dir) -> bytes:
    if not _PLAN_BYTES:
        path = tmp_dir / "plan.npz"
        make_plan(grid_mesh(8, 6), PlanOptions(colour=True, hyperplanes=True)).save(path)
        _PLAN_BYTES.append(path.read_bytes())
    return _PLAN_BYTES[0]


@settings(max_examples=40, deadline=None)
@given(cut=st.floats(0.0, 1.0), flips=st.lists(st.integers(0, 10**9), max_size=3))
def test_damaged_plans_load_or_fail_with_a_plan_error(tmp_path_factory, cut, flips):
    folder = tmp_path_factory.mktemp("plans")
    data = bytearray(_plan_bytes(folder))
    for position in flips:
        data[position % len(data)] ^= 0x5A
    path = folder / "damaged.npz"
    path.write_bytes(bytes(data[:int(cut * len(data)) or 1]))
    try:
        Plan.load(path)
    except PlanError as error:
        assert "damaged.npz" in str(error)


def test_face_blocks_in_the_plan_equal_building_them_and_round_trip(tmp_path):
    from meshorder.blocks import BLOCK_ARRAYS, build_face_blocks

    mesh = box_mesh(6, 5, 4)
    plan = make_plan(mesh, PlanOptions(blocks=64))
    blocks = plan.face_blocks()
    expected = build_face_blocks(plan.face_cells[:, 0], plan.face_cells[:, 1], plan.n_cells, 64)
    path = tmp_path / "plan.npz"
    plan.save(path)
    loaded = Plan.load(path).face_blocks()
    for name in BLOCK_ARRAYS:
        np.testing.assert_array_equal(getattr(blocks, name), getattr(expected, name))
        np.testing.assert_array_equal(getattr(loaded, name), getattr(expected, name))
        assert getattr(loaded, name).dtype == getattr(expected, name).dtype
    assert loaded.block_size == 64 and plan.metrics["block_colours"] >= 2
    assert make_plan(mesh).face_blocks() is None


def test_load_rejects_face_blocks_outside_the_mesh(tmp_path):
    plan = make_plan(box_mesh(3, 3, 3), PlanOptions(blocks=16))
    cells = plan.block_cells.copy()
    cells[0] = plan.n_cells + 5
    with pytest.raises(PlanError, match="face blocks hold cells outside the mesh"):
        Plan.load(tamper(tmp_path, plan, block_cells=cells))


def test_multigrid_levels_in_the_plan_are_those_of_the_new_cell_graph_and_round_trip(tmp_path):
    from meshorder.agglomeration import hierarchy
    from meshorder.metrics import renumber_graph
    from meshorder.topology import Topology

    mesh = grid_mesh(40, 40, "triangle")
    plan = make_plan(mesh, PlanOptions(multigrid=2))
    levels = plan.coarse_levels()
    expected = hierarchy(renumber_graph(Topology(mesh).cell_graph, plan.cell_order), 2)
    assert len(levels) == 2 and len(levels[0]) == plan.n_cells
    for got, want in zip(levels, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert plan.metrics["multigrid_cells"] == [int(m.max()) + 1 for m in levels]
    path = tmp_path / "plan.npz"
    plan.save(path)
    for got, want in zip(Plan.load(path).coarse_levels(), levels, strict=True):
        np.testing.assert_array_equal(got, want)
    assert make_plan(mesh).coarse_levels() == []


def test_load_rejects_multigrid_levels_that_do_not_chain(tmp_path):
    plan = make_plan(grid_mesh(40, 40, "triangle"), PlanOptions(multigrid=2))
    cells = plan.coarse_cells.copy()
    cells[0] = plan.n_cells  # a coarse cell beyond the level's cells
    with pytest.raises(PlanError, match="multigrid level 1"):
        Plan.load(tamper(tmp_path, plan, coarse_cells=cells))
    with pytest.raises(PlanError, match="multigrid levels do not add up"):
        Plan.load(tamper(tmp_path, plan, coarse_offsets=plan.coarse_offsets[:-1]))


def test_coarse_sweep_colours_round_trip_and_must_cover_the_coarse_cells(tmp_path):
    plan = make_plan(grid_mesh(40, 40, "triangle"), PlanOptions(multigrid=2,
                                                                sweep_colours=True))
    assert len(plan.coarse_colours()) == 2
    plan.save(tmp_path / "plan.npz")
    for saved, made in zip(Plan.load(tmp_path / "plan.npz").coarse_colours(),
                           plan.coarse_colours(), strict=True):
        np.testing.assert_array_equal(saved, made)
    assert make_plan(grid_mesh(40, 40, "triangle"), PlanOptions(multigrid=2)).coarse_colours() == []
    with pytest.raises(PlanError, match="coarse_colour must hold a colour"):
        Plan.load(tamper(tmp_path, plan, coarse_colour=plan.coarse_colour[:-1]))


def test_nested_temporaries_of_killed_writers_are_removed_too(tmp_path):
    """``meshorder reorder`` writes the plan through a temporary whose own save writes
    through another: ``..plan.<pid>.<rand>.<pid>.<rand>.npz``, stale once the outer
    writer is gone."""
    import subprocess
    import sys

    from meshorder.atomic import atomic_path

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    nested = tmp_path / f"..plan.{dead}.abcd1234.{dead}.efgh5678.npz"
    foreign = tmp_path / f".myplan.{dead}.abcd1234.npz"  # another file's temporary
    for path in (nested, foreign):
        path.write_text("x")
    with atomic_path(tmp_path / "plan.npz") as tmp:
        tmp.write_text("new plan")
    assert not nested.exists() and foreign.exists()


@pytest.mark.parametrize("failure, reason", [
    (OSError(28, "No space left on device"), "No space left on device while writing it; "
                                             "free space there"),
    (OSError(5, "Input/output error"), "Input/output error"),
])
def test_a_failed_write_names_the_users_file_and_keeps_the_old_one(tmp_path, failure, reason):
    from meshorder.atomic import atomic_path

    target = tmp_path / "checkpoint.npz"
    target.write_text("old")
    with pytest.raises(OSError) as raised, atomic_path(target) as tmp:
        tmp.write_text("half")
        raise failure
    assert raised.value.filename == str(target) and raised.value.strerror.startswith(reason)
    assert target.read_text() == "old" and sorted(tmp_path.iterdir()) == [target]


def test_a_folder_in_the_way_is_named_not_the_temporary(tmp_path):
    from meshorder.atomic import atomic_path

    target = tmp_path / "solution.vtu"
    target.mkdir()
    with pytest.raises(OSError) as raised, atomic_path(target) as tmp:
        tmp.write_text("data")
    assert raised.value.filename == str(target)
    assert raised.value.strerror == "is a folder, not a file"
    assert sorted(tmp_path.iterdir()) == [target]


def test_an_atomic_write_reaches_the_disk_before_and_after_its_rename(tmp_path, monkeypatch):
    """``fsync`` of the new file before the rename, and of its folder after it: a crash
    leaves the old file or the new one under the name, never an empty one."""
    from meshorder import atomic

    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    target = tmp_path / "plan.npz"
    with atomic.atomic_path(target) as tmp:
        tmp.write_text("new")
    assert len(synced) == 2
    assert Path(synced[0]).name.startswith(".plan.") and synced[1] == str(tmp_path)


def test_a_plan_whose_groups_name_no_group_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "plan.npz"
    make_plan(grid_mesh(5, 4), PlanOptions(colour=True)).save(path)
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["colour_group"] = arrays["colour_group"].astype(np.int64) + 1000  # new checksums
    np.savez(path, **arrays)
    with pytest.raises(PlanError, match="colour groups hold ids outside") as error:
        Plan.load(path)
    assert str(error.value).startswith(str(path))
