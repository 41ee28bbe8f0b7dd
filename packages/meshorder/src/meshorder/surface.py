"""New wall nodes of a refinement on the true surface of a body ``meshorder generate`` made.

A refinement splits each wall facet at its edges' midpoints, which lie on the coarse
facets: a curved wall keeps its coarse facets, and the flow sees them (on the generated
swept wing refined once the lift fell 42%: docs/validation.md). Where the mesh came from
``meshorder generate wing`` or ``oneram6`` (its wall marked :data:`WALL_MARKER`),
:func:`body_surface` moves each level's new nodes that halve an edge between two wall
nodes onto the body's surface before the next level splits them. A node is a wall node
where it lies on the surface (within :data:`WALL_TOLERANCE`): the decision needs no
facet, so the parts of a partitioned mesh, each holding only its own cells' facets,
decide alike. Both bodies are one section lofted straight from root to tip
(:func:`meshorder.generate.body_section`), so a node at span ``y`` moves within its
plane ``y`` to the closest point of the section there: the generator's own spline
through the section's points (gmsh's OpenCASCADE spline, sampled at
:data:`SECTION_SAMPLES` points and taken as a polyline between them). Nodes on the flat
tip (``y`` at the span) stay where they are, and so does a new node farther from the
surface than :data:`MAX_MOVE` of the edge it halves (as the midpoint of an edge that
joins the upper and the lower side through a thin body), and a face's or a cell's centre.

A moved node may turn a thin cell at the wall inside out (a prism layer thinner than the
facet's distance from the surface): every cell touching a moved node is checked, and a
placement that inverts any is refused with the count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .celltypes import CELL_TYPES
from .errors import MeshorderError
from .geometry import signed_measures
from .io.gmsh_model import gmsh_session
from .mesh import CellBlock, Mesh

if TYPE_CHECKING:
    from .generate import BodySection

#: The bodies whose surface new wall nodes can be placed on (``meshorder generate`` names).
SURFACES = ("wing", "oneram6")
#: The marker of the body's faces in the meshes ``meshorder generate`` writes for them.
WALL_MARKER = "wing"

#: Points taken along the section's spline, about 1e-5 chords apart: the polyline between
#: them is within about 1e-9 chords of the spline (at the leading edge's curvature).
SECTION_SAMPLES = 200_000
#: The box of points :func:`section_projection` projects: the section's, this fraction of
#: a chord wider on each side.
NEAR_BODY = 0.05
#: A node lies on the wall within this many root chords of the surface (gmsh's wall nodes
#: of the generated wing lie within 1e-9; its fluid nodes, a cell's height away: 2e-6
#: root chords in the ONERA M6's thinnest prism layer).
WALL_TOLERANCE = 1e-7

#: A new wall node moves to the surface only if that is at most this fraction of the
#: coarse edge it halves away. On a wall mesh as coarse as the body is thick an edge may
#: join the upper and the lower side, its midpoint inside the body a cell's size from
#: either (the generated wing at 27,612 cells: 124 of 2,440 nodes, 0.35 to 0.5 of their
#: edge away, the others' median 0.002), and near a coarse leading edge a longer move
#: inverts cells: 2 with the ONERA M6 of 135,993 cells refined once at 0.15 and 0.25 (its
#: 99.9th percentile 0.12), 5 refined twice at 0.1; none at 0.05, which leaves 4% and
#: 0.2% of its new wall nodes on their facets. A node left stays where it is.
MAX_MOVE = 0.05

#: Moves the new nodes, from the first new one, of a mesh just refined (see
#: :func:`body_surface`).
Placement = Callable[[Mesh, int], Mesh]


@contextmanager
def body_surface(geometry: str | None) -> Iterator[Placement | None]:
    """Within the block, a placement of new wall nodes on ``geometry``'s body (one of
    :data:`SURFACES`): ``place(mesh, first_new)`` returns ``mesh``, just refined, with its
    new nodes (``first_new`` on) that halve an edge between two wall nodes moved to the
    body's surface (:func:`placed_on`). None for ``geometry`` None (new nodes stay on the
    facets).

    Raises
    ------
    MeshorderError
        For an unknown ``geometry``; from ``place``, for a mesh without the marker, or
        when a moved node inverts a cell.
    """
    from .generate import body_section  # (gmsh's models: only where a surface is asked)

    if geometry is None:
        yield None
        return
    if geometry not in SURFACES:
        raise MeshorderError(f"no surface {geometry!r} to place new wall nodes on: "
                             f"{', '.join(SURFACES)}")
    body = body_section(geometry)
    closest, tolerance = section_projection(body), WALL_TOLERANCE * body.root_chord

    def place(mesh: Mesh, first_new: int) -> Mesh:
        return placed_on(mesh, first_new, closest, geometry, tolerance)

    yield place


def section_projection(body: BodySection) -> Callable[[np.ndarray], np.ndarray]:
    """Points ``(n, 3)`` moved within their span's plane to the closest point of
    ``body``'s section there: those on the tip's plane or beyond unmoved, and NaN for
    those outside the body's box (its section's, :data:`NEAR_BODY` wider, over the
    span).

    Examples
    --------
    >>> import numpy as np
    >>> from meshorder.generate import body_section
    >>> project = section_projection(body_section("oneram6"))
    >>> root = body_section("oneram6").root_chord
    >>> on = project(np.array([[0.3 * root, 0.0, 0.05]]))  # above the root's upper side
    >>> bool(abs(on[0, 2] - 0.0479 * root) < 2e-4)  # the ONERA D's thickness at x/c 0.3
    True
    """
    from scipy.spatial import cKDTree  # (a run that refines nothing imports no SciPy)

    curve = _sampled_spline(body.section)
    tree = cKDTree(curve)
    margin = NEAR_BODY * (curve.max(axis=0) - curve.min(axis=0)).max()
    low, high = curve.min(axis=0) - margin, curve.max(axis=0) + margin

    def project(points: np.ndarray) -> np.ndarray:
        y = points[:, 1]
        along = np.clip(y / body.span, 0.0, 1.0)
        chord = body.root_chord + (body.tip_chord - body.root_chord) * along
        shift = body.tip_shift * along
        unit = np.column_stack([(points[:, 0] - shift) / chord, body.up * points[:, 2] / chord])
        near = np.all((unit >= low) & (unit <= high), axis=1) & (y >= 0)
        out = np.full_like(points, np.nan)
        out[near] = points[near]
        span = near & (y < body.span * (1 - 1e-9))
        nearest = _on_polyline(curve, tree, unit[span])
        out[span, 0] = shift[span] + chord[span] * nearest[:, 0]
        out[span, 2] = body.up * chord[span] * nearest[:, 1]
        return out

    return project


def _sampled_spline(section: np.ndarray) -> np.ndarray:
    """:data:`SECTION_SAMPLES` points ``(m, 2)`` along the closed spline that gmsh's
    OpenCASCADE kernel puts through ``section``'s points (as the generator does), the
    first not repeated."""
    with gmsh_session() as gmsh:
        occ = gmsh.model.occ
        points = [occ.addPoint(x, t, 0.0) for x, t in section]
        spline = occ.addSpline([*points, points[0]])
        occ.synchronize()
        low, high = gmsh.model.getParametrizationBounds(1, spline)
        at = np.linspace(low[0], high[0], SECTION_SAMPLES, endpoint=False)
        return np.reshape(gmsh.model.getValue(1, spline, at), (-1, 3))[:, :2]


def _on_polyline(curve: np.ndarray, tree, points: np.ndarray) -> np.ndarray:
    """The closest point to each of ``points`` on the closed polyline ``curve``: on one
    of the two segments at its nearest vertex."""
    _, vertex = tree.query(points)
    best, distance = curve[vertex], np.linalg.norm(curve[vertex] - points, axis=1)
    for other in (vertex - 1, (vertex + 1) % len(curve)):
        a, b = curve[vertex], curve[other]
        edge = b - a
        s = np.clip(np.sum((points - a) * edge, axis=1) / np.sum(edge * edge, axis=1), 0, 1)
        foot = a + s[:, None] * edge
        d = np.linalg.norm(foot - points, axis=1)
        nearer = d < distance
        best[nearer], distance[nearer] = foot[nearer], d[nearer]
    return best


def placed_on(mesh: Mesh, first_new: int, closest: Callable[[np.ndarray], np.ndarray],
              surface: str, tolerance: float) -> Mesh:
    """``mesh``, just refined, with its new nodes (``first_new`` on) that split an edge
    between two wall nodes moved to ``closest(points)``, where that is at most
    :data:`MAX_MOVE` of the edge away (``surface`` names it in errors).

    A node of the coarse mesh is a wall node where it lies within ``tolerance`` of the
    surface (its closest point); the decision takes no facet, so that every part of a
    partitioned mesh, which holds the wall facets of its own cells only, decides alike.
    A new node's coarse edge is found from the fine cells: the two halves of that edge
    join it to the edge's ends, the only coarse nodes a midpoint is joined to.

    Raises
    ------
    MeshorderError
        For a mesh without the marker :data:`WALL_MARKER`, or when a moved node inverts a
        cell.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from meshorder.refine import split_once
    >>> from meshorder.testing import box_mesh
    >>> box = box_mesh(1, 1, 1)  # every side the marker "wing"
    >>> box = replace(box, marker_names={0: "wing"},
    ...               facet_markers=[np.zeros(len(b), np.int64) for b in box.facets])
    >>> def onto_dome(p):  # the top side bulging up, z = 1 + x (1 - x) y (1 - y) / 10
    ...     out = np.full_like(p, np.nan)  # NaN: off the body
    ...     top = np.abs(p[:, 2] - 1) < 1e-9
    ...     x, y = p[top, 0], p[top, 1]
    ...     out[top] = np.column_stack([x, y, 1 + x * (1 - x) * y * (1 - y) / 10])
    ...     return out
    >>> fine = placed_on(split_once(box).mesh, 8, onto_dome, "a dome", 1e-12)
    >>> float(fine.points[:, 2].max())  # the top's centre, its diagonal's midpoint
    1.00625

    The top's edges' midpoints lie on the dome already; no other side is on it.
    """
    if WALL_MARKER not in mesh.marker_names.values():
        markers = ", ".join(sorted(mesh.marker_names.values())) or "none"
        raise MeshorderError(f"{mesh.source}: no marker {WALL_MARKER!r} to place on the "
                             f"{surface} surface (markers: {markers})")
    coarse = mesh.points[:first_new]
    with np.errstate(invalid="ignore"):  # NaN: far from the body
        on_wall = np.linalg.norm(closest(coarse) - coarse, axis=1) <= tolerance
    ends = _coarse_edges(mesh, first_new, on_wall)
    new = np.flatnonzero((ends[:, 1] >= 0) & on_wall[np.maximum(ends[:, 0], 0)]
                         & on_wall[np.maximum(ends[:, 1], 0)]) + first_new
    if not len(new):
        return mesh
    length = np.linalg.norm(np.diff(mesh.points[ends[new - first_new]], axis=1)[:, 0], axis=1)
    target = closest(mesh.points[new])
    near = np.linalg.norm(target - mesh.points[new], axis=1) <= MAX_MOVE * length
    moved = new[near]
    points = mesh.points.copy()
    points[moved] = target[near]
    touched = np.zeros(len(points), bool)
    touched[moved] = True
    inverted = sum(int(np.count_nonzero(signed_measures(points, _touching(block, touched))
                                        <= 0)) for block in mesh.cells)
    if inverted:
        raise MeshorderError(
            f"{mesh.source}: placing {len(moved)} new wall nodes on the {surface} surface "
            f"turns {inverted} cells inside out (the wall's cells are thinner than its "
            "facets are far from the surface, as in a prism layer); refine without the "
            "surface, or fewer levels")
    return replace(mesh, points=points)


def _coarse_edges(mesh: Mesh, first_new: int, on_wall: np.ndarray) -> np.ndarray:
    """Per new node (``first_new`` on) of a cell with a coarse node ``on_wall``, the two
    coarse nodes its cells' edges join it to (the ends of the coarse edge it halves),
    ``(n_new, 2)``, lower first; -1 elsewhere and where it has fewer than two (a face's
    or a cell's centre)."""
    n_new = len(mesh.points) - first_new
    pairs = [np.zeros((0, 2), np.int64)]
    for block in mesh.cells:
        nodes = block.nodes[np.any(on_wall[np.minimum(block.nodes, first_new - 1)]
                                   & (block.nodes < first_new), axis=1)]
        for a, b in CELL_TYPES[block.type].edges:
            pairs.append(nodes[:, [a, b]])
    edges = np.concatenate(pairs)
    edges = edges[(edges[:, 0] < first_new) != (edges[:, 1] < first_new)]
    new, old = edges.max(axis=1) - first_new, edges.min(axis=1)
    low = np.full(n_new, np.iinfo(np.int64).max)
    high = np.full(n_new, -1)
    np.minimum.at(low, new, old)
    np.maximum.at(high, new, old)
    has_two = high > low
    return np.where(has_two[:, None], np.column_stack([low, high]), -1)


def _touching(block: CellBlock, on_wall: np.ndarray) -> CellBlock:
    """The cells of ``block`` with a node where ``on_wall``."""
    rows = np.any(on_wall[block.nodes], axis=1)
    return CellBlock(block.type, block.nodes[rows])
