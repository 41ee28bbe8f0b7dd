"""``gpusolver bench-parallel``: the fused finite-volume or DG solver on several GPUs
(mpiexec).

Every rank reads the mesh and a plan with one part per rank. The benchmark solver
(:func:`gpusolver.bench.solver.bench_solver`: second order, Roe, least squares,
Venkatakrishnan, RK4 at CFL 1 with local time steps, free stream perturbed by 5%) runs:

- ``one-gpu``: the whole mesh on rank 0's GPU (the single-mesh solver: fused kernels,
  steps recorded as CUDA graphs): one residual, one RK4 step;
- per transport and overlap: the partitioned solver, one part per GPU: one halo
  exchange alone, one residual (exchange and the part's fused residual) and one RK4
  step (four exchanges);
  ``speedup_*``: one GPU's time over this one (strong scaling); ``alone_step_ms``: the
  slowest part's step with no exchange at all, and ``efficiency`` that over the parallel
  step (the multi-GPU paper's parallel efficiency, weak scaling); ``max_rel_diff``: the
  state after ``check_steps`` steps against the one-GPU run's (largest difference over
  the largest value).

With ``--solver dg`` (:func:`run_dg_parallel_benchmark`) the flow is modal DG's
benchmark flow (:mod:`gpusolver.bench.dg`: Euler, far field on every marker, Shu's
vortex) at degree ``degree``, RK4 at one global step (CFL 0.5), fp64; the rows time the
step alone (each stage's exchange overlapped with the part's work that reads no halo
state when ``overlap on``).

``faces``: meshorder's face order inside each part (the one-GPU row: the whole mesh's
plan's).

Times are wall-clock means per step over ``repeats`` steps, every rank synchronised
(device and barrier) before and after: the time a user waits for. ``setup_s``: in the
one-GPU row, reading the whole mesh and building its topology (what every rank did before
plans held their parts); in the parallel rows, the slowest rank reading its part of the
plan file (given ``plan_path``; else taking it from the plan in memory) and setting up its
solver.
"""

from __future__ import annotations

import time

import numpy as np

from gpusolver.backends import get_backend
from gpusolver.bench.dg import farfield_everywhere, vortex_state
from gpusolver.bench.solver import bench_flow, bench_solver
from gpusolver.parallel import make_transport
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from gpusolver.solvers.fv.solver import Solver, Stepping
from meshorder.pipeline import DEFAULT_FACES
from meshorder.plan import PlanPart, read_plan_part

#: Columns of the markdown table.
COLUMNS = ("device", "mesh", "cells", "ranks", "cells_per_gpu", "halo_cells", "precision",
           "faces", "variant", "setup_s", "exchange_ms", "residual_ms", "step_ms",
           "speedup_residual", "speedup_step", "alone_step_ms", "efficiency", "max_rel_diff")

#: Steps before timing (the first ones compile kernels and record graphs).
WARMUP = 4


class Alone:
    """A transport that exchanges nothing: each rank's part computed on its own (the
    reference time of parallel efficiency)."""

    is_root = True
    #: A CUDA graph may record its (empty) exchanges, as NCCL's.
    capturable = True

    def __init__(self, n_parts: int):
        self.n_parts = n_parts

    def exchange(self, states: list, meanwhile=None) -> None:
        """Only ``meanwhile()``: the halo stays as it is."""
        if meanwhile is not None:
            meanwhile()

    def sum(self, array: np.ndarray) -> np.ndarray:
        """No other part: the array itself."""
        return array

    def gather(self, item) -> list:
        """No other process: the one ``item``."""
        return [item]


def seconds_per_call(work, repeats: int, comm, backend, warmup: int = WARMUP) -> float:
    """Wall-clock seconds per ``work()`` over ``repeats`` calls, all ranks synchronised."""
    for _ in range(warmup):
        work()
    backend.synchronize()
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        work()
    backend.synchronize()
    comm.Barrier()
    return (time.perf_counter() - start) / repeats


def run_parallel_benchmark(mesh, topology, plan, comm, *, transports: list[str],
                           overlaps: list[bool], precision: str = "fp64", repeats: int = 20,
                           check_steps: int = 10, mesh_setup_s: float | None = None,
                           plan_path: str | None = None, faces: str = DEFAULT_FACES,
                           log=print) -> list[dict]:
    """Rows of the benchmark (see the module docstring); collective over ``comm``.
    ``mesh_setup_s``: the seconds the caller took to read the mesh and build its topology;
    ``faces``: meshorder's face order inside each part."""
    from mpi4py import MPI

    backend = get_backend("cupy")
    device = backend.device_name()
    common = {"device": device, "mesh": mesh.source.split("/")[-1], "cells": mesh.n_cells,
              "precision": precision, "faces": faces}
    rows = []
    start = reference = None
    if comm.rank == 0:
        whole = bench_solver(mesh, topology, plan, "atomic", precision, "cupy")
        start = whole.conserved()
        residual_s = seconds_per_call(lambda: whole.discretisation.residual(whole.u), repeats,
                                      OneRank(), backend)
        step_s = seconds_per_call(whole.step, repeats, OneRank(), backend)
        whole.set_conserved(start)
        for _ in range(check_steps):
            whole.step()
        reference = whole.conserved().astype(np.float64)
        whole = None
        rows.append(common | {"ranks": 1, "cells_per_gpu": mesh.n_cells, "halo_cells": 0,
                              "faces": plan.parameters.get("faces"), "variant": "one-gpu",
                              "setup_s": mesh_setup_s, "residual_ms": residual_s * 1e3,
                              "step_ms": step_s * 1e3})
        log(f"one GPU: residual {residual_s * 1e3:.3f} ms, step {step_s * 1e3:.3f} ms")
    start = comm.bcast(start, root=0)
    backend.release_memory()
    parts = None
    for name in transports:
        if parts is None:
            comm.Barrier()
            start_setup = time.perf_counter()
            part = read_plan_part(plan_path, comm.rank) if plan_path else plan.part(comm.rank)
            parts = _parts(mesh, topology, part, precision, make_transport(name, comm), faces)
            setup_s = comm.allreduce(time.perf_counter() - start_setup, op=MPI.MAX)
        else:
            parts.use_transport(make_transport(name, comm))
        layout = parts.layouts[0]
        halo = comm.allreduce(len(layout.cells) - layout.n_own)
        for overlap in overlaps:
            parts.fused_steps.overlap = overlap
            parts.set_conserved(start)
            row = common | {"ranks": comm.size, "cells_per_gpu": mesh.n_cells // comm.size,
                            "halo_cells": halo, "setup_s": setup_s,
                            "variant": f"{name} overlap {'on' if overlap else 'off'}"}
            row |= _timings(parts, repeats, comm, backend)
            parts.set_conserved(start)
            for _ in range(check_steps):
                parts.step()
            state = parts.conserved().astype(np.float64)
            if comm.rank == 0:
                row["max_rel_diff"] = _max_rel_diff(state, reference)
                rows.append(row)
                _log_row(log, row)
    return _against_one_and_alone(rows, parts, start, parts.step, repeats, comm, backend)


def _against_one_and_alone(rows: list[dict], parts, start, step, repeats: int, comm,
                           backend) -> list[dict]:
    """``rows`` (on the root: the one-GPU row first) with their speed-ups over one GPU,
    and the slowest part's ``step()`` with no exchange at all (from ``start``) and the
    parallel efficiency against it."""
    from mpi4py import MPI

    parts.use_transport(lambda halos: Alone(comm.size))
    parts.set_conserved(start)
    alone = comm.allreduce(seconds_per_call(step, repeats, OneRank(), backend), op=MPI.MAX)
    one = rows[0] if comm.rank == 0 else {}
    for row in rows[1:]:
        row |= {"alone_step_ms": alone * 1e3, "efficiency": alone * 1e3 / row["step_ms"],
                "speedup_step": one["step_ms"] / row["step_ms"]}
        if "residual_ms" in row:
            row["speedup_residual"] = one["residual_ms"] / row["residual_ms"]
    return rows


def _max_rel_diff(state: np.ndarray, reference: np.ndarray) -> float:
    """The largest difference over the largest value."""
    return float(np.abs(state - reference).max() / np.abs(reference).max())


def _log_row(log, row: dict) -> None:
    log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                 for k, v in row.items()))


def run_dg_parallel_benchmark(mesh, topology, plan, comm, *, transports: list[str],
                              overlaps: list[bool], degree: int = 2, repeats: int = 20,
                              check_steps: int = 10, plan_path: str | None = None,
                              backend: str = "cupy", faces: str = DEFAULT_FACES,
                              log=print) -> list[dict]:
    """Rows of the DG benchmark on ``mesh`` (2-D; see the module docstring); collective
    over ``comm``. ``backend="numpy"`` (with ``mpi-host``) runs it on the CPU; ``faces``:
    meshorder's face order inside each part."""
    device_backend = get_backend(backend)
    xp = device_backend.xp
    device = ("CPU" if device_backend.name == "numpy" else
              xp.cuda.runtime.getDeviceProperties(xp.cuda.Device().id)["name"].decode())
    gas, boundaries = Gas(dim=2, mach=0.5), farfield_everywhere(topology)
    options = dict(degree=degree, integrator="rk4", cfl=0.5, backend=backend)
    common = {"device": device, "mesh": mesh.source.split("/")[-1], "cells": mesh.n_cells,
              "precision": "fp64", "faces": faces}
    rows, start, dt, reference = [], None, None, None
    if comm.rank == 0:
        whole = DGSolver(mesh, gas, boundaries, plan=plan, **options)
        whole.u = device_backend.asarray(whole.discretisation.project(vortex_state(gas)))
        start, dt = whole.conserved(), whole.time_step()
        step_s = seconds_per_call(lambda: whole.step(dt), repeats, OneRank(), device_backend)
        whole.set_conserved(start)
        for _ in range(check_steps):
            whole.step(dt)
        reference = whole.conserved()
        rows.append(common | {"ranks": 1, "cells_per_gpu": mesh.n_cells, "halo_cells": 0,
                              "faces": plan.parameters.get("faces"),
                              "variant": f"dg p{degree}, one-gpu", "step_ms": step_s * 1e3})
        _log_row(log, rows[-1])
        whole = None
    start, dt = comm.bcast((start, dt), root=0)
    part = read_plan_part(plan_path, comm.rank) if plan_path else plan.part(comm.rank)
    parts = DGSolver([part], gas, boundaries, transport=make_transport(transports[0], comm),
                          faces=faces, **options)
    halo = comm.allreduce(parts.layouts[0].geometry.n_elements - parts.layouts[0].n_own)
    for name in transports:
        if name != transports[0]:
            parts.use_transport(make_transport(name, comm))
        for overlap in overlaps:
            parts.overlap = overlap
            parts.set_conserved(start)
            step_s = seconds_per_call(lambda: parts.step(dt), repeats, comm, device_backend)
            parts.set_conserved(start)
            for _ in range(check_steps):
                parts.step(dt)
            state = parts.conserved()
            if comm.rank == 0:
                rows.append(common | {
                    "ranks": comm.size, "cells_per_gpu": mesh.n_cells // comm.size,
                    "halo_cells": halo, "step_ms": step_s * 1e3,
                    "variant": f"dg p{degree}, {name} overlap {'on' if overlap else 'off'}",
                    "max_rel_diff": _max_rel_diff(state, reference)})
                _log_row(log, rows[-1])
    return _against_one_and_alone(rows, parts, start, lambda: parts.step(dt), repeats, comm,
                                  device_backend)


def _parts(mesh, topology, part: PlanPart, precision: str, transport,
           faces: str) -> Solver:
    """The benchmark solver (:func:`bench_flow`) on this rank's ``part``."""
    gas, boundaries, scheme = bench_flow(mesh, topology)
    return Solver([part], gas, boundaries, scheme=scheme, stepping=Stepping("rk4", 1.0),
                  backend="cupy", precision=precision, transport=transport, faces=faces)


def _timings(parts: Solver, repeats: int, comm, backend) -> dict:
    """One exchange alone, one residual (exchange and the local part's fused residual)
    and one step."""
    d = parts.discretisations[0]
    exchange_s = seconds_per_call(lambda: parts.transport.exchange(parts.states), repeats,
                                  comm, backend)

    def residual():
        parts.transport.exchange(parts.states)
        d.fused.residual(parts.states[0])

    residual_s = seconds_per_call(residual, repeats, comm, backend)
    step_s = seconds_per_call(parts.step, repeats, comm, backend)
    return {"exchange_ms": exchange_s * 1e3, "residual_ms": residual_s * 1e3,
            "step_ms": step_s * 1e3}


class OneRank:
    """A communicator of one rank (its barrier does nothing): one rank timed alone."""

    def Barrier(self) -> None:  # mpi4py's spelling
        """Nothing to wait for."""
