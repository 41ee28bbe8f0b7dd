"""``meshorder compare IN``: every ordering's metrics and compute time in one table."""

from __future__ import annotations

import argparse
import time

from tqdm import tqdm

from ..faceorder import FACE_ORDERS
from ..orderings import ORDERINGS
from ..pipeline import PlanOptions, make_plan
from ..report import check_result_paths, table, write_results
from ..topology import Topology
from .common import add_mesh_argument, load_mesh

COLUMNS = ("bandwidth", "profile", "mean_span", "sectors_per_warp_fp32",
           "sectors_per_warp_fp64", "colours", "forward_levels")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("compare", help="compare every ordering on one mesh",
                       description="Run each cell ordering (faces greedy, with colouring and "
                                   "hyperplanes) and tabulate metrics and compute time.")
    add_mesh_argument(p)
    p.add_argument("--orderings", type=ordering_list, default=list(ORDERINGS), metavar="A,B",
                   help=f"orderings to run (default all: {', '.join(ORDERINGS)})")
    p.add_argument("--faces", choices=sorted(FACE_ORDERS), default="greedy",
                   help="face order put on every cell order")
    p.add_argument("--json", metavar="FILE", default=None, help="also write the rows as JSON")
    p.set_defaults(run=run)


def ordering_list(text: str) -> list[str]:
    """Parse ``a,b,c`` into ordering names, rejecting unknown ones (argparse exits 2)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ORDERINGS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown ordering(s) {', '.join(unknown) or text!r}; "
                                         f"choose from {', '.join(ORDERINGS)}")
    return names


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder compare``."""
    check_result_paths(args.json)
    names = args.orderings
    mesh = load_mesh(args)
    topology = Topology(mesh)
    rows = []
    for name in tqdm(names, desc="orderings", delay=1.0, leave=False):
        start = time.perf_counter()
        plan = make_plan(mesh, PlanOptions(cells=name, faces=args.faces, colour=True,
                                           hyperplanes=True), topology=topology)
        elapsed = time.perf_counter() - start
        order_time = plan.metrics["timings"][f"cells:{name}"]
        rows.append({"mesh": mesh.source, "cells": mesh.n_cells, "ordering": name,
                     "order_s": order_time, "plan_s": elapsed,
                     **{k: plan.metrics[k] for k in COLUMNS}})
    print(f"{mesh.source}: {mesh.n_cells} cells, {topology.n_faces} faces, faces {args.faces} "
          "on every cell order (native included, unlike `reorder`'s file-order column)")
    headers = ["ordering", "order_s", "plan_s", *COLUMNS]
    text = table(headers, [[r[h] for h in headers] for r in rows])
    print(text)
    write_results(rows, text, args.json, None)
    return 0
