"""Uniform refinement: every cell split into cells of half its size, markers kept.

One level splits each edge at its midpoint and each quadrilateral face at its centre:

- triangles and quadrilaterals into 4 (a quadrilateral's centre is a new node), lines
  (the facets of 2-D meshes) into 2;
- tetrahedra into 8: four at the corners and the inner octahedron cut along its
  shortest diagonal into four (the best shaped of the three ways, per cell);
- hexahedra into 8 (the 27 nodes of a 3x3x3 lattice: corners, edge midpoints, face
  centres and the cell's centre), wedges into 8 (two layers of the triangles' split);
- pyramids into 6 pyramids and 4 tetrahedra (the usual split: a pyramid at each base
  corner and at the apex, one upside down on the base's centre, and four tetrahedra).

Boundary facets split the same way, on the same new nodes, and keep their markers. New
nodes lie on the straight edges and flat faces of the coarse cells: a curved wall keeps
its coarse facets (say so when a refined run is compared with a mesh made finer), unless
a placement (``place``, :func:`meshorder.surface.body_surface`) moves each level's new
wall nodes onto the body's true surface. Second-order meshes are refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .celltypes import CELL_TYPES
from .errors import MeshorderError
from .geometry import signed_measures
from .mesh import CellBlock, Mesh

if TYPE_CHECKING:
    from .surface import Placement

# A child is (type, references); a reference is a corner number, ("e", i, j) the midpoint
# of the edge between corners i and j, ("q", i, j, k, l) the centre of the quadrilateral
# with those corners, or ("c",) the cell's centre.


def _e(i: int, j: int) -> tuple:
    return ("e", i, j)


def _triangles(a, b, c, ab, bc, ca) -> list:
    """The four triangles of a triangle ``a b c`` with edge midpoints ``ab, bc, ca``."""
    return [(a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca)]


def _lattice(corners: dict[tuple[int, ...], int]) -> dict[tuple[int, ...], object]:
    """The references of a quadrilateral's (2 axes) or hexahedron's (3) lattice of
    ``3^axes`` nodes: coordinates 0 and 2 are corners, 1 the midway."""
    axes = len(next(iter(corners)))
    nodes = {}
    for point in itertools.product(range(3), repeat=axes):
        middle = [a for a in range(axes) if point[a] == 1]
        ends = []
        for choice in itertools.product((0, 2), repeat=len(middle)):
            end = list(point)
            for a, value in zip(middle, choice, strict=True):
                end[a] = value
            ends.append(corners[tuple(end)])
        if not middle:
            nodes[point] = ends[0]
        elif len(middle) == 1:
            nodes[point] = _e(*ends)
        elif len(middle) == 2:
            a, b, c, d = ends  # lattice order: turn it into a cycle
            nodes[point] = ("q", a, b, d, c)
        else:
            nodes[point] = ("c",)
    return nodes


def _quad_children() -> list:
    corners = {(0, 0): 0, (2, 0): 1, (2, 2): 2, (0, 2): 3}
    lattice = _lattice(corners)
    return [("quad", [lattice[(i, j)], lattice[(i + 1, j)], lattice[(i + 1, j + 1)],
                      lattice[(i, j + 1)]]) for i in (0, 1) for j in (0, 1)]


def _hexahedron_children() -> list:
    corners = {(0, 0, 0): 0, (2, 0, 0): 1, (2, 2, 0): 2, (0, 2, 0): 3,
               (0, 0, 2): 4, (2, 0, 2): 5, (2, 2, 2): 6, (0, 2, 2): 7}
    lat = _lattice(corners)
    children = []
    for i in (0, 1):
        for j in (0, 1):
            for k in (0, 1):
                children.append(("hexahedron", [
                    lat[(i, j, k)], lat[(i + 1, j, k)], lat[(i + 1, j + 1, k)],
                    lat[(i, j + 1, k)], lat[(i, j, k + 1)], lat[(i + 1, j, k + 1)],
                    lat[(i + 1, j + 1, k + 1)], lat[(i, j + 1, k + 1)]]))
    return children


def _wedge_children() -> list:
    bottom = [0, 1, 2, _e(0, 1), _e(1, 2), _e(2, 0)]
    middle = [_e(0, 3), _e(1, 4), _e(2, 5), ("q", 0, 1, 4, 3), ("q", 1, 2, 5, 4),
              ("q", 2, 0, 3, 5)]
    top = [3, 4, 5, _e(3, 4), _e(4, 5), _e(5, 3)]
    split = [(0, 3, 5), (3, 1, 4), (5, 4, 2), (3, 4, 5)]
    return [("wedge", [low[i] for i in tri] + [high[i] for i in tri])
            for low, high in ((bottom, middle), (middle, top)) for tri in split]


def _pyramid_children() -> list:
    base = ("q", 0, 1, 2, 3)
    m01, m12, m23, m30 = _e(0, 1), _e(1, 2), _e(2, 3), _e(3, 0)
    m04, m14, m24, m34 = _e(0, 4), _e(1, 4), _e(2, 4), _e(3, 4)
    return [("pyramid", [0, m01, base, m30, m04]), ("pyramid", [m01, 1, m12, base, m14]),
            ("pyramid", [base, m12, 2, m23, m24]), ("pyramid", [m30, base, m23, 3, m34]),
            ("pyramid", [m04, m14, m24, m34, 4]), ("pyramid", [m04, m34, m24, m14, base]),
            ("tetra", [m01, base, m04, m14]), ("tetra", [m12, base, m14, m24]),
            ("tetra", [m23, base, m24, m34]), ("tetra", [m30, base, m34, m04])]


def _tetra_children(diagonal: int) -> list:
    """The eight tetrahedra of a tetrahedron, its octahedron cut along diagonal
    ``diagonal`` (0: m01-m23, 1: m02-m13, 2: m03-m12)."""
    m = {pair: _e(*pair) for pair in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))}
    corners = [("tetra", [0, m[0, 1], m[0, 2], m[0, 3]]),
               ("tetra", [m[0, 1], 1, m[1, 2], m[1, 3]]),
               ("tetra", [m[0, 2], m[1, 2], 2, m[2, 3]]),
               ("tetra", [m[0, 3], m[1, 3], m[2, 3], 3])]
    # the diagonal's two ends, and the four other midpoints around it in turn
    ends = [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))][diagonal]
    ring = [[(0, 2), (1, 2), (1, 3), (0, 3)], [(0, 1), (0, 3), (2, 3), (1, 2)],
            [(0, 1), (1, 3), (2, 3), (0, 2)]][diagonal]
    inner = [("tetra", [m[ends[0]], m[ends[1]], m[ring[i]], m[ring[(i + 1) % 4]]])
             for i in range(4)]
    return corners + inner


#: Each linear type's children (tetrahedra: :func:`_tetra_children`, chosen per cell).
CHILDREN = {
    "line": [("line", [0, _e(0, 1)]), ("line", [_e(0, 1), 1])],
    "triangle": [("triangle", list(t)) for t in _triangles(0, 1, 2, _e(0, 1), _e(1, 2),
                                                              _e(2, 0))],
    "quad": _quad_children(),
    "hexahedron": _hexahedron_children(),
    "wedge": _wedge_children(),
    "pyramid": _pyramid_children(),
}


@dataclass(frozen=True)
class Refinement:
    """A refined mesh and where each of its cells and facets came from.

    Attributes
    ----------
    mesh : Mesh
        The refined mesh.
    cell_parent, facet_parent : numpy.ndarray
        Per cell (facet) of ``mesh``: the cell (facet) of the coarse mesh it lies in.
    cell_child, facet_child : numpy.ndarray
        Per cell (facet): its place among its coarse cell's (facet's) descendants, the
        same for every copy of that coarse cell whatever else the mesh holds (level by
        level, ``child = child_before * n_children + k`` with ``k`` its place in its
        parent's split, :data:`CHILDREN`).
    """

    mesh: Mesh
    cell_parent: np.ndarray
    cell_child: np.ndarray
    facet_parent: np.ndarray
    facet_child: np.ndarray

    def then(self, split: Split) -> Refinement:
        """This refinement followed by one more level, ``split`` of :attr:`mesh`."""
        return Refinement(split.mesh, self.cell_parent[split.cell_parent],
                          self.cell_child[split.cell_parent] * split.cell_width + split.cell_k,
                          self.facet_parent[split.facet_parent],
                          self.facet_child[split.facet_parent] * split.facet_width
                          + split.facet_k)


def refine(mesh: Mesh, levels: int = 1, place: Placement | None = None) -> Mesh:
    """``mesh`` refined ``levels`` times (see the module docstring), each level's new
    wall nodes moved by ``place`` where given.

    Raises
    ------
    MeshorderError
        For a second-order mesh, or ``levels`` below 0.

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> fine = refine(grid_mesh(3, 2), 2)  # 6 squares, each into 4 twice
    >>> fine.n_cells, [len(b) for b in fine.facets]
    (96, [40])
    """
    return refine_tracked(mesh, levels, place).mesh


def refine_tracked(mesh: Mesh, levels: int = 1, place: Placement | None = None
                   ) -> Refinement:
    """``mesh`` refined ``levels`` times (``place`` as :func:`refine`), with each new
    cell's and facet's coarse parent and place among its descendants
    (:class:`Refinement`).

    Raises
    ------
    MeshorderError
        For a second-order mesh, or ``levels`` below 0.

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> refined = refine_tracked(grid_mesh(2, 1), 2)  # 2 squares into 16 each
    >>> np.bincount(refined.cell_parent).tolist()
    [16, 16]
    >>> sorted(set(refined.cell_child.tolist())) == list(range(16))
    True
    """
    refined = unrefined(mesh)
    for split in splits(mesh, levels, place):
        refined = refined.then(split)
    return refined


def unrefined(mesh: Mesh) -> Refinement:
    """``mesh`` as its own refinement of no level: every cell its own parent."""
    cells, facets = np.arange(mesh.n_cells), np.arange(sum(len(b) for b in mesh.facets))
    return Refinement(mesh, cells, np.zeros_like(cells), facets, np.zeros_like(facets))


def splits(mesh: Mesh, levels: int, place: Placement | None = None) -> Iterator[Split]:
    """The :class:`Split` of each of ``levels`` refinements of ``mesh`` in turn, each made
    as the iterator gets to it (its new wall nodes moved by ``place`` where given).

    Raises
    ------
    MeshorderError
        At once, for a second-order mesh, or ``levels`` below 0.
    """
    if levels < 0:
        raise MeshorderError(f"refinement levels must be 0 or more, not {levels}")
    if levels and len(mesh.mid_edge_nodes):
        raise MeshorderError(f"{mesh.source}: refine takes meshes of linear cells; this "
                             "one is second order")

    def each_level(mesh: Mesh) -> Iterator[Split]:
        for _ in range(levels):
            split = split_once(mesh)
            if place is not None:
                split = replace(split, mesh=place(split.mesh, len(mesh.points)))
            yield split
            mesh = split.mesh

    return each_level(mesh)


@dataclass(frozen=True)
class SplitPlan:
    """How a cell (facet) type splits: its children and the nodes they refer to.

    Attributes
    ----------
    templates : list
        The split's variants, each a list of children ``(type, references)`` (tetrahedra
        have three, one per diagonal of the inner octahedron; other types one).
    edges, quads : list of tuple of int
        The corners of the edges whose midpoints, and of the quadrilaterals whose
        centres, the children use.
    centre : bool
        Whether the children use the cell's centre.
    column : dict
        Each reference's column in the parent's node table: corners first (their own
        numbers), then the edges' midpoints, the quadrilaterals' centres, the centre.
    """

    templates: list
    edges: list
    quads: list
    centre: bool
    column: dict

    def child_columns(self, references: list) -> list[int]:
        """The columns of a child's ``references`` in its parent's node table."""
        return [self.column[r] if isinstance(r, tuple) else r for r in references]

    def tetra_children_inverted(self) -> list[list[bool]]:
        """A tetrahedron's split: per variant, whether each child's nodes, as the template
        lists them, turn against the positive parent's. A tetrahedron maps affinely onto
        the reference one, which keeps the sign of every child's volume: so a child's
        orientation is its template's, and no child's volume need be computed."""
        corners = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
        points = np.concatenate([corners, corners[np.array(self.edges)].mean(axis=1)])
        parent = signed_measures(points, CellBlock("tetra", np.arange(4)[None]))[0]
        return [[bool(signed_measures(points, CellBlock(
                    "tetra", np.array([self.child_columns(refs)])))[0] * parent < 0)
                 for _, refs in children] for children in self.templates]


def split_plan(kind: str) -> SplitPlan:
    """The :class:`SplitPlan` of cell (facet) type ``kind``."""
    templates = [_tetra_children(d) for d in range(3)] if kind == "tetra" else [CHILDREN[kind]]
    edges, quads, centre = _references([c for t in templates for c in t])
    corners = CELL_TYPES[kind].corners
    column: dict = {i: i for i in range(corners)}
    column |= {("e", *e): corners + k for k, e in enumerate(edges)}
    column |= {("q", *q): corners + len(edges) + k for k, q in enumerate(quads)}
    if centre:
        column[("c",)] = corners + len(edges) + len(quads)
    return SplitPlan(templates, edges, quads, centre, column)


@dataclass(frozen=True)
class Split:
    """One level of refinement: the fine mesh and where its cells and facets came from.

    Attributes
    ----------
    mesh : Mesh
        The fine mesh.
    cell_parent, cell_k, facet_parent, facet_k : numpy.ndarray
        Per fine cell (facet): its coarse cell (facet) and its place ``k`` in that one's
        split.
    cell_width, facet_width : int
        The most children of one cell (facet), so that ``child * width + k`` numbers
        descendants uniquely.
    cell_columns : list of numpy.ndarray
        Per block of the fine mesh's cells, ``(n, corners)``: the columns of each cell's
        nodes in its parent's node table (:attr:`SplitPlan.column`), in the cell's
        (positively oriented) node order.
    """

    mesh: Mesh
    cell_parent: np.ndarray
    cell_k: np.ndarray
    cell_width: int
    facet_parent: np.ndarray
    facet_k: np.ndarray
    facet_width: int
    cell_columns: list


def split_once(mesh: Mesh) -> Split:
    """``mesh`` refined once (see the module docstring), as a :class:`Split`."""
    points = mesh.points
    blocks = [(b.type, b.nodes, None) for b in mesh.cells]
    blocks += [(b.type, b.nodes, m) for b, m in zip(mesh.facets, mesh.facet_markers,
                                                      strict=True)]
    plans = [split_plan(kind) for kind, _, _ in blocks]
    # every edge and quadrilateral asked for, numbered once across blocks
    edge_rows = np.concatenate([nodes[:, p.edges].reshape(-1, 2) if p.edges
                                else np.zeros((0, 2), int)
                                for (_, nodes, _), p in zip(blocks, plans, strict=True)])
    n_points = len(points)
    edge_unique, edge_ids = _unique_rows(np.sort(edge_rows, axis=1), n_points)
    quad_rows = np.concatenate([nodes[:, p.quads].reshape(-1, 4) if p.quads
                                else np.zeros((0, 4), int)
                                for (_, nodes, _), p in zip(blocks, plans, strict=True)])
    quad_unique, quad_ids = _unique_rows(np.sort(quad_rows, axis=1), n_points)
    first_quad = n_points + len(edge_unique)
    first_centre = first_quad + len(quad_unique)
    new_points = [points, points[edge_unique].mean(axis=1), points[quad_unique].mean(axis=1)]
    edge_at = quad_at = 0
    centre_at = first_centre
    out: dict[tuple[str, bool], list] = {}
    # each block's first cell (facet) among the mesh's cells (facets)
    starts = np.concatenate([np.cumsum([0, *(len(b) for b in mesh.cells)])[:-1],
                             np.cumsum([0, *(len(b) for b in mesh.facets)])[:-1]])
    for (kind, nodes, markers), plan, start in zip(blocks, plans, starts, strict=True):
        n = len(nodes)
        table = [nodes]
        local_edges = edge_ids[edge_at:edge_at + n * len(plan.edges)].reshape(n, -1)
        edge_at += n * len(plan.edges)
        table.append(n_points + local_edges)
        local_quads = quad_ids[quad_at:quad_at + n * len(plan.quads)].reshape(n, -1)
        quad_at += n * len(plan.quads)
        table.append(first_quad + local_quads)
        if plan.centre:
            table.append(np.arange(centre_at, centre_at + n)[:, None])
            new_points.append(points[nodes].mean(axis=1))
            centre_at += n
        table = np.concatenate(table, axis=1)
        choice = _shortest_diagonal(np.concatenate(new_points), table, plan.column) \
            if kind == "tetra" else np.zeros(n, dtype=np.int64)
        for child_type, _ in plan.templates[0]:
            out.setdefault((child_type, markers is not None), [])
        # children of tetrahedra turn as their templates do; others' volumes tell
        known = (plan.tetra_children_inverted() if kind == "tetra" and markers is None
                 else None)
        for variant, children in enumerate(plan.templates):
            rows = np.flatnonzero(choice == variant)
            for k, (child_type, refs) in enumerate(children):
                cols = plan.child_columns(refs)
                out[(child_type, markers is not None)].append(
                    (table[rows][:, cols], None if markers is None else markers[rows],
                     start + rows, np.full(len(rows), k),
                     np.broadcast_to(np.array(cols, np.int8), (len(rows), len(cols))),
                     None if known is None else known[variant][k]))
    new_points = np.concatenate(new_points)
    cells, facets, markers = [], [], []
    lineage, cell_columns = {False: ([], []), True: ([], [])}, []
    for (child_type, is_facet), parts in out.items():
        nodes = np.concatenate([p[0] for p in parts])
        if is_facet:
            facets.append(CellBlock(child_type, nodes))
            markers.append(np.concatenate([p[1] for p in parts]))
        else:  # children come in either orientation: make them positive
            columns = np.concatenate([p[4] for p in parts])
            inverted = np.concatenate([
                np.full(len(p[0]), p[5]) if p[5] is not None
                else signed_measures(new_points, CellBlock(child_type, p[0])) < 0
                for p in parts])
            flip = list(CELL_TYPES[child_type].flip)
            nodes[inverted] = nodes[inverted][:, flip]
            columns[inverted] = columns[inverted][:, flip]
            cells.append(CellBlock(child_type, nodes))
            cell_columns.append(columns)
        lineage[is_facet][0].extend(p[2] for p in parts)
        lineage[is_facet][1].extend(p[3] for p in parts)
    # children of a valid mesh's cells, oriented above: Mesh.from_blocks's checks and
    # orientation (another pass of every cell's volume) would find nothing
    fine = Mesh(new_points, cells, facets, markers, dict(mesh.marker_names), mesh.source)
    widths = {False: 1, True: 1}  # the most children of one cell, of one facet
    for (_, _, markers), plan in zip(blocks, plans, strict=True):
        is_facet = markers is not None
        widths[is_facet] = max(widths[is_facet], len(plan.templates[0]))
    return Split(fine, _joined(lineage[False][0]), _joined(lineage[False][1]), widths[False],
                 _joined(lineage[True][0]), _joined(lineage[True][1]), widths[True],
                 cell_columns)


def _references(children: list) -> tuple[list, list, bool]:
    """The edges and quadrilaterals ``children`` refer to, and whether a centre."""
    edges, quads, centre = [], [], False
    for _, refs in children:
        for ref in refs:
            if isinstance(ref, tuple) and ref[0] == "e" and ref[1:] not in edges:
                edges.append(ref[1:])
            elif isinstance(ref, tuple) and ref[0] == "q" and ref[1:] not in quads:
                quads.append(ref[1:])
            elif isinstance(ref, tuple) and ref[0] == "c":
                centre = True
    return edges, quads, centre


def _unique_rows(rows: np.ndarray, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``rows`` (node numbers below ``n_points``, two or four per
    row) in increasing order, and each row's place among them: ``np.unique(rows,
    axis=0, return_inverse=True)``, with each pair of columns packed into one integer
    (several times faster on millions of rows)."""
    packed = [rows[:, k].astype(np.int64) * n_points + rows[:, k + 1]
              for k in range(0, rows.shape[1], 2)]
    order = np.lexsort(packed[::-1])
    first = np.ones(len(rows), dtype=bool)
    if len(rows):
        first[1:] = np.any([np.diff(key[order]) != 0 for key in packed], axis=0)
    ids = np.empty(len(rows), dtype=np.int64)
    ids[order] = np.cumsum(first) - 1
    return rows[order[first]], ids


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(pieces).astype(np.int64) if pieces else np.zeros(0, np.int64)


def _shortest_diagonal(points: np.ndarray, table: np.ndarray, column: dict) -> np.ndarray:
    """Per tetrahedron, which of the octahedron's three diagonals is shortest."""
    pairs = [(("e", 0, 1), ("e", 2, 3)), (("e", 0, 2), ("e", 1, 3)), (("e", 0, 3), ("e", 1, 2))]
    lengths = [np.linalg.norm(points[table[:, column[a]]] - points[table[:, column[b]]], axis=1)
               for a, b in pairs]
    return np.argmin(np.stack(lengths), axis=0)
