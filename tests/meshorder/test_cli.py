"""The command line: outputs, exit codes, and no half-written files."""

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from meshorder import Topology, read_mesh
from meshorder.cli import main
from meshorder.plan import Plan

from .conftest import make_square


@pytest.fixture
def square(tmp_path):
    return make_square(tmp_path / "square.msh")


def test_reorder_writes_a_valid_plan_and_prints_metrics(tmp_path, square, capsys):
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(square), str(out), "--colour", "--hyperplanes"]) == 0
    plan = Plan.load(out)
    plan.check_mesh(read_mesh(square).digest())
    text = capsys.readouterr().out
    assert "sectors_per_warp_fp64" in text and "colours" in text and "forward_levels" in text
    times = re.search(r"^time: read \S+s, topology .*, write \S+s; total \S+s$", text, re.M)
    assert times and "colour" in times.group(0) and "hyperplanes" in times.group(0)


def test_sweep_colours_make_few_wide_sweep_levels(tmp_path, square, capsys):
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(square), str(out), "--sweep-colours", "--quiet"]) == 0
    plan = Plan.load(out)
    colours = len(plan.forward_offsets) - 1
    assert 2 <= colours <= 5  # first fit: at most the largest degree (4) + 1
    assert len(plan.backward_offsets) - 1 == colours


def test_multigrid_levels_are_stored_in_the_plan_and_listed_by_info(tmp_path, capsys):
    from meshorder import write_mesh
    from meshorder.testing import grid_mesh

    mesh_path, out = tmp_path / "grid.msh", tmp_path / "plan.npz"
    write_mesh(grid_mesh(40, 40, "triangle"), mesh_path)
    assert main(["reorder", str(mesh_path), str(out), "--multigrid", "2", "--quiet"]) == 0
    plan = Plan.load(out)
    assert plan.parameters["multigrid"] == 2
    cells = [int(m.max()) + 1 for m in plan.coarse_levels()]
    assert plan.metrics["multigrid_cells"] == cells and len(cells) == 2
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "multigrid level" in printed and all(str(n) in printed for n in cells)


def test_sweep_colours_and_renumbering_by_level_are_a_usage_error(tmp_path, square, capsys):
    out = tmp_path / "plan.npz"
    args = ["reorder", str(square), str(out), "--sweep-colours", "--renumber-by-level"]
    assert main(args) == 2
    assert "exclude each other" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("cells", ["native", "random", "rcm", "metis", "layers", "hilbert",
                                   "morton"])
def test_every_registered_ordering_is_usable_from_the_cli(tmp_path, square, cells):
    out = tmp_path / f"{cells}.npz"
    assert main(["reorder", str(square), str(out), "--cells", cells, "--quiet"]) == 0
    assert Plan.load(out).parameters["cells"] == cells


def test_layers_with_seed_markers_and_layered_faces(tmp_path, square):
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(square), str(out), "--cells", "layers", "--faces", "layered",
                 "--seed-markers", "wall", "--nodes", "hilbert", "--colour", "--quiet"]) == 0
    plan = Plan.load(out)
    assert len(plan.edges) > 0 and len(plan.edge_colour_order) == len(plan.edges)


def test_unknown_seed_marker_is_bad_input(tmp_path, square, capsys):
    out = tmp_path / "plan.npz"
    code = main(["reorder", str(square), str(out), "--cells", "layers", "--seed-markers", "roof"])
    assert code == 1
    assert "unknown marker(s) roof; the mesh has far, wall" in capsys.readouterr().err
    assert not out.exists()


def test_bad_input_exits_1_with_one_line_and_no_output(tmp_path, capsys):
    bad = tmp_path / "bad.msh"
    bad.write_text("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0")
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(bad), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("meshorder: error: ") and "bad.msh" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()
    assert os.listdir(tmp_path) == ["bad.msh"]


def test_bad_input_keeps_an_existing_output(tmp_path):
    bad = tmp_path / "bad.su2"
    bad.write_text("NDIME= 2\n")
    out = tmp_path / "plan.npz"
    out.write_bytes(b"old plan")
    assert main(["reorder", str(bad), str(out)]) == 1
    assert out.read_bytes() == b"old plan"


def test_bad_usage_exits_2(tmp_path, square):
    with pytest.raises(SystemExit) as exc:
        main(["reorder", str(square), str(tmp_path / "p.npz"), "--cells", "fancy"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(square), "--orderings", "rcm,fancy"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["generate", "wing", str(tmp_path / "w.msh"), "--cells", "100", "--prism-layers",
              "-1"])
    assert exc.value.code == 2
    assert not (tmp_path / "w.msh").exists()


def test_unwritable_mesh_format_fails_before_any_work(tmp_path, square, capsys):
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(square), str(out), "--write-mesh", str(tmp_path / "m.xyz")]) == 1
    assert "cannot write files with extension '.xyz'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".msh", ".vtu", ".xdmf"])
def test_written_mesh_is_the_same_mesh_in_the_new_order(tmp_path, square, suffix):
    out = tmp_path / "plan.npz"
    written = tmp_path / f"reordered{suffix}"
    assert main(["reorder", str(square), str(out), "--write-mesh", str(written), "--quiet"]) == 0
    original, again = read_mesh(square), read_mesh(written)
    plan = Plan.load(out)
    new_cells = original.points[original.cells[0].nodes[plan.cell_order]]
    assert np.allclose(again.points[again.cells[0].nodes][:, :, :2], new_cells[:, :, :2])
    # the written file's native order is the plan's order: it needs no reordering
    topo = Topology(again)
    assert np.array_equal(np.sort(topo.face_cells[:, 0]), topo.face_cells[:, 0])
    if suffix == ".msh":
        assert set(again.marker_names.values()) == {"wall", "far"}
    assert again.n_facets == original.n_facets


def test_info_on_mesh_and_plan(tmp_path, square, capsys):
    assert main(["info", str(square)]) == 0
    text = capsys.readouterr().out
    assert "triangle" in text and "wall" in text and "components" in text
    out = tmp_path / "plan.npz"
    main(["reorder", str(square), str(out), "--quiet"])
    assert main(["info", str(out)]) == 0
    assert "mesh digest" in capsys.readouterr().out


def test_compare_tabulates_every_ordering(tmp_path, square, capsys):
    json_out = tmp_path / "cmp.json"
    assert main(["compare", str(square), "--json", str(json_out)]) == 0
    text = capsys.readouterr().out
    for name in ("native", "random", "rcm", "metis", "layers", "hilbert", "morton"):
        assert f"| {name}" in text
    rows = json.loads(json_out.read_text())
    assert [r["ordering"] for r in rows][:3] == ["native", "random", "rcm"]


def test_plot_writes_an_image(tmp_path, square):
    out = tmp_path / "plan.npz"
    main(["reorder", str(square), str(out), "--colour", "--hyperplanes", "--quiet"])
    image = tmp_path / "fig.png"
    assert main(["plot", str(square), str(out), "-o", str(image)]) == 0
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_refuses_a_plan_for_another_mesh(tmp_path, square, capsys):
    other = make_square(tmp_path / "other.msh", physical=False)
    out = tmp_path / "plan.npz"
    main(["reorder", str(other), str(out), "--quiet"])
    assert main(["plot", str(square), str(out), "-o", str(tmp_path / "f.png")]) == 1
    assert "made for another mesh" in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()


def test_console_script_exit_codes(tmp_path):
    exe = [sys.executable, "-m", "meshorder"]
    assert subprocess.run([*exe, "info", str(tmp_path / "missing.su2")],
                          capture_output=True).returncode == 1
    assert subprocess.run([*exe, "frobnicate"], capture_output=True).returncode == 2


@pytest.mark.parametrize("argv", [
    ["generate", "box", "x.msh", "--cells", "0"],
    ["generate", "box", "x.msh", "--cells", "-5"],
    ["generate", "box", "x.msh", "--cells", "many"],
    ["generate", "box", "x.msh", "--cells", "100", "--threads", "-3"],
    ["reorder", "in.msh", "out.npz", "--cluster-size", "0"],
    ["info", "in.msh", "--mesh-size-factor", "nan"],
    ["info", "in.msh", "--mesh-size-factor", "-1"],
])
def test_numeric_options_out_of_range_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "expected" in capsys.readouterr().err


@pytest.mark.parametrize(("geometry", "option"), [("box", ["--prism-layers", "2"]),
                                                  ("cylinder", ["--kind", "quad"]),
                                                  ("naca0012-tri", ["--threads", "2"]),
                                                  ("box", ["--order", "2"])])
def test_geometry_options_on_the_wrong_geometry_are_usage_errors(tmp_path, geometry, option,
                                                                 capsys):
    out = tmp_path / "x.msh"
    assert main(["generate", geometry, str(out), "--cells", "1000", *option]) == 2
    assert "applies to" in capsys.readouterr().err
    assert not out.exists()


def test_reorder_writes_every_output_or_none_and_keeps_what_was_there(tmp_path, monkeypatch,
                                                                       capsys):
    from meshorder.cli import reorder as reorder_cli
    from meshorder.errors import MeshWriteError

    mesh = tmp_path / "square.msh"
    make_square(mesh)
    plan, out = tmp_path / "plan.npz", tmp_path / "out.vtu"
    plan.write_bytes(b"the user's old plan")

    def failing_write(*args, **kwargs):
        raise MeshWriteError(f"{args[1]}: cannot write this format: disk on fire")

    monkeypatch.setattr(reorder_cli, "write_mesh", failing_write)
    assert main(["reorder", str(mesh), str(plan), "--write-mesh", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{out}: cannot write this format" in err and ".out." not in err
    assert plan.read_bytes() == b"the user's old plan" and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.npz", "square.msh"]


@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_reorder_refuses_unwritable_outputs_before_any_work(tmp_path, where, capsys):
    mesh = tmp_path / "square.msh"
    make_square(mesh)
    (tmp_path / "afile").write_text("x")
    target = tmp_path / "afile" / "plan.npz" if where == "under-a-file" else tmp_path
    assert main(["reorder", str(mesh), str(target), "--quiet"]) == 1
    assert "not a" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["figure.foo", "figure"])
def test_plot_refuses_an_image_format_it_cannot_write_before_work(tmp_path, name, capsys):
    assert main(["plot", "missing.msh", "missing.npz", "-o", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert name in err and ".png" in err and "Traceback" not in err


def test_generate_writes_any_meshio_format_with_its_markers(tmp_path, capsys):
    out = tmp_path / "box.vtu"
    assert main(["generate", "box", str(out), "--cells", "500"]) == 0
    assert sorted(read_mesh(out).marker_names.values()) == ["xmax", "xmin", "ymax", "ymin",
                                                              "zmax", "zmin"]
    assert main(["generate", "box", str(tmp_path / "box.xyz"), "--cells", "500"]) == 2
    assert "extension '.xyz'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["box.vtu"]


def test_large_meshes_plot_their_adjacency_as_a_density_image(tmp_path, monkeypatch):
    from meshorder import plot as plot_module
    from meshorder.pipeline import make_plan
    from meshorder.testing import box_mesh

    monkeypatch.setattr(plot_module, "MAX_DOTS", 100)  # this box has ~9k neighbour pairs
    mesh = box_mesh(8, 8, 8)
    figure = plot_module.plan_figure(Topology(mesh), make_plan(mesh))
    images = [ax.get_images() for ax in figure.axes[:2]]
    assert all(len(i) == 1 for i in images)
    assert images[0][0].get_array().shape == (plot_module.DENSITY_BINS,) * 2


def test_reorder_blocks_puts_face_blocks_in_the_plan(tmp_path, capsys):
    mesh = tmp_path / "square.msh"
    make_square(mesh)
    out = tmp_path / "plan.npz"
    assert main(["reorder", str(mesh), str(out), "--blocks", "32", "--quiet"]) == 0
    assert Plan.load(out).face_blocks().block_size == 32
    assert main(["reorder", str(mesh), str(out), "--blocks", "20000", "--quiet"]) == 2
    assert "at most 16383" in capsys.readouterr().err


def test_reorder_refuses_a_mesh_output_on_the_plan_path(tmp_path, square, capsys):
    out = tmp_path / "plan.vtu"
    assert main(["reorder", str(square), str(out), "--write-mesh", str(out)]) == 2
    assert "is the plan's own path" in capsys.readouterr().err
    assert not out.exists()


def test_the_console_command_keeps_freed_memory_in_its_own_process_only():
    # in a child process: the allocator setting is process-wide and must not leak into
    # pytest's; on Linux with glibc it takes effect
    code = ("from meshorder.allocator import keep_freed_memory; "
            "print(keep_freed_memory(), keep_freed_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert out == [str(glibc)] * 2


@pytest.mark.parametrize("outputs", [["IN"], ["out.vtu"], ["plan.npz", "--write-mesh", "IN"]])
def test_reorder_refuses_to_write_over_its_input_or_a_plan_under_a_mesh_name(tmp_path, capsys,
                                                                             outputs):
    """A plan written over the mesh (or a reordered mesh over its own input) would lose
    the user's file; a plan named like a mesh would be a zip under a mesh extension."""
    mesh = tmp_path / "m.msh"
    data = Path(__file__).resolve().parents[2] / "data"
    mesh.write_bytes((data / "naca0012_tri.msh").read_bytes())
    before = mesh.read_bytes()
    args = [str(mesh) if a == "IN" else (a if a.startswith("-") else str(tmp_path / a))
            for a in outputs]
    assert main(["reorder", str(mesh), *args, "--quiet"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and ("input mesh" in error or ".npz" in error)
    assert mesh.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.msh"]


def test_info_gives_each_markers_extent_and_the_bodys_axes(capsys):
    """A wing exported y-up (the shipped data/wing.msh spans along z): info says along
    which axes the smallest marker, the body, is longest and thinnest."""
    data = Path(__file__).resolve().parents[2] / "data"
    assert main(["info", str(data / "wing.msh")]) == 0
    printed = capsys.readouterr().out
    assert "| boundary marker | faces | extent x | extent y | extent z |" in printed
    assert re.search(r"\| wing +\| 1554 +\| 2\.232 +\| 0\.12 +\| 3 +\|", printed)
    assert "note: the smallest marker, wing, extends most along z and least along y" in printed
