"""Modal DG on several GPUs (issue 16): one RK4 step of the parts, the halo exchange
overlapped with the interior or not, against the whole mesh on one GPU.

Run under MPI, one rank per GPU::

    mpiexec -n 2 python scripts/dg_two_gpus.py --cells 700 --degree 2 --json dg2.json

The mesh is the unit square cut into ``2 cells^2`` triangles (far field all round), Euler
at Mach 0.5 from Shu's isentropic vortex (:func:`gpusolver.bench.dg.vortex_state`), RK4
at one global step (CFL 0.5), fp64. Rows, as ``gpusolver bench-parallel``'s: wall-clock
seconds per step over ``--repeats`` steps, ranks synchronised before and after;
``alone_step_ms``: the slowest part's step with no exchange at all, and ``efficiency``
that over the parallel step; ``max_rel_diff``: the state after ``--check-steps`` steps
against the one-GPU run's. ``--backend numpy --transport mpi-host`` runs it on the CPU.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from gpusolver.backends import get_backend
from gpusolver.bench.dg import vortex_state
from gpusolver.bench.parallel import Alone, OneRank, seconds_per_call
from gpusolver.parallel import make_transport, mpi_world, use_local_gpu
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.partitioned import PartitionedDG
from gpusolver.solvers.dg.solver import DGSolver
from meshorder import Topology
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import grid_mesh

BOUNDARIES = {name: "farfield" for name in ("left", "right", "bottom", "top")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=700, help="cells along each side")
    parser.add_argument("--degree", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--check-steps", type=int, default=5)
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--transport", default="nccl", help="nccl or mpi-host")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    comm = mpi_world()
    from mpi4py import MPI

    if args.backend == "cupy":
        use_local_gpu(comm)
    backend = get_backend(args.backend)
    mesh = grid_mesh(args.cells, args.cells, "triangle")
    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(partitions=comm.size), topology=topology)
    gas = Gas(dim=2, mach=0.5)
    options = dict(degree=args.degree, integrator="rk4", cfl=0.5, backend=args.backend)
    common = {"mesh": f"square {args.cells}x{args.cells}x2", "elements": mesh.n_cells,
              "degree": args.degree}
    rows, start, dt, reference = [], None, None, None
    if comm.rank == 0:
        whole = DGSolver(mesh, gas, BOUNDARIES, plan=plan, topology=topology, **options)
        whole.u = backend.asarray(whole.project(vortex_state(gas)))
        start, dt = whole.conserved(), whole.time_step()
        step_s = seconds_per_call(lambda: whole.step(dt), args.repeats, OneRank(), backend)
        whole.set_conserved(start)
        for _ in range(args.check_steps):
            whole.step(dt)
        reference = whole.conserved()
        rows.append(common | {"ranks": 1, "variant": "one GPU", "step_ms": step_s * 1e3})
        del whole
    start, dt = comm.bcast((start, dt), root=0)
    parts = PartitionedDG([plan.part(comm.rank)], gas, BOUNDARIES,
                          transport=make_transport(args.transport, comm), **options)
    own = parts.layouts[0].n_own
    for overlap in (True, False):
        parts.overlap = overlap
        parts.set_conserved(start)
        step_s = seconds_per_call(lambda: parts.step(dt), args.repeats, comm, backend)
        parts.set_conserved(start)
        for _ in range(args.check_steps):
            parts.step(dt)
        state = parts.conserved()
        if comm.rank == 0:
            rows.append(common | {
                "ranks": comm.size, "own_elements": own,
                "variant": f"{args.transport}, overlap {'on' if overlap else 'off'}",
                "step_ms": step_s * 1e3,
                "max_rel_diff": float(np.abs(state - reference).max() / np.abs(reference).max())})
    network = parts.transport
    parts.transport = Alone(comm.size)
    parts.set_conserved(start)
    alone_s = comm.allreduce(seconds_per_call(lambda: parts.step(dt), args.repeats, OneRank(),
                                              backend), op=MPI.MAX)
    parts.transport = network
    if comm.rank == 0:
        for row in rows[1:]:
            row |= {"alone_step_ms": alone_s * 1e3, "efficiency": alone_s * 1e3 / row["step_ms"],
                    "speedup": rows[0]["step_ms"] / row["step_ms"]}
        for row in rows:
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in row.items()), flush=True)
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
