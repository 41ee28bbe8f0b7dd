"""Faults of the environment around a run: a disk that fills up.

The tests mount a small tmpfs (root only; skipped, with the reason, elsewhere) and let
both command lines write onto it: each must stop with one line naming the user's file,
exit 1 and leave no temporary file behind.
"""

import subprocess
from pathlib import Path

import pytest

from gpusolver.cli import main as gpusolver_main
from meshorder.cli import main as meshorder_main

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def small_disk(tmp_path):
    """A 200 kB file system at ``tmp_path / "disk"``."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _no_temporaries(folder: Path) -> bool:
    return not [p for p in folder.rglob(".*") if p.is_file()]


def test_a_run_whose_disk_fills_names_the_file_it_could_not_write(tmp_path, small_disk,
                                                                   capsys):
    case = tmp_path / "case.toml"
    case.write_text(f"""
[mesh]
file = "{DATA / 'naca0012_tri.msh'}"
[physics]
mach = 0.5
[boundaries]
airfoil = "slip-wall"
farfield = "farfield"
[run]
backend = "numpy"
iterations = 2
[output]
directory = "{small_disk / 'out'}"
""")
    assert gpusolver_main(["run", str(case), "--quiet"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert f"{small_disk / 'out'}/" in error and "No space left on device while writing" in error
    assert _no_temporaries(small_disk)


def test_a_plan_whose_disk_fills_names_the_plan_and_keeps_the_old_one(small_disk, capsys):
    plan = small_disk / "plan.npz"
    plan.write_text("the plan of yesterday")
    args = ["reorder", str(DATA / "wing.msh"), str(plan), "--quiet"]
    assert meshorder_main(args) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{plan}: No space left on device" in error
    assert plan.read_text() == "the plan of yesterday" and _no_temporaries(small_disk)
