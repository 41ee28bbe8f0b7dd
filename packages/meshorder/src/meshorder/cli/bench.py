"""``meshorder bench MESH...``: every ordering, ours and the peers', on each mesh.

For each mesh and ordering: the time and peak traced memory of computing the
cell order, and the plan metrics with greedy faces, colouring and hyperplanes.
Writes JSON and a markdown table.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc
import warnings
from pathlib import Path

from tqdm import tqdm

from ..errors import MeshWarning
from ..io import read_mesh
from ..options import non_negative_int
from ..orderings import ORDERINGS, OrderingInput
from ..peers import PEERS
from ..pipeline import PlanOptions, make_plan, run_ordering
from ..report import check_result_paths, table, write_results
from ..topology import Topology

METRICS = ("bandwidth", "profile", "mean_span", "max_span", "sectors_per_warp_fp32",
           "sectors_per_warp_fp64", "colours", "forward_levels")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("bench", help="benchmark every ordering (ours and peers) on meshes",
                       description=__doc__.splitlines()[0])
    p.add_argument("meshes", nargs="+", help="mesh files")
    p.add_argument("--json", metavar="FILE", default=None, help="write the rows as JSON")
    p.add_argument("--markdown", metavar="FILE", default=None, help="write markdown tables")
    p.add_argument("--networkx-max-cells", type=non_negative_int, default=150_000,
                   help="skip networkx above this many cells (it is pure Python)")
    p.set_defaults(run=run)


def order_with_cost(compute) -> tuple[object, float, float]:
    """Run ``compute()``; return its result, seconds, and peak traced MiB."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = compute()
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    return result, seconds, peak


def _options(cells: str) -> PlanOptions:
    """The plan options of a row: colours and hyperplanes, whose levels it reports."""
    return PlanOptions(cells=cells, colour=True, hyperplanes=True)


def bench_mesh(path: str, networkx_max_cells: int) -> list[dict]:
    """Rows of one mesh: one per ordering."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        mesh = read_mesh(path)
    topology = Topology(mesh)
    data = OrderingInput(topology.cell_graph, mesh.centroids(), topology.boundary_cells())
    candidates = {name: (lambda n=name: run_ordering(n, data, _options(n)))
                  for name in ORDERINGS}
    for name, peer in PEERS.items():
        if name == "networkx-rcm" and mesh.n_cells > networkx_max_cells:
            continue
        candidates[name] = lambda p=peer: p(mesh, topology)
    rows = []
    for name, compute in tqdm(candidates.items(), desc=Path(path).name, leave=False, delay=1.0):
        order, seconds, peak = order_with_cost(compute)
        plan = make_plan(mesh, _options(name), topology=topology, cell_order=order)
        rows.append({"mesh": Path(path).name, "cells": mesh.n_cells, "ordering": name,
                     "source": "peer" if name in PEERS else "meshorder",
                     "order_s": round(seconds, 4), "peak_mib": round(peak, 1),
                     **{k: plan.metrics[k] for k in METRICS}})
    return rows


def markdown(rows: list[dict]) -> str:
    """One table per mesh."""
    out = [f"Machine: {platform.machine()}, Python {platform.python_version()}. "
           "`order_s`/`peak_mib`: time and peak traced (Python/NumPy) memory of computing the "
           "cell order; gmsh's C++ memory is not traced. Faces greedy.\n"]
    headers = ["ordering", "source", "order_s", "peak_mib", *METRICS]
    for mesh in dict.fromkeys(r["mesh"] for r in rows):
        mine = [r for r in rows if r["mesh"] == mesh]
        out.append(f"### {mesh}: {mine[0]['cells']} cells\n")
        out.append(table(headers, [[r[h] for h in headers] for r in mine]) + "\n")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder bench``."""
    check_result_paths(args.json, args.markdown)
    rows = []
    for path in args.meshes:
        rows += bench_mesh(path, args.networkx_max_cells)
    text = markdown(rows)
    print(text)
    write_results(rows, text, args.json, args.markdown)
    return 0
