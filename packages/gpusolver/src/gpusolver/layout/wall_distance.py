"""Exact distance from points (cell centres) to the nearest wall face.

Turbulence models read each cell's distance to the nearest wall: to a wall *face* (a
segment in 2D, a triangle or a quadrilateral cut into two triangles in 3D), not to the
nearest wall node, which overestimates it by up to half a face near the wall.

The search is exact and runs on the host, vectorised over the points:

1. each point takes the exact distance ``d`` to the faces of its ``k`` nearest face
   centroids (SciPy's k-d tree, all cores). A face farther than the ``k``-th centroid (at
   ``c_k``) is at least ``c_k - r`` away, ``r`` being the largest distance from a face's
   centroid to its corners: where ``d <= c_k - r`` no other face can be nearer (the cells
   near a wall, whose distance matters most, end here);
2. the others descend a bounding-box tree of the faces (faces in Morton order of their
   centroids, eight to a leaf, each node's box enclosing its children's), level by level
   for all of them at once, keeping a node only where the distance to its box is below
   the point's best distance so far, and take the exact distance to the faces of the
   leaves they reach. (The centroids alone cannot settle a point far above a wall: every
   face near its foot is about as far as the nearest; their boxes can.)

Given a backend, the search runs in its kernels instead (``kernels/wall_distance.cu``:
on the GPU with CuPy, compiled as C++ on NumPy), over a two-level hierarchy of boxes: the
faces in Morton order of their centroids, :data:`GROUP` to a group and
:data:`BLOCK_GROUPS` groups to a block, each group and block with its bounding box. Each
point searches the block whose box is nearest first (a close upper bound), then every
block, in it every group, and in that every face whose box (for a face, its bounding
sphere) lies nearer than the point's best distance so far. The same distances, to
round-off; on the GPU about a second at 10M cells where the host search takes most of an
hour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.spatial import cKDTree

#: Nearest face centroids each point tries first.
CANDIDATES = 8
#: Points searched at once (bounds the candidates' memory: 8 faces of 4 corners each).
CHUNK = 1 << 17
#: Faces per leaf of the box tree.
LEAF = 8
#: Threads per block of the kernel.
BLOCK = 256
#: The kernel's faces per group (in Morton order), and groups per block, each with its box.
GROUP, BLOCK_GROUPS = 32, 32


def segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance from each of ``points`` ``(n, dim)`` to the segment from ``a`` to ``b``
    (``(n, dim)`` each).

    Examples
    --------
    >>> segment_distance(np.array([[0.5, 2.0], [3.0, 4.0]]), np.zeros((2, 2)),
    ...                  np.array([[1.0, 0.0], [0.0, 0.0]])).tolist()
    [2.0, 5.0]
    """
    edge = b - a
    length2 = (edge * edge).sum(axis=1)
    t = np.where(length2 > 0, ((points - a) * edge).sum(axis=1) / np.where(length2 > 0,
                                                                            length2, 1.0), 0.0)
    closest = a + np.clip(t, 0.0, 1.0)[:, None] * edge
    return np.linalg.norm(points - closest, axis=1)


def triangle_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray,
                      c: np.ndarray) -> np.ndarray:
    """Distance from each of ``points`` ``(n, 3)`` to the triangle ``(a, b, c)`` (``(n, 3)``
    each): to its plane where the projection falls inside, else to its nearest edge.

    Examples
    --------
    >>> o, x, y = np.zeros((1, 3)), np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]])
    >>> float(triangle_distance(np.array([[0.2, 0.2, 3.0]]), o, x, y)[0])
    3.0
    >>> float(triangle_distance(np.array([[2.0, 0.0, 0.0]]), o, x, y)[0])
    1.0
    """
    ab, ac, ap = b - a, c - a, points - a
    normal = np.cross(ab, ac)
    area2 = (normal * normal).sum(axis=1)
    safe = np.where(area2 > 0, area2, 1.0)
    # barycentric coordinates of the projection
    v = (np.cross(ap, ac) * normal).sum(axis=1) / safe
    w = (np.cross(ab, ap) * normal).sum(axis=1) / safe
    inside = (area2 > 0) & (v >= 0) & (w >= 0) & (v + w <= 1)
    plane = np.abs((ap * normal).sum(axis=1)) / np.sqrt(safe)
    edges = np.minimum(np.minimum(segment_distance(points, a, b), segment_distance(points, b, c)),
                       segment_distance(points, c, a))
    return np.where(inside, plane, edges)


def face_distance(points: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Distance from each of ``points`` ``(n, dim)`` to one face each: ``corners``
    ``(n, k, dim)``, a segment (k = 2), a triangle (3), or a quadrilateral (4, cut into
    two triangles; a quadrilateral's last corner NaN is a triangle)."""
    if corners.shape[1] == 2:
        return segment_distance(points, corners[:, 0], corners[:, 1])
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    distance = triangle_distance(points, a, b, c)
    if corners.shape[1] == 4:
        quad = ~np.isnan(corners[:, 3, 0])
        if quad.any():
            second = triangle_distance(points[quad], a[quad], c[quad], corners[quad, 3])
            distance[quad] = np.minimum(distance[quad], second)
    return distance


def wall_distance(points: np.ndarray, faces: np.ndarray, backend=None) -> np.ndarray:
    """Exact distance from every point to the nearest of ``faces`` (see the module
    docstring).

    Parameters
    ----------
    points : numpy.ndarray
        ``(n, dim)`` cell centres.
    faces : numpy.ndarray
        ``(m, k, dim)`` corners of the wall faces (see :func:`face_distance`).
    backend : Backend, optional
        Search in its kernels (default: the host search).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` distances; infinite where there is no wall face.

    Examples
    --------
    The unit square's bottom and left sides as walls:

    >>> walls = np.array([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]])
    >>> wall_distance(np.array([[0.5, 0.2], [0.1, 0.9], [-1.0, -1.0]]), walls).round(6).tolist()
    [0.2, 0.1, 1.414214]
    """
    points = np.asarray(points, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.float64)
    if not len(faces):
        return np.full(len(points), np.inf)
    centroid = np.nanmean(faces, axis=1)
    radius = np.nanmax(np.linalg.norm(faces - centroid[:, None], axis=2), axis=1)
    if backend is not None:
        return _in_kernels(points, faces, centroid, radius, backend)
    reach = float(radius.max())
    from scipy.spatial import cKDTree
    tree, boxes = cKDTree(centroid), FaceBoxes(faces, centroid)
    return np.concatenate([_nearest(points[start:start + CHUNK], faces, tree, boxes, reach)
                           for start in range(0, len(points), CHUNK)] or [np.zeros(0)])


def _in_kernels(points: np.ndarray, faces: np.ndarray, centroid: np.ndarray,
                radius: np.ndarray, backend) -> np.ndarray:
    """:func:`wall_distance` in ``backend``'s kernels (see the module docstring)."""
    order = np.argsort(_morton(centroid), kind="stable")
    faces, centroid, radius = faces[order], centroid[order], radius[order]
    group_box = _boxes(np.nanmin(faces, axis=1), np.nanmax(faces, axis=1), GROUP)
    block_box = _boxes(group_box[:, 0], group_box[:, 1], BLOCK_GROUPS)
    n, (m, corners, dim) = len(points), faces.shape
    name = f"wall_distance_kernel<{dim}, {corners}, {GROUP}, {BLOCK_GROUPS}>"
    kernel = backend.kernels(__package__, "kernels/wall_distance.cu", (name,))[name]
    distance = backend.xp.empty(n)
    kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,),
           (np.int32(n), backend.asarray(points.T), np.int32(m), backend.asarray(faces),
            backend.asarray(centroid), backend.asarray(radius), np.int32(len(group_box)),
            backend.asarray(group_box), np.int32(len(block_box)), backend.asarray(block_box),
            distance))
    return backend.to_host(distance)


def _boxes(low: np.ndarray, high: np.ndarray, size: int) -> np.ndarray:
    """The bounding boxes ``(k, 2, dim)`` (low, high corners) of consecutive runs of
    ``size`` boxes given by their corners ``low``, ``high`` ``(m, dim)``."""
    starts = np.arange(0, len(low), size)
    return np.stack([np.minimum.reduceat(low, starts), np.maximum.reduceat(high, starts)],
                    axis=1)


def _nearest(points: np.ndarray, faces: np.ndarray, tree: cKDTree, boxes: FaceBoxes,
             reach: float) -> np.ndarray:
    """:func:`wall_distance` of some points, given the trees of the faces' centroids and
    boxes and the largest distance from a centroid to its face's corners."""
    k = min(CANDIDATES, len(faces))
    centre_distance, nearest = tree.query(points, k=k, workers=-1)
    if k == 1:
        centre_distance, nearest = centre_distance[:, None], nearest[:, None]
    rows = np.repeat(np.arange(len(points)), k)
    candidate = face_distance(points[rows], faces[nearest.ravel()]).reshape(-1, k)
    distance = candidate.min(axis=1)
    if k == len(faces):
        return distance
    open_ = np.flatnonzero(distance > centre_distance[:, -1] - reach)
    if len(open_):
        distance[open_] = boxes.nearest(points[open_], distance[open_])
    return distance


class FaceBoxes:
    """A bounding-box tree of faces (see the module docstring), a complete binary tree
    over leaves of :data:`LEAF` faces in Morton order of their centroids.

    Parameters
    ----------
    faces : numpy.ndarray
        ``(m, k, dim)`` corners (see :func:`face_distance`).
    centroid : numpy.ndarray
        ``(m, dim)``.
    """

    def __init__(self, faces: np.ndarray, centroid: np.ndarray):
        order = np.argsort(_morton(centroid), kind="stable")
        self.faces = faces[order]
        m, dim = len(faces), faces.shape[2]
        self.n_leaves = 1 << max(0, int(np.ceil(np.log2(max(1, -(-m // LEAF))))))
        self.depth = int(np.log2(self.n_leaves))
        slots = np.full((self.n_leaves * LEAF, dim), np.nan)
        lo, hi = slots.copy(), slots.copy()
        #: Each face's box.
        self.face_low, self.face_high = np.nanmin(self.faces, axis=1), np.nanmax(self.faces,
                                                                                  axis=1)
        lo[:m], hi[:m] = self.face_low, self.face_high
        #: Per level (root first), each node's box: ``(n_nodes, dim)`` corners.
        self.low = [_reduce(lo.reshape(self.n_leaves, LEAF, dim), np.fmin, np.inf)]
        self.high = [_reduce(hi.reshape(self.n_leaves, LEAF, dim), np.fmax, -np.inf)]
        while len(self.low[0]) > 1:
            self.low.insert(0, np.fmin(self.low[0][0::2], self.low[0][1::2]))
            self.high.insert(0, np.fmax(self.high[0][0::2], self.high[0][1::2]))
        self.n_faces = m

    def nearest(self, points: np.ndarray, best: np.ndarray) -> np.ndarray:
        """The exact distance from each point to the nearest face, given an upper bound
        ``best`` for each (a distance to one face)."""
        best = best.copy()
        point = np.arange(len(points))
        node = np.zeros(len(points), dtype=np.int64)
        for level in range(1, self.depth + 1):
            point, node = np.repeat(point, 2), (2 * node[:, None] + [0, 1]).ravel()
            keep = self._box_distance(points[point], level, node) < best[point]
            point, node = point[keep], node[keep]
        point = np.repeat(point, LEAF)
        face = (node[:, None] * LEAF + np.arange(LEAF)).ravel()
        real = face < self.n_faces
        point, face = point[real], face[real]
        # each face's own box, then the exact distance where that box is near enough
        gap = np.maximum(np.maximum(self.face_low[face] - points[point],
                                    points[point] - self.face_high[face]), 0.0)
        near = np.sqrt((gap * gap).sum(axis=1)) < best[point]
        point, face = point[near], face[near]
        np.minimum.at(best, point, face_distance(points[point], self.faces[face]))
        return best

    def _box_distance(self, points: np.ndarray, level: int, node: np.ndarray) -> np.ndarray:
        low, high = self.low[level][node], self.high[level][node]
        gap = np.maximum(np.maximum(low - points, points - high), 0.0)
        return np.sqrt((gap * gap).sum(axis=1))  # empty boxes (inf corners): inf


def _reduce(corners: np.ndarray, op, empty: float) -> np.ndarray:
    """One box per leaf from its faces' boxes (NaN slots ignored; none: ``empty``)."""
    out = op.reduce(corners, axis=1)
    return np.where(np.isnan(out), empty, out)


def _morton(centroid: np.ndarray) -> np.ndarray:
    """Morton (Z-order) keys of points, 21 bits per axis."""
    low, span = centroid.min(axis=0), np.ptp(centroid, axis=0)
    scaled = ((centroid - low) / np.where(span > 0, span, 1.0) * (2**21 - 1)).astype(np.uint64)
    key = np.zeros(len(centroid), dtype=np.uint64)
    for bit in range(21):
        for axis in range(centroid.shape[1]):
            key |= ((scaled[:, axis] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(
                bit * centroid.shape[1] + axis)
    return key
