"""``meshorder generate NAME OUT --cells N``: the reference geometries, meshed by gmsh."""

from __future__ import annotations

import argparse

from ..generate import GEOMETRIES, generate
from ..io import read_mesh
from ..progress import activity


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("generate", help="mesh a reference geometry at a chosen size",
                       description="Mesh one of the reference papers' geometries with gmsh "
                                   "(named markers, gmsh 4.1 binary .msh).")
    p.add_argument("geometry", choices=sorted(GEOMETRIES))
    p.add_argument("out", help="output .msh file")
    p.add_argument("--cells", type=int, required=True, help="target number of cells (about)")
    p.add_argument("--kind", choices=["quad", "tri"], default=None,
                   help="couette only: quads or triangles")
    p.add_argument("--threads", type=int, default=None,
                   help="3D only: gmsh threads (parallel meshing numbers cells in thread order)")
    p.add_argument("--prism-layers", type=non_negative_int, default=None,
                   help="wing only: prism layers on the wall (default 5; 0: tetrahedra only)")
    p.set_defaults(run=run)


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder generate``."""
    options = {k: v for k, v in (("kind", args.kind), ("threads", args.threads),
                                 ("prism_layers", args.prism_layers)) if v is not None}
    with activity(f"meshing {args.geometry}"):
        path = generate(args.geometry, args.out, args.cells, **options)
    mesh = read_mesh(path)
    print(f"{path}: {mesh.n_cells} cells, markers {', '.join(sorted(mesh.marker_names.values()))}")
    return 0
