"""SU2 native mesh reader that keeps marker names (meshio drops them).

Handles ``%`` comments, ``NPOIN= n [n_domain]``, point lines with or without a
trailing index, ``MARKER_TAG=`` and the ``MARKERTAG=`` spelling, and ignores
sections it does not need (periodic data, FFD boxes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import MeshReadError
from ..mesh import Mesh

#: SU2 (VTK) element type codes.
SU2_TYPES = {3: ("line", 2), 5: ("triangle", 3), 9: ("quad", 4), 10: ("tetra", 4),
             12: ("hexahedron", 8), 13: ("wedge", 6), 14: ("pyramid", 5)}


class _Lines:
    """Numbered, comment-stripped, non-blank lines of a file."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self._raw = path.read_text(errors="strict").splitlines()
        except UnicodeDecodeError:
            raise MeshReadError(f"{path}: not an SU2 mesh (binary content)") from None
        self.number = 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while self.number < len(self._raw):
            line = self._raw[self.number].split("%", 1)[0].strip()
            self.number += 1
            if line:
                yield self.number, line

    def take(self, count: int, what: str) -> list[tuple[int, str]]:
        """The next ``count`` data lines; raise naming the section if the file ends."""
        taken = []
        for item in self:
            taken.append(item)
            if len(taken) == count:
                return taken
        raise MeshReadError(f"{self.path}: file ends after {len(taken)} of {count} {what} "
                            "(truncated?)")


def _keyword(line: str) -> tuple[str, str] | None:
    if "=" not in line:
        return None
    key, value = line.split("=", 1)
    return key.strip().upper().replace("_", ""), value.strip()


def _count(path: Path, number: int, key: str, value: str) -> int:
    try:
        return int(value.split()[0])
    except (ValueError, IndexError):
        raise MeshReadError(f"{path}:{number}: {key}= expects a count, found {value!r}") from None


def _elements(path: Path, lines: list[tuple[int, str]]) -> list[tuple[str, np.ndarray]]:
    """Parse element lines into per-type connectivity blocks, keeping file order."""
    by_type: dict[int, list[list[int]]] = {}
    for number, line in lines:
        try:
            values = [int(v) for v in line.split()]
        except ValueError:
            raise MeshReadError(f"{path}:{number}: expected integers, found {line!r}") from None
        code = values[0]
        if code not in SU2_TYPES:
            raise MeshReadError(f"{path}:{number}: unknown element type {code} "
                                f"(expected one of {sorted(SU2_TYPES)})")
        name, corners = SU2_TYPES[code]
        if len(values) - 1 < corners:
            raise MeshReadError(f"{path}:{number}: a {name} (type {code}) needs {corners} "
                                f"node indices, found {len(values) - 1}")
        by_type.setdefault(code, []).append(values[1 : 1 + corners])
    return [(SU2_TYPES[c][0], np.array(v, dtype=np.int64)) for c, v in by_type.items()]


def _points(path: Path, lines: list[tuple[int, str]], ndime: int) -> np.ndarray:
    rows = []
    for number, line in lines:
        try:
            values = [float(v) for v in line.split()]
        except ValueError:
            raise MeshReadError(f"{path}:{number}: expected coordinates, found {line!r}") from None
        if len(values) < ndime:
            raise MeshReadError(f"{path}:{number}: expected {ndime} coordinates, found "
                                f"{len(values)}")
        rows.append(values[:ndime])
    return np.array(rows, dtype=np.float64).reshape(-1, ndime)


def read(path: Path) -> Mesh:
    """Read an SU2 ``.su2`` mesh with named markers.

    Raises
    ------
    MeshReadError
        Naming the line for malformed content, or the section for a truncated file.
    """
    lines = _Lines(path)
    ndime = None
    points = None
    volume: list[tuple[str, np.ndarray]] = []
    facets: list[tuple[str, np.ndarray, np.ndarray]] = []
    names: dict[int, str] = {}
    in_unknown_section = False  # data lines of sections we skip (periodic, FFD)
    for number, line in lines:
        parsed = _keyword(line)
        if parsed is None:
            if in_unknown_section:
                continue
            raise MeshReadError(f"{path}:{number}: expected a KEYWORD= line, found {line!r}")
        key, value = parsed
        in_unknown_section = key not in ("NDIME", "NELEM", "NPOIN", "NMARK", "MARKERTAG")
        if key == "NDIME":
            ndime = _count(path, number, key, value)
            if ndime not in (2, 3):
                raise MeshReadError(f"{path}:{number}: NDIME must be 2 or 3, found {ndime}")
        elif key == "NELEM":
            n = _count(path, number, key, value)
            volume = _elements(path, lines.take(n, "elements"))
        elif key == "NPOIN":
            if ndime is None:
                raise MeshReadError(f"{path}:{number}: NPOIN before NDIME")
            n = _count(path, number, key, value)
            points = _points(path, lines.take(n, "points"), ndime)
        elif key == "MARKERTAG":
            marker = len(names)
            names[marker] = value or f"marker_{marker}"
            elems_number, elems_line = next(iter(lines), (number, ""))
            elems = _keyword(elems_line)
            if elems is None or elems[0] != "MARKERELEMS":
                raise MeshReadError(f"{path}:{elems_number}: expected MARKER_ELEMS= after "
                                    f"MARKER_TAG= {value}")
            n = _count(path, elems_number, "MARKER_ELEMS", elems[1])
            for name, conn in _elements(path, lines.take(n, f"elements of marker {value!r}")):
                facets.append((name, conn, np.full(len(conn), marker, np.int64)))
    if ndime is None or points is None or not volume:
        missing = [k for k, absent in (("NDIME", ndime is None), ("NPOIN", points is None),
                                       ("NELEM", not volume)) if absent]
        raise MeshReadError(f"{path}: not an SU2 mesh: no {', '.join(missing)} section")
    blocks = [(name, conn, None) for name, conn in volume]
    blocks += [(name, conn, marks) for name, conn, marks in facets]
    return Mesh.from_blocks(points, blocks, names, str(path))


def write(path: Path, points: np.ndarray, cells: list[tuple[str, np.ndarray]],
          markers: list[tuple[str, list[tuple[str, np.ndarray]]]]) -> None:
    """Write an SU2 mesh: volume ``cells`` (type, nodes) and named boundary ``markers``.

    Parameters
    ----------
    path : pathlib.Path
    points : numpy.ndarray
        ``(n, 2)`` or ``(n, 3)`` coordinates; the dimension of the file is their width.
    cells : list of (str, numpy.ndarray)
        meshio cell type name and ``(m, k)`` node ids, in the order to write.
    markers : list of (str, list of (str, numpy.ndarray))
        Marker name and its facets: (type name, node ids) per facet type.
    """
    code = {name: c for c, (name, _) in SU2_TYPES.items()}
    with open(path, "w") as f:
        f.write(f"NDIME= {points.shape[1]}\n")
        f.write(f"NELEM= {sum(len(nodes) for _, nodes in cells)}\n")
        index = 0
        for kind, nodes in cells:
            for row in nodes:
                f.write(f"{code[kind]} {' '.join(map(str, row))} {index}\n")
                index += 1
        f.write(f"NPOIN= {len(points)}\n")
        for i, p in enumerate(points):
            f.write(" ".join(repr(float(x)) for x in p) + f" {i}\n")
        f.write(f"NMARK= {len(markers)}\n")
        for name, facets in markers:
            f.write(f"MARKER_TAG= {name}\n")
            f.write(f"MARKER_ELEMS= {sum(len(nodes) for _, nodes in facets)}\n")
            for kind, nodes in facets:
                for row in nodes:
                    f.write(f"{code[kind]} {' '.join(map(str, row))}\n")
