"""``meshorder plot IN PLAN -o fig.png``: adjacency before and after, bandwidth profile."""

from __future__ import annotations

import argparse

from ..plan import Plan
from ..plot import plot_plan
from ..topology import Topology
from .common import add_mesh_argument, load_mesh


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("plot", help="plot adjacency matrices and bandwidth profile",
                       description="Draw the cell adjacency (correlation) matrix in native and "
                                   "plan order, the bandwidth profile, and colour/level "
                                   "histograms when the plan has them.")
    add_mesh_argument(p)
    p.add_argument("plan", help="plan file (.npz) made for this mesh")
    p.add_argument("-o", "--output", required=True, help="image file to write (.png, .pdf, .svg)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder plot``."""
    plan = Plan.load(args.plan)
    mesh = load_mesh(args)
    plan.check_mesh(mesh.digest(), args.mesh)
    plot_plan(Topology(mesh), plan, args.output)
    print(f"wrote {args.output}")
    return 0
