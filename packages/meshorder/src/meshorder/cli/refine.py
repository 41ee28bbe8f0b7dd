"""``meshorder refine IN OUT --levels K [--surface BODY]``: every cell split uniformly,
markers kept."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..atomic import check_writable
from ..errors import MeshWriteError, UsageError
from ..io import check_format, write_mesh
from ..options import positive_int
from ..progress import activity
from ..refine import refine
from ..surface import SURFACES, body_surface
from .common import add_mesh_argument, load_mesh


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("refine", help="split every cell uniformly (8 per 3-D cell a level)",
                       description="Refine a mesh uniformly: each edge is halved, each "
                                   "quadrilateral face gets its centre; tetrahedra, hexahedra "
                                   "and wedges split into 8, pyramids into 6 pyramids and 4 "
                                   "tetrahedra, triangles and quadrilaterals into 4. Boundary "
                                   "markers are kept; new wall nodes lie on the coarse facets "
                                   "(--surface: on the true surface of a body meshorder "
                                   "generate made).")
    add_mesh_argument(p)
    p.add_argument("out", help="refined mesh (any format meshio writes)")
    p.add_argument("--levels", type=positive_int, default=1,
                   help="refinements (each multiplies a 3-D mesh's cells by about 8)")
    p.add_argument("--surface", choices=SURFACES, default=None,
                   help="the body `meshorder generate` made the mesh around: new nodes of "
                        "its marker 'wing' go on its true surface, not the coarse facets")
    p.add_argument("--quiet", action="store_true", help="no progress clock")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder refine``."""
    out = Path(args.out)
    try:
        check_format(out)
    except MeshWriteError as error:  # the output name is an option of this command
        raise UsageError(str(error)) from None
    if out.resolve() == Path(args.mesh).resolve():
        raise UsageError(f"{out} is the input mesh; choose another output name")
    check_writable(out)
    mesh = load_mesh(args)
    with activity(f"refining {args.mesh}", show=not args.quiet), \
            body_surface(args.surface) as place:
        fine = refine(mesh, args.levels, place)
    with activity(f"writing {out}", show=not args.quiet):
        write_mesh(fine, out)
    print(f"{out}: {fine.n_cells} cells ({mesh.n_cells} refined {args.levels} time"
          f"{'s' if args.levels > 1 else ''}), {fine.n_points} points, markers "
          f"{', '.join(sorted(fine.marker_names.values()))}")
    return 0
