"""Everything meshio reads, with markers from gmsh physical groups or entities."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path
from urllib.parse import quote, unquote

import meshio
import numpy as np

from ..celltypes import linear_type
from ..errors import MeshReadError
from ..mesh import Mesh

#: cell_data keys that carry boundary markers, most specific first.
MARKER_KEYS = ("gmsh:physical", "marker", "medit:ref", "su2:tag", "cell_tags", "gmsh:geometrical")


def read(path: Path) -> Mesh:
    """Read a file with meshio and convert it to a :class:`Mesh`.

    Raises
    ------
    MeshReadError
        If meshio cannot read the file; the message keeps meshio's reason.
    """
    try:
        # meshio prints notes and failed attempts to stdout/stderr; we report what matters
        quiet = io.StringIO()
        with (warnings.catch_warnings(), contextlib.redirect_stderr(quiet),
              contextlib.redirect_stdout(quiet)):
            warnings.simplefilter("ignore")
            raw = meshio.read(path)
    except (Exception, SystemExit) as exc:  # many types; its CGNS reader even calls sys.exit
        hint = _gmsh_truncation(path)
        if hint:
            raise MeshReadError(f"{path}: truncated? {hint}") from None
        if isinstance(exc, SystemExit):
            raise MeshReadError(f"{path}: not a readable {path.suffix or 'mesh'} file (meshio "
                                "gave up on it)") from None
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MeshReadError(
            f"{path}: not a readable mesh ({type(exc).__name__}: {reason})") from None
    return from_meshio(raw, str(path))


#: gmsh sections that a mesh file must close.
_GMSH_SECTIONS = ("MeshFormat", "Nodes", "Elements")


def _gmsh_truncation(path: Path) -> str | None:
    """For a gmsh file meshio could not read: which section is opened but never closed."""
    if path.suffix.lower() != ".msh":
        return None
    with open(path, "rb") as f:
        data = f.read()
    size = len(data)
    for section in _GMSH_SECTIONS:
        start = data.find(b"$" + section.encode())
        if start < 0:
            return f"no ${section} section in its {size} bytes"
        if data.find(b"$End" + section.encode(), start) < 0:
            return (f"${section} opens at byte {start} but never closes before the end of "
                    f"the file ({size} bytes)")
    return None


def from_meshio(raw: meshio.Mesh, source: str) -> Mesh:
    """Convert a meshio mesh, choosing the marker field and its names.

    Physical groups are used when facets carry them; otherwise gmsh's geometrical
    entities become the markers, named ``curve_<tag>`` or ``surface_<tag>``.
    """
    key = _marker_key(raw)
    names = _marker_names(raw, key)
    blocks = []
    for i, block in enumerate(raw.cells):
        markers = None
        if key is not None:
            markers = np.asarray(raw.cell_data[key][i], dtype=np.int64).reshape(-1)
        blocks.append((block.type, block.data, markers))
    return Mesh.from_blocks(raw.points, blocks, names, source)


def _facet_dim(raw: meshio.Mesh) -> int:
    dims = [t.dim for t in (linear_type(b.type) for b in raw.cells) if t is not None]
    return max(dims, default=0) - 1


def named_marker_key(names: dict[int, str]) -> str:
    """A cell-data name that carries the marker names: ``marker[1=wall;2=far%20field]``.

    Formats without field data (VTU, VTK, XDMF) keep array names, so the names survive
    a write and a read.

    Examples
    --------
    >>> key = named_marker_key({1: "wall", 2: "far field"})
    >>> key, parse_named_marker_key(key)
    ('marker[1=wall;2=far%20field]', {1: 'wall', 2: 'far field'})
    """
    return "marker[" + ";".join(f"{i}={quote(n, safe='')}" for i, n in sorted(names.items())) + "]"


def parse_named_marker_key(key: str) -> dict[int, str] | None:
    """The names of :func:`named_marker_key`, or None for any other key."""
    match = re.fullmatch(r"marker\[(.*)\]", key)
    if match is None:
        return None
    pairs = (item.split("=", 1) for item in match.group(1).split(";") if "=" in item)
    return {int(i): unquote(n) for i, n in pairs if i.isdigit()}


def _marker_key(raw: meshio.Mesh) -> str | None:
    facet_dim = _facet_dim(raw)
    named = [k for k in raw.cell_data if parse_named_marker_key(k) is not None]
    for key in [*named, *MARKER_KEYS]:
        data = raw.cell_data.get(key)
        if data is None:
            continue
        marked = [np.any(np.asarray(d) != 0) for d, b in zip(data, raw.cells, strict=True)
                  if (t := linear_type(b.type)) is not None and t.dim == facet_dim]
        if any(marked):
            return key
    return None


def _marker_names(raw: meshio.Mesh, key: str | None) -> dict[int, str]:
    if key is None:
        return {}
    named = parse_named_marker_key(key)
    if named is not None:
        return named
    if key == "gmsh:geometrical":
        prefix = "curve" if _facet_dim(raw) == 1 else "surface"
        tags = set()
        for d, b in zip(raw.cell_data[key], raw.cells, strict=True):
            t = linear_type(b.type)
            if t is not None and t.dim == _facet_dim(raw):
                tags.update(int(x) for x in np.unique(d))
        return {tag: f"{prefix}_{tag}" for tag in sorted(tags)}
    facet_dim = _facet_dim(raw)
    return {int(v[0]): name for name, v in raw.field_data.items()
            if len(v) >= 2 and int(v[1]) == facet_dim}
