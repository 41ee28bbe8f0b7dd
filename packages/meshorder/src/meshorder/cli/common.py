"""Helpers shared by subcommands: reading with options, and plain-text tables."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from ..atomic import atomic_path
from ..io import read_mesh
from ..mesh import Mesh
from ..progress import activity


def _bounded(kind: type, low, what: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not (value >= low) or value != value or value in (float("inf"),):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text}")
        return value
    return parse


#: argparse types that refuse values outside their range at parse time (exit 2).
non_negative_int = _bounded(int, 0, "an integer of 0 or more")
positive_int = _bounded(int, 1, "an integer of 1 or more")
positive_float = _bounded(float, float.fromhex("0x1p-1074"), "a finite number above 0")


def add_mesh_argument(parser: argparse.ArgumentParser, name: str = "mesh") -> None:
    """Positional mesh path plus ``--mesh-size-factor`` for ``.geo`` input."""
    parser.add_argument(name, help="mesh file (any format meshio reads, SU2, gmsh .msh/.geo, CGNS)")
    parser.add_argument("--mesh-size-factor", type=positive_float, default=1.0, metavar="F",
                        help="gmsh Mesh.MeshSizeFactor when meshing a .geo file (default 1)")


def load_mesh(args: argparse.Namespace, name: str = "mesh") -> Mesh:
    """Read the mesh named by ``args.<name>``, with a progress clock if it takes a while."""
    with activity(f"reading {getattr(args, name)}", show=not getattr(args, "quiet", False)):
        return read_mesh(getattr(args, name), mesh_size_factor=args.mesh_size_factor)


def write_results(rows: list[dict], text: str, json_path: str | None,
                  markdown_path: str | None) -> None:
    """Write benchmark rows as JSON and their table as markdown (each atomically, if asked)."""
    if json_path:
        with atomic_path(json_path) as tmp:
            tmp.write_text(json.dumps(rows, indent=1))
    if markdown_path:
        with atomic_path(markdown_path) as tmp:
            tmp.write_text(text.rstrip("\n") + "\n")


def format_value(value: object) -> str:
    """Numbers to short strings: integers as is, floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table (aligned, so it also reads well in a terminal)."""
    cells = [[format_value(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in cells)])
