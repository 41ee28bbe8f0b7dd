"""Face-flux kernel timings under every cell ordering: the memory-layout benchmark.

For one mesh: every meshorder ordering and the peers' orderings become plans
(greedy faces); the Rusanov face-flux kernel (5 variables, atomics) runs in
fp32 and fp64 on each; times are CUDA-event medians. Achieved bandwidth uses
the minimum-bytes model (:meth:`FaceLayout.minimum_bytes`) and is divided by
the device-to-device copy bandwidth measured in the same run.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.bench.reference import GAMMA, random_state, rusanov_residual
from gpusolver.layout.faces import FaceLayout
from gpusolver.layout.geometry import build_geometry
from gpusolver.solvers.fv import face_kernels as kernels
from meshorder import Mesh, MeshWarning, Topology
from meshorder.orderings import ORDERINGS, OrderingInput
from meshorder.peers import PEERS
from meshorder.pipeline import PlanOptions, make_plan, run_ordering


def time_kernel(launch, repeats: int) -> float:
    """Median seconds of ``launch()`` over ``repeats`` runs after two warm-ups (CUDA events)."""
    return get_backend("cupy").median_seconds(launch, repeats)


def cell_orders(mesh: Mesh, topology: Topology, names: list[str], log=print) -> dict[str, tuple]:
    """Each named ordering (registry or peer): its cell order and CPU seconds."""
    data = OrderingInput(topology.cell_graph, mesh.centroids(), topology.boundary_cells())
    orders = {}
    for name in names:
        start = time.perf_counter()
        if name in PEERS:
            order = PEERS[name](mesh, topology)
        else:
            order = run_ordering(name, data, PlanOptions(cells=name))
        orders[name] = (order, time.perf_counter() - start)
        log(f"order {name}: {orders[name][1]:.1f} s")
    return orders


def device_and_topology(mesh: Mesh, log=print) -> tuple[str, float, Topology]:
    """Device name, its copy bandwidth (GB/s, measured now) and the mesh's topology."""
    backend = get_backend("cupy")
    device, copy_gbs = backend.device_name(), backend.copy_bandwidth()
    log(f"{device}: copy bandwidth {copy_gbs:.0f} GB/s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        topology = Topology(mesh)
    return device, copy_gbs, topology


def run_benchmark(mesh: Mesh, *, orderings: list[str], precisions: list[str],
                  repeats: int = 20, check: bool = True, log=print) -> list[dict]:
    """Rows (one per ordering x precision) of the face-flux benchmark on ``mesh``."""
    cupy = get_backend("cupy").xp
    device, copy_gbs, topology = device_and_topology(mesh, log)
    start = time.perf_counter()
    topology.cell_graph  # noqa: B018  (build it now, so the ordering times exclude it)
    log(f"topology: {time.perf_counter() - start:.1f} s")
    orders = cell_orders(mesh, topology, orderings, log)
    rng = np.random.default_rng(0)
    state64 = random_state(mesh.n_cells, rng)
    rows = []
    for name, (order, order_s) in orders.items():
        plan = make_plan(mesh, PlanOptions(cells=name), topology=topology, cell_order=order)
        geometry = build_geometry(mesh, plan)
        for precision in precisions:
            dtype = PRECISIONS[precision]
            faces = FaceLayout.from_geometry(geometry, dtype)
            state = cupy.asarray(state64.astype(dtype))
            residual = cupy.zeros_like(state)
            args = [cupy.asarray(a) for a in (faces.left, faces.right, faces.normal,
                                              faces.area)]

            def launch(state=state, residual=residual, args=args):
                kernels.face_flux(state, residual, *args, GAMMA)

            seconds = time_kernel(launch, repeats)
            error = None
            if check and name == next(iter(orders)):  # once per precision: NumPy is slow
                residual.fill(0)
                launch()
                reference = rusanov_residual(state64, faces)
                error = float(np.abs(cupy.asnumpy(residual) - reference).max()
                              / np.abs(reference).max())
            gbs = faces.minimum_bytes(mesh.n_cells) / seconds / 1e9
            rows.append({
                "device": device, "mesh": mesh.source.split("/")[-1], "cells": mesh.n_cells,
                "faces": faces.n_faces, "ordering": name,
                "source": "peer" if name in PEERS else "meshorder", "strategy": "atomic",
                "precision": precision, "time_ms": seconds * 1e3, "gb_s": gbs,
                "copy_gb_s": copy_gbs, "ratio_to_copy": gbs / copy_gbs,
                "sectors_per_warp": plan.metrics[f"sectors_per_warp_{precision}"],
                "order_cpu_s": order_s, "max_rel_error": error,
            })
            log(f"{name:13s} {precision} {seconds * 1e3:8.3f} ms {gbs:7.0f} GB/s "
                f"({gbs / copy_gbs:.2f} of copy) err {error}")
            del state, residual, args
    for row in rows:
        base = {r["ordering"]: r["time_ms"] for r in rows if r["precision"] == row["precision"]}
        row["speedup_vs_native"] = base.get("native", np.nan) / row["time_ms"]
        row["speedup_vs_random"] = base.get("random", np.nan) / row["time_ms"]
    return rows


def valid_orderings() -> list[str]:
    """Every ordering a benchmark can time: meshorder's and the peers'."""
    return [*ORDERINGS, *PEERS]


def default_orderings() -> list[str]:
    """Every meshorder ordering and every peer except networkx (too slow for large meshes)."""
    return [*ORDERINGS, *(p for p in PEERS if p != "networkx-rcm")]
