"""``meshorder plot IN PLAN -o fig.png``: adjacency before and after, bandwidth profile."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..atomic import check_writable
from ..errors import UsageError
from ..plan import Plan
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


def _check_image_format(path: str) -> None:
    """Fail before any work unless matplotlib can write an image with this extension."""
    from matplotlib.figure import Figure

    supported = Figure().canvas.get_supported_filetypes()
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in supported:
        found = f"extension {suffix!r}" if suffix else "no extension"
        raise UsageError(f"-o {path}: {found}; expected one of "
                         f"{', '.join('.' + s for s in sorted(supported))}")


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder plot``."""
    from ..plot import plot_plan  # here: matplotlib takes 0.8 s to import, every command

    _check_image_format(args.output)
    check_writable(args.output)
    plan = Plan.load(args.plan)
    mesh = load_mesh(args)
    plan.check_mesh(mesh.digest(), args.mesh)
    plot_plan(Topology(mesh), plan, args.output)
    print(f"wrote {args.output}")
    return 0
