"""Helpers shared by subcommands: the mesh argument and reading with its options."""

from __future__ import annotations

import argparse

from ..io import read_mesh
from ..mesh import Mesh
from ..options import positive_float
from ..progress import activity


def add_mesh_argument(parser: argparse.ArgumentParser, name: str = "mesh") -> None:
    """Positional mesh path plus ``--mesh-size-factor`` for ``.geo`` input."""
    parser.add_argument(name, help="mesh file (any format meshio reads, SU2, gmsh .msh/.geo, CGNS)")
    parser.add_argument("--mesh-size-factor", type=positive_float, default=1.0, metavar="F",
                        help="gmsh Mesh.MeshSizeFactor when meshing a .geo file (default 1)")


def load_mesh(args: argparse.Namespace, name: str = "mesh") -> Mesh:
    """Read the mesh named by ``args.<name>``, with a progress clock if it takes a while."""
    with activity(f"reading {getattr(args, name)}", show=not getattr(args, "quiet", False)):
        return read_mesh(getattr(args, name), mesh_size_factor=args.mesh_size_factor)
