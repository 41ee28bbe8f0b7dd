"""Several ranks under faults: a rank that dies, fails or stops answering stops them all
within a bounded time, with one line naming it, and the last checkpoint stays whole.

The runs use mpich's ``mpiexec.gforker``, which (unlike its default launcher, Hydra)
does not clean up the other ranks when one dies: the ranks must find out by
themselves (:class:`gpusolver.rank_watch.RankWatch`), as under a launcher that does not.
Each runs on the CPU (mpi-host) and, with two GPUs, on them through NCCL (a rank then
waits inside the GPU's NCCL kernels, not in MPI).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from .test_fv_partitioned import _plan_in_parts

DATA = Path(__file__).resolve().parents[2] / "data"

CASE = """
[mesh]
file = "{mesh}"
plan = "plan.npz"

[physics]
mach = 0.5
aoa_deg = 1.0

[boundaries]
airfoil = "slip-wall"
farfield = "farfield"

[run]
{run}
time_integrator = "rk4"
iterations = 10000000
rank_timeout = {timeout}

[output]
directory = "out"
checkpoint_every = 20
"""


#: The ``[run]`` lines of each way the ranks talk.
TRANSPORTS = {
    "mpi-host": 'backend = "numpy"',
    "nccl": pytest.param('backend = "cupy"\ntransport = "nccl"', marks=pytest.mark.gpu),
}


@pytest.fixture(params=TRANSPORTS.values(), ids=TRANSPORTS.keys())
def run_keys(request) -> str:
    if "nccl" in request.param:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 2:
            pytest.skip("nccl between two ranks needs two GPUs")
    return request.param


def _forker() -> str:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    launcher = shutil.which("mpiexec.gforker", path=path)
    if launcher is None:
        pytest.skip("no mpiexec.gforker (the mpich wheel)")
    if not Path("/proc/self/environ").exists():
        pytest.skip("finds the ranks' processes through /proc")
    return launcher


def _start(tmp_path: Path, run_keys: str, timeout: float = 60) -> subprocess.Popen:
    """``gpusolver run`` of a long case on two ranks, once it has written history rows."""
    launcher = _forker()
    mesh = DATA / "naca0012_tri.msh"
    _plan_in_parts(tmp_path, mesh)
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(mesh=mesh, timeout=timeout, run=run_keys))
    process = subprocess.Popen(
        [launcher, "-n", "2", sys.executable, "-m", "gpusolver", "run", str(case), "--quiet"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    history = tmp_path / "out" / "history.csv"
    deadline = time.monotonic() + 120
    while not (history.exists() and len(history.read_text().splitlines()) > 45):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no history rows within 120 s"
        time.sleep(0.1)
    return process


def _rank_pid(case: Path, rank: int) -> int:
    """The process of ``rank`` running ``case`` (from the environment the launcher gave)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(case).encode() in command and f"PMI_RANK={rank}".encode() in environment:
            return int(entry.name)
    raise AssertionError(f"no process of rank {rank}")


def _ended_within(process: subprocess.Popen, seconds: float) -> str:
    try:
        _, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"the ranks still ran {seconds} s after the fault") from None
    return err


def _checkpoint_is_whole(tmp_path: Path) -> None:
    with np.load(tmp_path / "out" / "checkpoint.npz") as data:
        iteration = json.loads(str(data["meta"]))["iteration"]
        assert np.isfinite(data["conserved"]).all()
    iterations = np.loadtxt(tmp_path / "out" / "history.csv", delimiter=",", skiprows=1,
                            ndmin=2)[:, 0]
    assert iteration in iterations


def test_a_killed_rank_stops_the_other_with_a_line_naming_it(tmp_path, run_keys):
    process = _start(tmp_path, run_keys)
    victim = _rank_pid(tmp_path / "case.toml", 1)
    killed = time.monotonic()
    subprocess.run(["kill", "-9", str(victim)], check=True)
    err = _ended_within(process, 30)
    assert time.monotonic() - killed < 30
    assert f"gpusolver: error: rank 0 of 2: stopping: rank 1 (pid {victim}) has died" in err
    _checkpoint_is_whole(tmp_path)


def test_a_rank_that_cannot_write_stops_the_other(tmp_path, run_keys):
    """The root alone writes: its failure (here a folder where the checkpoint goes) must
    not leave rank 1 waiting in the next halo exchange."""
    process = _start(tmp_path, run_keys)
    checkpoint = tmp_path / "out" / "checkpoint.npz"
    kept = tmp_path / "kept.npz"
    checkpoint.rename(kept)
    checkpoint.mkdir()
    err = _ended_within(process, 30)
    assert "gpusolver: error: rank 0 of 2: " in err and "checkpoint.npz" in err
    assert "gpusolver: error: rank 1 of 2: stopping: rank 0 failed: " in err
    assert process.returncode != 0
    checkpoint.rmdir()
    kept.rename(checkpoint)
    _checkpoint_is_whole(tmp_path)


def test_a_rank_that_stops_answering_is_named_and_the_other_leaves(tmp_path, run_keys):
    process = _start(tmp_path, run_keys, timeout=2)
    case = tmp_path / "case.toml"
    root, stuck = _rank_pid(case, 0), _rank_pid(case, 1)
    subprocess.run(["kill", "-STOP", str(stuck)], check=True)
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{root}").exists() and _state(root) != "Z":
            assert time.monotonic() < deadline, "rank 0 still runs 30 s after rank 1 stopped"
            time.sleep(0.1)
    finally:
        subprocess.run(["kill", "-9", str(stuck)], check=False)
    err = _ended_within(process, 30)
    assert "gpusolver: error: rank 0 of 2: stopping: rank 1 " in err
    assert "has not answered for 2 s" in err


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return "Z"


def test_a_step_interval_far_past_the_longest_stops_the_rank():
    """The watch of a rank's own loop: intervals as long as before pass; one far longer
    (a collective or a GPU that does not answer) stops the rank with one line."""
    from mpi4py import MPI

    from gpusolver.rank_watch import RankWatch

    lines, codes = [], []
    watch = RankWatch(MPI.COMM_SELF, timeout=0.3, say=lines.append, stop=codes.append)
    watch.pulse(True)
    for _ in range(3):
        time.sleep(0.1)
        watch.pulse(True)
    assert not codes
    time.sleep(1.5)  # past 0.3 s + twice the longest interval
    assert codes == [1]
    assert lines and lines[0].startswith("rank 0 of 1: stopping: no step finished for ")


def test_steps_over_are_not_timed():
    from mpi4py import MPI

    from gpusolver.rank_watch import RankWatch

    codes = []
    watch = RankWatch(MPI.COMM_SELF, timeout=0.2, say=lambda line: None, stop=codes.append)
    watch.pulse(True)
    watch.pulse(True)  # a short interval: the next one may take 0.2 s and a bit
    watch.pulse(False)  # but the final outputs may take long
    time.sleep(0.8)
    watch.close()
    assert codes == []


def test_sigterm_has_no_watch_line(tmp_path):
    """A scheduler's SIGTERM reaches every rank: they stop at one step, as one, and no
    rank is called failed."""
    process = _start(tmp_path, TRANSPORTS["mpi-host"])
    for rank in (0, 1):
        subprocess.run(["kill", f"-{signal.SIGTERM.value}",
                        str(_rank_pid(tmp_path / "case.toml", rank))], check=True)
    err = _ended_within(process, 60)
    assert "stopping" not in err, err
    _checkpoint_is_whole(tmp_path)


def test_a_rank_that_cannot_read_its_case_stops_the_other(tmp_path):
    """Before any collective of the run: rank 1 is given a case file that is not there
    (as a node without the shared folder would see it), rank 0 a good one."""
    launcher = _forker()
    mesh = DATA / "naca0012_tri.msh"
    _plan_in_parts(tmp_path, mesh)
    (tmp_path / "case.toml").write_text(CASE.format(mesh=mesh, timeout=60,
                                                    run=TRANSPORTS["mpi-host"]))
    run = [sys.executable, "-m", "gpusolver", "run"]
    ended = subprocess.run([launcher, "-n", "1", *run, "case.toml", "--quiet", ":",
                            "-n", "1", *run, "missing.toml", "--quiet"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert ended.returncode != 0
    assert "gpusolver: error: rank 1 of 2: cannot read case file missing.toml" in ended.stderr
    assert "rank 0 of 2: stopping: rank 1 failed: cannot read case file" in ended.stderr
