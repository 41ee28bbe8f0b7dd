"""Prism (boundary) layers extruded from a triangulated wall along its node normals.

The wall is a triangle surface whose triangles all face the fluid (right-hand
normal pointing away from the body). Each node moves along its area-weighted
normal through a sequence of heights; every triangle then stacks one six-node
prism (gmsh/VTK wedge order: bottom triangle, then the top triangle above it) per
layer. Nodes on a symmetry plane keep their normal inside that plane, so the layer
meets the plane without leaving it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import TopologyError
from .geometry import signed_measures
from .mesh import CellBlock


class PrismLayer(NamedTuple):
    """Nodes and prisms of an extruded layer.

    Attributes
    ----------
    points : numpy.ndarray
        ``(n_layers + 1, n_nodes, 3)``: layer 0 is the wall, the last the top surface.
    prisms : numpy.ndarray
        ``(n_layers * n_triangles, 6)`` indices into ``points.reshape(-1, 3)``, layer by
        layer.
    """

    points: np.ndarray
    prisms: np.ndarray


def area_normals(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Each triangle's right-hand normal scaled by its area.

    Examples
    --------
    >>> area_normals(np.eye(3), np.array([[0, 1, 2]])).tolist()
    [[0.5, 0.5, 0.5]]
    """
    corners = points[triangles]
    return 0.5 * np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])


def directed_edges(triangles: np.ndarray) -> np.ndarray:
    """``(3 n_triangles, 2)`` edges of each triangle in its own orientation, edge by edge.

    Examples
    --------
    >>> directed_edges(np.array([[4, 5, 6]])).tolist()
    [[4, 5], [5, 6], [6, 4]]
    """
    return np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])


def node_normals(points: np.ndarray, triangles: np.ndarray, *, visible: float = 0.3,
                 rounds: int = 30) -> np.ndarray:
    """Unit normals at the nodes, each seen from all of its triangles where possible.

    The start is the area-weighted mean of the triangles' normals. At a sharp edge
    (an airfoil's trailing edge, a wing tip) that mean can lean so far to one side
    that it points into the body as seen from the other side, which inverts the
    prisms there. So, for ``rounds`` rounds, every node whose least aligned
    triangle normal ``w`` has ``n . w < visible`` moves a shrinking step towards
    ``w``; each node keeps the normal with the best least alignment it met. Nodes
    used by no triangle get a zero normal.

    Examples
    --------
    >>> square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    >>> node_normals(square, np.array([[0, 1, 2], [0, 2, 3]]))[0].tolist()
    [0.0, 0.0, 1.0]
    """
    weighted = area_normals(points, triangles)
    summed = np.zeros_like(points, dtype=float)
    for k in range(3):
        np.add.at(summed, triangles[:, k], weighted)
    used = np.zeros(len(points), dtype=bool)
    used[triangles.ravel()] = True
    length = np.linalg.norm(summed, axis=1, keepdims=True)
    if np.any(length[used] == 0):
        raise ValueError("a wall node has no well-defined normal (zero-area neighbourhood)")
    normals = np.divide(summed, length, out=np.zeros_like(summed), where=length > 0)
    corner_node = triangles.ravel()
    corner_normal = np.repeat(weighted / np.linalg.norm(weighted, axis=1, keepdims=True), 3,
                              axis=0)
    best, best_alignment = normals.copy(), np.full(len(points), -np.inf)
    for step in 0.5 * 0.85 ** np.arange(rounds):
        alignment = np.einsum("ij,ij->i", normals[corner_node], corner_normal)
        order = np.lexsort((alignment, corner_node))
        worst = order[np.concatenate([[0], np.flatnonzero(np.diff(corner_node[order])) + 1])]
        nodes = corner_node[worst]
        better = alignment[worst] > best_alignment[nodes]
        best[nodes[better]] = normals[nodes[better]]
        best_alignment[nodes[better]] = alignment[worst][better]
        hidden = alignment[worst] < visible
        if not hidden.any():
            break
        moved = normals[nodes[hidden]] + step * corner_normal[worst[hidden]]
        normals[nodes[hidden]] = moved / np.linalg.norm(moved, axis=1, keepdims=True)
    return best


def geometric_heights(first: float, growth: float, n_layers: int) -> np.ndarray:
    """Cumulative heights of ``n_layers`` layers growing geometrically from ``first``.

    Examples
    --------
    >>> geometric_heights(0.1, 2.0, 3).tolist()
    [0.1, 0.30000000000000004, 0.7000000000000001]
    """
    return np.cumsum(first * growth ** np.arange(n_layers))


def extrude(points: np.ndarray, triangles: np.ndarray, heights: np.ndarray,
            symmetry_axis: int | None = None, symmetry_value: float = 0.0) -> PrismLayer:
    """Extrude the wall ``triangles`` (facing the fluid) through cumulative ``heights``.

    Parameters
    ----------
    points : numpy.ndarray
        ``(n_nodes, 3)`` wall nodes (nodes used by no triangle are carried unchanged).
    triangles : numpy.ndarray
        ``(n_triangles, 3)``, each ordered so that its right-hand normal points into
        the fluid.
    heights : numpy.ndarray
        Increasing distances of the layer tops from the wall.
    symmetry_axis, symmetry_value : optional
        Nodes with ``points[:, axis] == value`` lie on a symmetry plane: their normal
        loses its component along ``axis``, so the whole layer stays in the plane.
        The plane must bound the fluid from below along ``axis``. Nodes closer to it
        than twice the layer height have the component of their normal towards the
        plane scaled down with the distance (the layer thins there), so no layer
        comes closer to the plane than half its node's distance.

    Each node's heights are capped at the smallest altitude of its triangles, so
    that sliver triangles (a wing tip closing to a trailing edge) get a layer thin
    enough not to fold over.

    Returns
    -------
    PrismLayer
    """
    heights = np.asarray(heights, dtype=float)
    if len(heights) == 0 or np.any(np.diff(np.concatenate([[0.0], heights])) <= 0):
        raise ValueError(f"layer heights must be positive and increasing, got {heights}")
    normals = node_normals(points, triangles)
    if symmetry_axis is not None:
        distance = points[:, symmetry_axis] - symmetry_value
        on_plane = distance == 0
        towards = normals[:, symmetry_axis] < 0
        scale = np.where(towards, np.clip(distance / (2 * heights[-1]), 0.0, 1.0), 1.0)
        scale[on_plane] = 0.0
        normals[:, symmetry_axis] *= scale  # not renormalised: the layer thins instead
        normals[on_plane] /= np.linalg.norm(normals[on_plane], axis=1, keepdims=True)
    corners = points[triangles]
    longest = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2).max(axis=1)
    doubled_area = 2 * np.linalg.norm(area_normals(points, triangles), axis=1)
    altitude = np.full(len(points), np.inf)
    np.minimum.at(altitude, triangles, (doubled_area / longest)[:, None])
    height_scale = np.minimum(1.0, altitude / heights[-1])
    offsets = np.concatenate([[0.0], heights])[:, None] * height_scale[None, :]
    layered = points[None, :, :] + offsets[:, :, None] * normals[None, :, :]
    if symmetry_axis is not None:
        layered[:, on_plane, symmetry_axis] = symmetry_value  # exactly, not to round-off
    n_nodes = len(points)
    prisms = np.concatenate([np.hstack([triangles + k * n_nodes, triangles + (k + 1) * n_nodes])
                             for k in range(len(heights))])
    return PrismLayer(layered, prisms)


def prism_volumes(points: np.ndarray, prisms: np.ndarray) -> np.ndarray:
    """Signed volumes of six-node prisms in this module's (gmsh) node order.

    The same measure that checks every cell when a mesh is read
    (:func:`meshorder.geometry.signed_measures`, whose wedge convention is VTK's
    mirror image, hence the sign); a negative value marks an inverted prism.

    Examples
    --------
    >>> p = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1]], float)
    >>> float(prism_volumes(p, np.array([[0, 1, 2, 3, 4, 5]]))[0])
    0.5
    """
    return -signed_measures(points, CellBlock("wedge", np.asarray(prisms)))


def check_prisms(points: np.ndarray, prisms: np.ndarray) -> None:
    """Raise :class:`~meshorder.errors.TopologyError` if any prism is inverted or flat.

    The message counts them and names the first, with its nodes.
    """
    bad = np.flatnonzero(prism_volumes(points, prisms) <= 0)
    if len(bad):
        raise TopologyError(f"{len(bad)} of {len(prisms)} prisms are inverted or flat, the first "
                            f"prism {bad[0]} (nodes {prisms[bad[0]].tolist()}); lower the first "
                            "layer height or the growth")


def boundary_loop(triangles: np.ndarray, nodes_on_edge: np.ndarray) -> np.ndarray:
    """The closed loop of boundary edges of ``triangles`` whose two nodes are flagged.

    Boundary edges are those used by one triangle; only those with both nodes in
    ``nodes_on_edge`` (a boolean mask over nodes) are chained. The loop follows the
    triangles' orientation and is returned as node indices, the first not repeated.
    """
    directed = directed_edges(triangles)
    key = np.sort(directed, axis=1)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    single = counts[inverse.ravel()] == 1
    edges = directed[single & nodes_on_edge[directed].all(axis=1)]
    if len(edges) == 0:
        raise ValueError("no boundary edge has both nodes flagged")
    following = dict(zip(edges[:, 0].tolist(), edges[:, 1].tolist(), strict=True))
    if len(following) != len(edges):
        raise ValueError("the flagged boundary edges do not form a simple loop")
    loop = [int(edges[0, 0])]
    for _ in range(len(edges) - 1):
        loop.append(following[loop[-1]])
    if following[loop[-1]] != loop[0]:
        raise ValueError("the flagged boundary edges do not form one closed loop")
    return np.array(loop)
