"""DG on the parts of a partitioned plan gives the one-part answer: in one process
(loopback), on the GPU, and under ``mpiexec -n 2 gpusolver run``."""

from __future__ import annotations

import numpy as np
import pytest

from gpusolver.backends.host import compiler
from gpusolver.errors import ConfigError
from gpusolver.parallel import Loopback
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from meshorder import Topology, read_mesh
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import grid_mesh

from .dg_cases import diverge_from_one_bad_element
from .fv_cases import AIRFOIL, DATA
from .test_fv_partitioned import (
    _mpiexec,
    _plan_in_parts,
    _skip_nccl_on_one_gpu,
    check_recorded_steps_go_before_their_transport,
    every_part,
)

CYLINDER = {"cylinder": "no-slip-adiabatic", "farfield": "farfield"}


def _pair(mesh, boundaries, gas, n_parts, seed, backend="numpy", **options):
    """The whole-mesh solver and the parts' solver from one perturbed state."""
    print(f"seed {seed}")
    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(partitions=n_parts), topology=topology)
    whole = DGSolver(mesh, gas, boundaries, plan=plan, **options)
    parts = DGSolver(every_part(plan), gas, boundaries, backend=backend, **options)
    u = whole.conserved()
    u *= 1.0 + 0.01 * np.random.default_rng(seed).uniform(-1, 1, u.shape)
    whole.set_conserved(u)
    parts.set_conserved(u)
    return whole, parts


def _assert_same_steps(whole, parts, steps: int, rtol: float = 1e-12) -> None:
    for _ in range(steps):
        norms = [whole.step(), parts.step()]
        np.testing.assert_allclose(norms[1], norms[0], rtol=rtol)
    np.testing.assert_allclose(parts.conserved(), whole.conserved(), rtol=rtol, atol=1e-14)
    forces = [s.wall_forces()["total"].force for s in (whole, parts)]
    np.testing.assert_allclose(forces[1], forces[0], rtol=10 * rtol, atol=1e-15)
    assert parts.time == pytest.approx(whole.time, rel=1e-14)


@pytest.mark.parametrize("n_parts, shock_capturing", [(2, False), (3, True), (4, False)])
def test_dg_parts_give_the_one_part_answer_on_an_airfoil(n_parts, shock_capturing):
    """Euler, p = 2, global steps (their minimum over all parts), the modal filter on."""
    whole, parts = _pair(read_mesh(DATA / "naca0012_tri.msh"), AIRFOIL,
                         Gas(dim=2, mach=0.6, aoa_deg=2.0), n_parts,
                         seed=int(np.random.default_rng().integers(2**31)), degree=2,
                         cfl=0.3, shock_capturing=shock_capturing)
    assert parts.n_parts == n_parts
    _assert_same_steps(whole, parts, 3)
    np.testing.assert_allclose(parts.primitive(), whole.primitive(), rtol=1e-12, atol=1e-15)


def test_dg_parts_of_a_curved_navier_stokes_mesh_give_the_one_part_answer():
    """BR2 liftings read the face neighbours' traces; the parts' meshes keep the walls'
    mid-edge nodes, so their elements are curved as in the whole mesh."""
    whole, parts = _pair(read_mesh(DATA / "cylinder_order2.msh"), CYLINDER,
                         Gas(dim=2, mach=0.2, reynolds=20.0), 3,
                         seed=int(np.random.default_rng().integers(2**31)), degree=2,
                         cfl=0.5, local_time_step=True)
    _assert_same_steps(whole, parts, 3)


class _PoisonedLoopback(Loopback):
    """Loopback that sets every halo to NaN before the work meant to read none of it."""

    def exchange(self, states: list, meanwhile=None) -> None:
        for p, halo in self.halos.items():
            for positions in halo.receive.values():
                states[p][..., positions] = np.nan
        super().exchange(states, meanwhile)


@pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("equations", ["euler", "navier-stokes"])
def test_dg_kernels_on_parts_read_no_halo_before_it_is_in(equations):
    """The GPU's DG kernels (compiled for the CPU), each part's right-hand side in two
    pieces, every halo NaN during the first: the one-part answer. In Navier-Stokes the
    own elements next to the halo wait for it (their liftings read it)."""
    seed = int(np.random.default_rng().integers(2**31))
    if equations == "euler":
        whole, parts = _pair(read_mesh(DATA / "naca0012_tri.msh"), AIRFOIL,
                             Gas(dim=2, mach=0.6, aoa_deg=2.0), 3, seed=seed, degree=2,
                             cfl=0.3)
    else:
        whole, parts = _pair(read_mesh(DATA / "cylinder_order2.msh"), CYLINDER,
                             Gas(dim=2, mach=0.2, reynolds=20.0), 3, seed=seed, degree=2,
                             cfl=0.5, local_time_step=True)
    parts.fuse()
    parts.transport = _PoisonedLoopback(parts.halos)
    _assert_same_steps(whole, parts, 3)


@pytest.mark.parametrize("kernels", [
    "arrays", pytest.param("host", marks=pytest.mark.skipif(compiler() is None,
                                                             reason="no C++ compiler"))])
def test_dg_parts_name_an_element_near_one_gone_bad(kernels):
    """An element's state set to NaN spreads to its neighbours within a step's four
    stages (at a step fixed before); the step fails naming one of them, in the file's
    numbering."""
    mesh = read_mesh(DATA / "naca0012_tri.msh")
    plan = make_plan(mesh, PlanOptions(partitions=3), topology=Topology(mesh))
    parts = DGSolver(every_part(plan), Gas(dim=2, mach=0.6), AIRFOIL, degree=1, cfl=0.3)
    if kernels == "host":
        parts.fuse()
    diverge_from_one_bad_element(parts, mesh, 1234, "iteration 1: the mean state of element")


@pytest.mark.parametrize("faces, fewer_than, more_than", [("greedy", 40, 10),
                                                           ("strided", 1, 0)])
def test_a_dg_parts_face_order_decides_how_often_a_warp_adds_into_one_element_twice(
        faces, fewer_than, more_than):
    """The parts' meshes number their elements in plan order, so each face's first
    element is its lower one: greedy faces add into the same elements about 20 times per
    warp (measured), strided ones under once."""
    from meshorder.metrics import repeated_adds_per_warp

    mesh = grid_mesh(60, 60, "triangle")
    plan = make_plan(mesh, PlanOptions(partitions=2), topology=Topology(mesh))
    parts = DGSolver(every_part(plan), Gas(dim=2, mach=0.5),
                          dict.fromkeys(("left", "right", "bottom", "top"), "farfield"),
                          faces=faces)
    for solver in parts.discretisations:
        lay = solver.layout
        faces = np.column_stack([lay.left, lay.right])[:lay.n_interior]
        assert more_than <= repeated_adds_per_warp(faces) < fewer_than


def test_the_high_order_view_of_the_parts_is_the_whole_meshs():
    whole, parts = _pair(read_mesh(DATA / "cylinder_order2.msh"), CYLINDER,
                         Gas(dim=2, mach=0.2, reynolds=20.0), 2, seed=3, degree=1)
    (points, blocks, w), (p_points, p_blocks, p_w) = whole.high_order_view(), \
        parts.high_order_view()

    def rows(xy, states):  # sub-cell corners with their states (elements repeat corners)
        table = np.column_stack([xy, states.T]).round(12)
        return table[np.lexsort(table.T[::-1])]

    assert sum(len(c) for _, c in p_blocks) == sum(len(c) for _, c in blocks)
    np.testing.assert_allclose(rows(p_points, p_w), rows(points, w), rtol=1e-12, atol=1e-14)


def test_dg_parts_refuse_periodic_boundaries():
    mesh = grid_mesh(6, 4, "quad")
    plan = make_plan(mesh, PlanOptions(partitions=2))
    boundaries = {"left": {"type": "periodic", "partner": "right"},
                  "right": {"type": "periodic", "partner": "left"},
                  "bottom": "slip-wall", "top": "slip-wall"}
    with pytest.raises(ConfigError, match="periodic boundaries are not supported across parts"):
        DGSolver(every_part(plan), Gas(dim=2, mach=0.3), boundaries)


def test_dg_parts_refuse_boundaries_that_do_not_name_every_marker():
    plan = make_plan(grid_mesh(6, 4, "quad"), PlanOptions(partitions=2))
    with pytest.raises(ConfigError, match="no condition for marker"):
        DGSolver(every_part(plan), Gas(dim=2, mach=0.3),
                      {"left": "farfield", "right": "farfield", "bottom": "slip-wall"})


@pytest.mark.gpu
def test_dg_parts_on_the_gpu_give_the_numpy_one_part_answer():
    """Each part's right-hand side in the DG kernels, the halo exchanged on the device."""
    whole, parts = _pair(read_mesh(DATA / "cylinder_order2.msh"), CYLINDER,
                         Gas(dim=2, mach=0.2, reynolds=20.0), 3,
                         seed=int(np.random.default_rng().integers(2**31)), backend="cupy",
                         degree=2, cfl=0.5, local_time_step=True)
    _assert_same_steps(whole, parts, 3)


CASE = """
[solver]
method = "dg"

[mesh]
file = "{mesh}"
plan = "plan.npz"

[physics]
equations = "navier-stokes"
mach = 0.2
reynolds = 20.0

[boundaries]
cylinder = "no-slip-adiabatic"
farfield = "farfield"

[scheme]
flux = "llf"
degree = 1

[run]
{run}
time_integrator = "rk4"
cfl = 0.5
local_time_step = true
iterations = {iterations}
{restart}

[output]
directory = "{out}"
history_every = 2
"""


def _dg_run(tmp_path, name: str, ranks: int, iterations: int, restart: str = "",
            run: str = 'backend = "numpy"'):
    import subprocess
    import sys

    case = tmp_path / f"{name}.toml"
    case.write_text(CASE.format(mesh=DATA / "cylinder_order2.msh", iterations=iterations,
                                restart=restart, out=name, run=run))
    command = [sys.executable, "-m", "gpusolver", "run", str(case), "--quiet"]
    if ranks > 1:
        command = [_mpiexec(), "-n", str(ranks), *command]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout, np.loadtxt(tmp_path / name / "history.csv", delimiter=",",
                                        skiprows=1, ndmin=2)


def test_dg_run_on_two_ranks_equals_one_rank_and_restarts_on_one(tmp_path):
    """``mpiexec -n 2 gpusolver run`` of a DG case (NumPy, ``mpi-host``) on the shipped
    curved cylinder mesh: the one-rank history, forces, Cp and state, and a restart of
    its checkpoint on one rank continues it."""
    import meshio

    _mpiexec()
    _plan_in_parts(tmp_path, DATA / "cylinder_order2.msh")
    _, one = _dg_run(tmp_path, "one", 1, 6)
    printed, two = _dg_run(tmp_path, "two", 2, 4)
    assert printed.splitlines()[0] == "2 ranks"
    restart = f'restart = "{tmp_path / "two" / "checkpoint.npz"}"'
    _, rest = _dg_run(tmp_path, "rest", 1, 2, restart)
    both = np.concatenate([two, rest])  # columns: iteration, time, wall_s, residuals..., cl, cd
    np.testing.assert_array_equal(both[:, 0], one[:, 0])
    # 9 digits in the file; the symmetric cylinder's lift is rounding (1e-12 of its drag)
    np.testing.assert_allclose(both[:, 3:], one[:, 3:], rtol=2e-8, atol=1e-12)
    states = [np.load(tmp_path / name / "checkpoint.npz")["conserved"] for name in ("one", "rest")]
    np.testing.assert_allclose(states[1], states[0], rtol=1e-12, atol=1e-14)
    for name in ("forces.csv", "cp_cylinder.csv"):
        tables = [np.loadtxt(tmp_path / run / name, delimiter=",", skiprows=1,
                             usecols=range(1, 4) if name == "forces.csv" else None)
                  for run in ("one", "rest")]
        np.testing.assert_allclose(tables[1], tables[0], rtol=1e-8, atol=1e-12)
    views = [meshio.read(tmp_path / run / "solution_high_order.vtu") for run in ("one", "two")]
    assert sum(len(b.data) for b in views[1].cells) == sum(len(b.data) for b in views[0].cells)
    assert (tmp_path / "two" / "solution.pvtu").exists()


@pytest.mark.gpu
@pytest.mark.parametrize("transport", ["mpi-host", "nccl"])
def test_dg_run_on_two_gpus_equals_one_gpu(tmp_path, transport):
    """Two ranks, one GPU each (nccl needs two), against one rank on one GPU."""
    _skip_nccl_on_one_gpu(transport)
    _plan_in_parts(tmp_path, DATA / "cylinder_order2.msh")
    run = f'backend = "cupy"\ntransport = "{transport}"'
    _, one = _dg_run(tmp_path, "one", 1, 20, run=run)
    printed, two = _dg_run(tmp_path, "two", 2, 20, run=run)
    assert printed.splitlines()[0] == "2 ranks"
    np.testing.assert_allclose(two[:, 3:], one[:, 3:], rtol=2e-8, atol=1e-12)
    states = [np.load(tmp_path / name / "checkpoint.npz")["conserved"] for name in ("one", "two")]
    np.testing.assert_allclose(states[1], states[0], rtol=1e-12, atol=1e-14)


BENCH = """
import json, sys
from gpusolver.bench.parallel import run_dg_parallel_benchmark
from gpusolver.parallel import mpi_world
from meshorder import Topology, read_mesh
from meshorder.pipeline import PlanOptions, make_plan

comm = mpi_world()
mesh = read_mesh(sys.argv[1])
topology = Topology(mesh)
plan = make_plan(mesh, PlanOptions(partitions=comm.size), topology=topology)
rows = run_dg_parallel_benchmark(mesh, topology, plan, comm, transports=["mpi-host"],
                                 overlaps=[True, False], degree=1, repeats=2, check_steps=2,
                                 backend="numpy", log=lambda line: None)
if comm.rank == 0:
    print(json.dumps(rows))
"""


def test_the_dg_parallel_benchmark_on_two_cpu_ranks(tmp_path):
    """``bench-parallel --solver dg``'s flow, on the CPU: one rank's whole mesh, then the
    two parts (the same state after 2 steps), their speed-up and efficiency."""
    import json
    import subprocess
    import sys

    script = tmp_path / "bench.py"
    script.write_text(BENCH)
    completed = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(script),
                                str(DATA / "naca0012_tri.msh")],
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    rows = json.loads(completed.stdout.strip().splitlines()[-1])
    assert [row["variant"] for row in rows] == [
        "dg p1, one-gpu", "dg p1, mpi-host overlap on", "dg p1, mpi-host overlap off"]
    assert {row["cells"] for row in rows} == {7960} and rows[1]["halo_cells"] > 0
    for row in rows[1:]:
        assert row["max_rel_diff"] < 1e-12
        assert row["efficiency"] == pytest.approx(row["alone_step_ms"] / row["step_ms"])
        assert row["speedup_step"] == pytest.approx(rows[0]["step_ms"] / row["step_ms"])


def test_the_dg_parallel_benchmark_refuses_a_3d_mesh_before_looking_for_gpus():
    """Under ``mpiexec -n 2``, ``bench-parallel --solver dg`` on a 3-D mesh: a one-line
    usage error naming the file (exit 2), before it asks for GPUs this machine lacks."""
    import subprocess
    import sys

    completed = subprocess.run([_mpiexec(), "-n", "2", sys.executable, "-m", "gpusolver",
                                "bench-parallel", "--solver", "dg", "--mesh",
                                str(DATA / "box.msh")],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert f"{DATA / 'box.msh'}: --solver dg needs a 2-D mesh" in completed.stderr
    assert "Traceback" not in completed.stderr


@pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
def test_dg_parts_free_their_recorded_steps_before_their_transport():
    """As the FV parts': a new transport reaches the steps in the kernels, whose recorded
    steps go first (a NCCL communicator outlives every graph that recorded it)."""
    plan = make_plan(grid_mesh(12, 12, "triangle"), PlanOptions(partitions=2))
    parts = DGSolver(every_part(plan), Gas(dim=2, mach=0.5),
                          dict.fromkeys(("left", "right", "bottom", "top"), "farfield"))
    parts.fuse()
    check_recorded_steps_go_before_their_transport(parts)
