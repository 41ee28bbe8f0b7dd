"""``meshorder generate NAME OUT --cells N``: the reference geometries, meshed by gmsh."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..atomic import check_writable, remove_stale_temporaries
from ..errors import MeshWriteError, UsageError
from ..generate import GEOMETRIES, generate
from ..io import check_format, read_mesh, write_mesh
from ..options import non_negative_int, positive_float, positive_int
from ..progress import activity
from ..termination import in_child_process

#: Options that only some geometries take: option -> those geometries.
GEOMETRY_OPTIONS = {"kind": ("couette",), "prism_layers": ("wing", "oneram6"),
                    "threads": ("box", "wing", "oneram6"), "far": ("oneram6",),
                    "first_layer": ("cylinder", "oneram6"),
                    "order": ("couette", "naca0012-ogrid", "naca0012-tri", "cylinder", "flap")}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("generate", help="mesh a reference geometry at a chosen size",
                       description="Mesh one of the reference papers' geometries with gmsh "
                                   "(named markers, gmsh 4.1 binary .msh).")
    p.add_argument("geometry", choices=sorted(GEOMETRIES), help="reference geometry")
    p.add_argument("out", help="output .msh file")
    p.add_argument("--cells", type=positive_int, required=True,
                   help="target number of cells (about)")
    p.add_argument("--kind", choices=["quad", "tri"], default=None,
                   help="couette only: quads or triangles")
    p.add_argument("--threads", type=positive_int, default=None,
                   help="3D only: gmsh threads (parallel meshing numbers cells in thread order)")
    p.add_argument("--far", type=positive_float, default=None, metavar="CHORDS",
                   help="oneram6 only: far field this many root chords out (default 20)")
    p.add_argument("--prism-layers", type=non_negative_int, default=None,
                   help="wing and oneram6: prism layers on the wall (wing: default 5; "
                        "oneram6: default 0; 0: tetrahedra only)")
    p.add_argument("--first-layer", type=positive_float, default=None, metavar="H",
                   help="cylinder: first cell height over the wall cells' length (default "
                        "0.1); oneram6 with --prism-layers: first prism height over the root "
                        "chord (default 2e-6: y+ about 1 at Re 14.6 million)")
    p.add_argument("--order", type=int, choices=[1, 2], default=None,
                   help="2D only: 2 writes second-order elements (triangle6, quad9) whose "
                        "wall edges follow the geometry (default 1)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder generate``."""
    options = {k: v for k, v in (("kind", args.kind), ("threads", args.threads),
                                 ("prism_layers", args.prism_layers), ("far", args.far),
                                 ("first_layer", args.first_layer), ("order", args.order))
               if v is not None}
    for option in options:
        if args.geometry not in GEOMETRY_OPTIONS[option]:
            flag = "--" + option.replace("_", "-")
            raise UsageError(f"{flag} applies to {', '.join(GEOMETRY_OPTIONS[option])} only, "
                             f"not {args.geometry}")
    out = Path(args.out)
    try:
        check_format(out)
    except MeshWriteError as error:  # the output name is an option of this command
        raise UsageError(str(error)) from None
    check_writable(out)
    # gmsh holds Ctrl-C back until it has meshed: it meshes in a child process, which an
    # interruption stops at once (its temporary file is then removed here)
    with activity(f"meshing {args.geometry}"):
        try:
            if out.suffix.lower() == ".msh":  # gmsh writes its format, physical names included
                path = in_child_process(generate, args.geometry, out, args.cells, **options)
            else:
                write_mesh(in_child_process(generate, args.geometry, None, args.cells,
                                            **options), out)
                path = out
        except KeyboardInterrupt:
            remove_stale_temporaries(out)
            raise
    mesh = read_mesh(path)
    print(f"{path}: {mesh.n_cells} cells, markers {', '.join(sorted(mesh.marker_names.values()))}")
    if not 0.5 <= mesh.n_cells / args.cells <= 2:
        print(f"note: {mesh.n_cells} cells where --cells {args.cells} was asked: the "
              f"{args.geometry} geometry's smallest features set its resolution this far "
              "from the target")
    return 0
