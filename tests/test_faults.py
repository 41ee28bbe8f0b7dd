"""Faults of the environment around a run: a disk that fills up, signals at any moment.

The disk tests mount a small tmpfs (root only; skipped, with the reason, elsewhere) and
let both command lines write onto it: each must stop with one line naming the user's
file, exit 1 and leave no temporary file behind. The signal tests interrupt both command
lines at many moments: each ends at once with exit code 130, the user's previous file
intact or the new one whole, and no temporary file. Several ranks under faults:
``tests/gpusolver/test_rank_faults.py``.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
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


def _as_in_a_terminal() -> None:
    """A child's Ctrl-C as in a terminal: a suite started in the background (``cmd &``
    in a script) hands its children SIGINT ignored, and Python keeps it so."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted(command: list[str], cwd: Path, after: float, number=signal.SIGINT,
                 ready: Path | None = None) -> subprocess.CompletedProcess:
    """``command`` sent ``number`` ``after`` seconds (counted once ``ready`` exists)."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 60
    while ready is not None and not ready.exists() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(after)
    process.send_signal(number)
    sent = time.monotonic()
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(command, process.returncode, out,
                                       f"{err}\n(ended {time.monotonic() - sent:.1f} s after "
                                       "the signal)")


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_meshing_stops_at_once_on_ctrl_c_and_sigterm(tmp_path, number):
    """gmsh holds signals back until it has meshed (minutes at large sizes): the mesher
    runs in a child process that the command stops at once."""
    command = [sys.executable, "-m", "meshorder", "generate", "oneram6", "m6.msh",
               "--cells", "2000000"]
    start = time.monotonic()
    ended = _interrupted(command, tmp_path, after=3.0, number=number)
    assert ended.returncode == 130, ended.stderr
    assert time.monotonic() - start < 12, ended.stderr  # gmsh alone takes minutes
    assert "meshorder: interrupted" in ended.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("after", [0.0, 0.4, 0.8, 1.2, 1.6, 2.0])
def test_a_plan_interrupted_at_any_moment_is_whole_or_the_old_one(tmp_path, after):
    plan = tmp_path / "plan.npz"
    plan.write_text("the plan of yesterday")
    command = [sys.executable, "-m", "meshorder", "reorder", str(DATA / "box.msh"),
               str(plan), "--colour", "--quiet"]
    ended = _interrupted(command, tmp_path, after=after, number=signal.SIGTERM)
    # -SIGTERM: the signal came before Python had started the command
    assert ended.returncode in (0, 130, -signal.SIGTERM), ended.stderr
    if ended.returncode == 0 or plan.read_bytes() != b"the plan of yesterday":
        with np.load(plan) as data:  # a whole plan replaced it (a signal after the rename
            assert "cell_order" in data.files  # stops the command, not the plan)
    assert _no_temporaries(tmp_path)


INTERRUPTED_INSIDE_EXEC = """
import sys
from meshorder.termination import interrupt_handled

try:
    exec("raise KeyboardInterrupt")  # as a library's import can be interrupted (SciPy's)
except KeyboardInterrupt:
    {handled}
sys.exit(130)
"""


@pytest.mark.parametrize("handled", [True, False], ids=["handled", "not-told"])
def test_an_interrupt_caught_inside_exec_ends_with_the_exit_code_130(tmp_path, handled):
    """Under ``python -m``, CPython kills a process by SIGINT at exit after an interrupt
    inside ``exec``, caught or not, unless told that it was handled (``python -m meshorder
    reorder`` interrupted while importing SciPy ended as -2 instead of 130)."""
    script = INTERRUPTED_INSIDE_EXEC.format(handled="interrupt_handled()" if handled else "pass")
    (tmp_path / "interrupted_inside_exec.py").write_text(script)
    done = subprocess.run([sys.executable, "-m", "interrupted_inside_exec"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30,
                          preexec_fn=_as_in_a_terminal)
    assert done.returncode == (130 if handled else -signal.SIGINT), done.stderr


INTERRUPTED_IN_ANOTHER_THREAD = """
import signal, threading, time
from meshorder.termination import in_child_process

def ctrl_c_in_this_thread():  # as the kernel may hand it to a progress bar's thread
    time.sleep(2.0)  # the main thread waits for its child by now
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=ctrl_c_in_this_thread, daemon=True).start()
begun = time.monotonic()
try:
    in_child_process(time.sleep, 60)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - begun:.1f} s")
"""


def test_ctrl_c_taken_by_another_thread_stops_the_wait_for_the_child():
    """Ctrl-C that the kernel handed to another thread than the main one (which then
    does not leave its wait) still stops the wait for the child at once."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IN_ANOTHER_THREAD],
                          capture_output=True, text=True, timeout=30,
                          preexec_fn=_as_in_a_terminal)
    assert done.stdout.startswith("interrupted after "), done.stderr
    assert float(done.stdout.split()[2]) < 10


def test_a_child_process_hands_back_its_error_and_its_death():
    """What :func:`meshorder.termination.in_child_process` does when the call fails in
    the child (the same exception here) or the child dies without an answer."""
    import os

    from meshorder.termination import in_child_process

    with pytest.raises(ValueError, match="invalid literal"):
        in_child_process(int, "not a number")
    with pytest.raises(RuntimeError, match=r"_exit ended without an answer \(exit code 3\)"):
        in_child_process(os._exit, 3)
