"""Broken inputs through every command: one short message, exit 1 or 2, nothing lost.

Each input of the corpus goes through each command that reads it. The command must
end with exit status 1 (bad input) or 2 (usage), print at most two lines to stderr,
naming the file, and leave no output behind; a file already at the output path stays
as it was. A few cases also run as subprocesses, to check that no traceback escapes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpusolver.cli import main as gpusolver_main
from meshorder.cli import main as meshorder_main

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD_MESH = DATA / "couette_tri_50.msh"
KEPT = b"the user's file, which must survive"


def make_input(kind: str, folder: Path, suffix: str) -> Path:
    """One broken input of the corpus."""
    path = folder / f"input{suffix}"
    good = GOOD_MESH.read_bytes()
    if kind == "missing":
        return folder / f"missing{suffix}"
    if kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(bytes(range(256)) * 40)
    elif kind == "truncated":
        path.write_bytes(good[:len(good) // 3])
    elif kind == "text":
        path.write_text("this is not a mesh, a plan or a checkpoint\n")
    return path


KINDS = ["missing", "folder", "empty", "garbage", "truncated", "text"]


def run(main, argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    return code, capsys.readouterr().err


def check(code: int, err: str, named: str) -> None:
    assert code in (1, 2), err
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2, err
    assert named in err, err
    assert "Traceback" not in err


def write_case(folder: Path, mesh: Path, extra: str = "") -> Path:
    case = folder / "case.toml"
    case.write_text(f'[mesh]\nfile = "{mesh}"\n{extra}\n[physics]\nmach = 0.5\n'
                    '[boundaries]\ninlet = "farfield"\noutlet = "farfield"\n'
                    'bottom = "slip-wall"\ntop = "farfield"\n'
                    '[run]\nbackend = "numpy"\niterations = 2\n'
                    f'[output]\ndirectory = "{folder / "out"}"\n')
    return case


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["info", "reorder", "compare", "plot"])
def test_meshorder_commands_on_broken_meshes(tmp_path, capsys, kind, command):
    mesh = make_input(kind, tmp_path, ".msh")
    out = tmp_path / "plan.npz"
    out.write_bytes(KEPT)
    argv = {"info": ["info", str(mesh)], "reorder": ["reorder", str(mesh), str(out)],
            "compare": ["compare", str(mesh)],
            "plot": ["plot", str(mesh), str(out), "-o", str(tmp_path / "fig.png")]}[command]
    code, err = run(meshorder_main, argv, capsys)
    check(code, err, mesh.name if command != "plot" else tmp_path.name)
    assert out.read_bytes() == KEPT
    assert not (tmp_path / "fig.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p != mesh) == ["plan.npz"]


@pytest.mark.parametrize("kind", KINDS)
def test_meshorder_info_and_plot_on_broken_plans(tmp_path, capsys, kind):
    plan = make_input(kind, tmp_path, ".npz")
    code, err = run(meshorder_main, ["info", str(plan)], capsys)
    check(code, err, plan.name)
    code, err = run(meshorder_main, ["plot", str(GOOD_MESH), str(plan), "-o",
                                     str(tmp_path / "fig.png")], capsys)
    check(code, err, plan.name)
    assert not (tmp_path / "fig.png").exists()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("role", ["mesh", "plan", "restart"])
def test_gpusolver_run_on_broken_inputs(tmp_path, capsys, kind, role):
    broken = make_input(kind, tmp_path, {"mesh": ".msh", "plan": ".npz",
                                         "restart": ".npz"}[role])
    if role == "mesh":
        case = write_case(tmp_path, broken)
    elif role == "plan":
        case = write_case(tmp_path, GOOD_MESH, f'plan = "{broken}"')
    else:
        case = write_case(tmp_path, GOOD_MESH)
        case.write_text(case.read_text().replace("iterations = 2",
                                                 f'iterations = 2\nrestart = "{broken}"'))
    code, err = run(gpusolver_main, ["run", str(case), "--quiet"], capsys)
    check(code, err, broken.name)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "\"fast\""])
@pytest.mark.parametrize("key", ["mach", "cfl", "iterations", "residual_reduction"])
def test_gpusolver_run_on_bad_numbers(tmp_path, capsys, key, value):
    case = write_case(tmp_path, GOOD_MESH)
    text = case.read_text().replace("mach = 0.5\n", "").replace("iterations = 2\n", "")
    section = "[physics]\n" if key == "mach" else "[run]\n"
    extra = "" if key == "mach" else "mach = 0.5\n"
    text = text.replace("[physics]\n", f"[physics]\n{extra}")
    if key != "iterations":
        text = text.replace("[run]\n", "[run]\niterations = 2\n")
    case.write_text(text.replace(section, f"{section}{key} = {value}\n"))
    code, err = run(gpusolver_main, ["run", str(case), "--quiet"], capsys)
    check(code, err, key)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", [
    ["meshorder", "info", "{dir}/garbage.msh"],
    ["meshorder", "reorder", "{dir}/garbage.msh", "{dir}/plan.npz"],
    ["gpusolver", "run", "{dir}/garbage.msh"],
])
def test_no_traceback_escapes_a_real_process(tmp_path, argv):
    (tmp_path / "garbage.msh").write_bytes(bytes(range(256)) * 8)
    tool = argv[0]
    args = [a.format(dir=tmp_path) for a in argv[1:]]
    result = subprocess.run([sys.executable, "-m", tool, *args], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode in (1, 2), result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2, result.stderr
    assert not (tmp_path / "plan.npz").exists()


@pytest.mark.parametrize("argv", [
    (meshorder_main, ["compare", str(GOOD_MESH), "--json", "{file}/r.json"]),
    (meshorder_main, ["bench", str(GOOD_MESH), "--json", "{file}/r.json"]),
    (gpusolver_main, ["bench", "--mesh", str(GOOD_MESH), "--markdown", "{file}/r.md"]),
])
def test_results_paths_under_a_file_stop_before_work(tmp_path, capsys, argv):
    main, args = argv
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    code, err = run(main, [a.format(file=blocker) for a in args], capsys)
    check(code, err, "blocker")
