"""PLOT3D structured grids (ASCII, single or multi block, 2D or 3D) as unstructured meshes,
their boundaries marked by a Neutral Map File.

A PLOT3D file holds the number of blocks, each block's point dimensions (``idim jdim``
in 2D, ``idim jdim kdim`` in 3D), then per block every x, then every y (then every z),
``i`` running fastest. Each block becomes quadrilaterals (2D) or hexahedra (3D).

Boundaries come from the grid's Neutral Map File (``.nmf``, NASA Langley's format, as
NASA's Turbulence Modeling Resource ships beside its grids: the same name with ``.nmf``),
one line per boundary segment::

    'viscous_solid'  1   1   1    2  25   89

``name block face start1 end1 start2 end2`` in point indices (1-based, inclusive), faces
1 to 6 being kmin, kmax, imin, imax, jmin, jmax with (primary, secondary) index pairs
(i, j), (i, j), (j, k), (j, k), (k, i), (k, i). Segments of one name form one marker. A
``'one-to-one'`` line (``name B1 F1 S1 E1 S2 E2 B2 F2 S1 E1 S2 E2 swap``) joins two
segments point by point (a C-grid's wake cut, or two blocks): their points are merged
and the faces between them become interior. The Turbulence Modeling Resource writes the
map of its 2D grids for their 3D form (two planes one cell apart, ``i`` spanwise): for a
2D grid the map's ``j`` and ``k`` are the grid's ``i`` and ``j``, and the spanwise faces
(imin, imax) are left out. Without a map, each block face is a marker of its own:
``imin``, ``imax``, ``jmin``, ``jmax`` (and ``kmin``, ``kmax``), named with the block
(``b2.imin``) when there are several; a user names other index ranges by writing a map.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import MeshReadError
from ..mesh import Mesh

#: Suffixes read as PLOT3D, and the dimension each implies (None: from the counts).
SUFFIXES = {".p2dfmt": 2, ".p3dfmt": 3, ".x": None, ".xyz": None, ".p3d": None,
            ".g": None, ".grd": None}

#: Neutral Map File face number -> (constant axis, its end: 0 min / 1 max, primary axis,
#: secondary axis); axes 0, 1, 2 are i, j, k.
FACES = {1: (2, 0, 0, 1), 2: (2, 1, 0, 1), 3: (0, 0, 1, 2), 4: (0, 1, 1, 2),
         5: (1, 0, 2, 0), 6: (1, 1, 2, 0)}

#: The name of connection lines in a Neutral Map File.
ONE_TO_ONE = "one-to-one"


@dataclass(frozen=True)
class Segment:
    """One boundary segment of a Neutral Map File: a face's index ranges (1-based points)."""

    block: int
    face: int
    first: tuple[int, int]
    last: tuple[int, int]
    line: int


def read(path: Path, map_path: Path | None = None) -> Mesh:
    """Read a PLOT3D grid (see the module docstring), its boundaries from ``map_path``
    (default: the grid's name with ``.nmf``, where it exists).

    Raises
    ------
    MeshReadError
        If the file is binary, truncated or not PLOT3D, or the map does not fit it,
        naming the file (and the map's line).
    """
    blocks = _read_blocks(path)
    map_path = map_path if map_path is not None else path.with_suffix(".nmf")
    offsets = np.cumsum([0] + [block[0].size for block in blocks])
    points = np.concatenate([block.reshape(block.shape[0], -1).T for block in blocks])
    dim = blocks[0].shape[0]
    cells = np.concatenate([_cells(block.shape[1:][::-1]) + offset
                            for block, offset in zip(blocks, offsets, strict=False)])
    if map_path.is_file():
        segments, joins = _read_map(map_path, blocks)
    else:
        segments, joins = _block_faces(blocks), []
    facets, markers, names = [], [], {}
    for name, parts in segments.items():
        ids = np.concatenate([_facets(blocks[s.block], s, dim) + offsets[s.block] for s in parts])
        names[len(names)] = name
        facets.append(ids)
        markers.append(np.full(len(ids), len(names) - 1, dtype=np.int64))
    same = np.arange(len(points))
    for one, two in joins:
        _join(same, points, _segment_points(blocks, one, offsets),
              _segment_points(blocks, two, offsets), map_path, one.line)
    used, inverse = np.unique(same, return_inverse=True)
    cell_type, facet_type = ("quad", "line") if dim == 2 else ("hexahedron", "quad")
    block_list = [(cell_type, inverse[cells], None)]
    if facets:
        block_list.append((facet_type, inverse[np.concatenate(facets)],
                           np.concatenate(markers)))
    return Mesh.from_blocks(points[used], block_list, names, source=str(path))


def _read_blocks(path: Path) -> list[np.ndarray]:
    """Each block's coordinates ``(dim, [kdim,] jdim, idim)``."""
    try:
        text = path.read_text(errors="strict")
    except UnicodeDecodeError:
        raise MeshReadError(f"{path}: binary PLOT3D is not read; write the grid as "
                            "formatted (ASCII) PLOT3D") from None
    try:
        values = np.array(text.replace("D", "E").replace("d", "e").split(), dtype=np.float64)
    except ValueError as error:
        raise MeshReadError(f"{path}: not a PLOT3D grid ({error})") from None
    if not len(values) or values[0] != int(values[0]) or values[0] < 1:
        raise MeshReadError(f"{path}: not a PLOT3D grid (it must start with the number "
                            "of blocks)")
    n_blocks = int(values[0])
    dim = SUFFIXES.get(path.suffix.lower()) or _dimension(values, n_blocks, path)
    header = 1 + dim * n_blocks
    shapes = values[1:header].reshape(n_blocks, dim) if len(values) >= header else None
    if shapes is None or (shapes < 2).any() or (shapes != np.round(shapes)).any():
        raise MeshReadError(f"{path}: {n_blocks} block(s) of {dim} point dimensions each "
                            "expected after the number of blocks")
    shapes = shapes.astype(np.int64)
    needed = header + dim * int(shapes.prod(axis=1).sum())
    if len(values) < needed:
        raise MeshReadError(f"{path}: file ends after {len(values) - header} of "
                            f"{needed - header} coordinates (truncated?)")
    blocks, start = [], header
    for shape in shapes:
        count = dim * int(shape.prod())
        blocks.append(values[start:start + count].reshape(dim, *shape[::-1]))
        start += count
    return blocks


def _dimension(values: np.ndarray, n_blocks: int, path: Path) -> int:
    """2 or 3: the dimension whose header and coordinate count fit the file's values."""
    for dim in (3, 2):
        shapes = values[1:1 + dim * n_blocks]
        if len(shapes) == dim * n_blocks and (shapes >= 2).all():
            if 1 + dim * n_blocks + dim * int(shapes.reshape(n_blocks, dim).prod(axis=1).sum()) \
                    == len(values):
                return dim
    raise MeshReadError(f"{path}: neither a 2D nor a 3D PLOT3D grid (its counts fit neither)")


def _cells(shape: tuple[int, ...]) -> np.ndarray:
    """Quadrilaterals (``shape`` = (idim, jdim)) or hexahedra (idim, jdim, kdim) of one
    block, as local point numbers (``i`` fastest)."""
    index = np.arange(int(np.prod(shape))).reshape(shape[::-1])
    if len(shape) == 2:
        a = index[:-1, :-1]
        return np.stack([a, index[:-1, 1:], index[1:, 1:], index[1:, :-1]], -1).reshape(-1, 4)
    a = index[:-1, :-1, :-1]
    corners = [a, index[:-1, :-1, 1:], index[:-1, 1:, 1:], index[:-1, 1:, :-1],
               index[1:, :-1, :-1], index[1:, :-1, 1:], index[1:, 1:, 1:], index[1:, 1:, :-1]]
    return np.stack(corners, -1).reshape(-1, 8)


def _read_map(path: Path, blocks: list[np.ndarray]) -> tuple[dict[str, list[Segment]], list]:
    """The map's boundary segments by name, and its one-to-one pairs; refuses lines that
    do not fit the grid's blocks."""
    dim = blocks[0].shape[0]
    segments: dict[str, list[Segment]] = {}
    joins = []
    flat = dim == 2
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip().rstrip("\\").strip()
        if not line.startswith("'"):
            continue
        name, _, rest = line[1:].partition("'")
        fields = rest.split()
        try:
            numbers = [int(field) for field in fields[:12]]
        except ValueError:
            raise MeshReadError(f"{path}, line {number}: 'name' then block, face and four "
                                f"point indices expected, not {line!r}") from None
        expected = 12 if name.lower() == ONE_TO_ONE else 6
        if len(numbers) < expected:
            raise MeshReadError(f"{path}, line {number}: {expected} numbers expected after "
                                f"{name!r}, found {len(numbers)}")
        pieces = [_segment(path, number, numbers[6 * k:6 * k + 6], blocks, flat)
                  for k in range(expected // 6)]
        if any(piece is None for piece in pieces):
            continue  # a spanwise face of a 2D grid's map
        if name.lower() == ONE_TO_ONE:
            swap = len(fields) > 12 and fields[12].lower() == "true"
            joins.append((pieces[0], pieces[1] if not swap else _swapped(pieces[1])))
        else:
            segments.setdefault(name, []).append(pieces[0])
    if not segments:
        raise MeshReadError(f"{path}: no boundary segments ('name' block face ranges)")
    return segments, joins


def _segment(path: Path, number: int, numbers: list[int], blocks: list[np.ndarray],
             flat: bool) -> Segment | None:
    """One segment of a map line, in the grid's own axes (a 2D grid: the map's j, k are
    its i, j; None for a spanwise face); refuses one outside the block."""
    block, face, s1, e1, s2, e2 = numbers
    if not 1 <= block <= len(blocks) or face not in FACES:
        raise MeshReadError(f"{path}, line {number}: block {block} face {face} does not "
                            f"exist (blocks 1..{len(blocks)}, faces 1..6)")
    first, last = (s1, s2), (e1, e2)
    if flat:
        constant, _, primary, secondary = FACES[face]
        if constant == 0:
            return None
        # 3D (i, j, k) -> 2D (-, i, j): the 2D segment's one range is the non-i index
        along = primary if primary != 0 else secondary
        which = 0 if along == primary else 1
        face = {(2, 0): 1, (2, 1): 2, (1, 0): 5, (1, 1): 6}[FACES[face][:2]]
        first, last = (first[which], 1), (last[which], 1)
    segment = Segment(block - 1, face, first, last, number)
    shape = blocks[block - 1].shape[1:][::-1]  # (idim, jdim[, kdim])
    for axis, a, b in _ranges(segment, len(shape)):
        if not (1 <= a <= shape[axis] and 1 <= b <= shape[axis]):
            raise MeshReadError(f"{path}, line {number}: point range {a}..{b} is outside "
                                f"block {block}'s 1..{shape[axis]}")
    return segment


def _ranges(segment: Segment, dim: int) -> list[tuple[int, int, int]]:
    """``(axis, start, end)`` of a segment's varying indices (1-based, inclusive): in 2D
    the one along the face (faces 1, 2: i; faces 5, 6: j)."""
    if dim == 2:
        return [(0 if segment.face in (1, 2) else 1, segment.first[0], segment.last[0])]
    _, _, primary, secondary = FACES[segment.face]
    return [(primary, segment.first[0], segment.last[0]),
            (secondary, segment.first[1], segment.last[1])]


def _run(start: int, end: int) -> np.ndarray:
    """0-based indices from point ``start`` to ``end`` (1-based, inclusive, either way)."""
    step = 1 if end >= start else -1
    return np.arange(start - 1, end - 1 + step, step)


def _swapped(segment: Segment) -> Segment:
    return Segment(segment.block, segment.face, segment.first[::-1], segment.last[::-1],
                   segment.line)


def _block_faces(blocks: list[np.ndarray]) -> dict[str, list[Segment]]:
    """Each block face as a segment of its own (a grid without a map)."""
    dim, segments = blocks[0].shape[0], {}
    names = {1: "kmin", 2: "kmax", 3: "imin", 4: "imax", 5: "jmin", 6: "jmax"}
    faces = (1, 2, 5, 6) if dim == 2 else (1, 2, 3, 4, 5, 6)
    for b, block in enumerate(blocks):
        shape = block.shape[1:][::-1]
        for face in faces:
            if dim == 2:
                end = shape[0] if face in (1, 2) else shape[1]
                segment = Segment(b, face, (1, 1), (end, 1), 0)
                name = {1: "jmin", 2: "jmax", 5: "imin", 6: "imax"}[face]
            else:
                _, _, primary, secondary = FACES[face]
                segment = Segment(b, face, (1, 1), (shape[primary], shape[secondary]), 0)
                name = names[face]
            segments[name if len(blocks) == 1 else f"b{b + 1}.{name}"] = [segment]
    return segments


def _index_grid(block: np.ndarray, segment: Segment, dim: int) -> np.ndarray:
    """Local point numbers of a segment, ``(n1[, n2])`` in its ranges' order."""
    shape = block.shape[1:][::-1]  # (idim, jdim[, kdim])
    index = np.arange(int(np.prod(shape))).reshape(shape[::-1])  # [k,] j, i
    ranges = _ranges(segment, dim)
    if dim == 2:
        (axis, a, b), = ranges
        fixed = 0 if segment.face in (1, 5) else shape[1 - axis] - 1
        run = _run(a, b)
        return index[fixed, run] if axis == 0 else index[run, fixed]
    constant, end = FACES[segment.face][:2]
    (p_axis, pa, pb), (s_axis, sa, sb) = ranges
    primary, secondary = np.meshgrid(_run(pa, pb), _run(sa, sb), indexing="ij")
    ijk = [None, None, None]
    ijk[constant] = np.full_like(primary, 0 if end == 0 else shape[constant] - 1)
    ijk[p_axis], ijk[s_axis] = primary, secondary
    return index[ijk[2], ijk[1], ijk[0]]


def _facets(block: np.ndarray, segment: Segment, dim: int) -> np.ndarray:
    """A segment's boundary lines (2D) or quadrilaterals (3D), as local point numbers."""
    grid = _index_grid(block, segment, dim)
    if dim == 2:
        return np.stack([grid[:-1], grid[1:]], -1)
    return np.stack([grid[:-1, :-1], grid[1:, :-1], grid[1:, 1:], grid[:-1, 1:]],
                    -1).reshape(-1, 4)


def _segment_points(blocks: list[np.ndarray], segment: Segment, offsets) -> np.ndarray:
    """Global point numbers of a segment, in its ranges' order."""
    return _index_grid(blocks[segment.block], segment, blocks[0].shape[0]) + offsets[segment.block]


def _join(same: np.ndarray, points: np.ndarray, one: np.ndarray, two: np.ndarray,
          path: Path, line: int) -> None:
    """Merge the points of two joined segments, pair by pair (``same``: each point's
    representative), after checking that each pair coincides."""
    if one.shape != two.shape:
        raise MeshReadError(f"{path}, line {line}: the one-to-one segments have "
                            f"{one.size} and {two.size} points")
    one, two = one.ravel(), two.ravel()
    scale = float(np.ptp(points, axis=0).max()) or 1.0
    gap = float(np.abs(points[one] - points[two]).max())
    if gap > 1e-9 * scale:
        raise MeshReadError(f"{path}, line {line}: the one-to-one segments' points are "
                            f"{gap:.3g} apart; they must coincide")
    low = np.minimum(same[one], same[two])
    same[one] = same[two] = low
    # chains (a point joined twice) settle on their smallest representative
    while True:
        again = same[same]
        if np.array_equal(again, same):
            break
        same[:] = again
