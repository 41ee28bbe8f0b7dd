"""Finite-volume geometry in plan order: cells, faces, boundary ranges.

Computed with the backend's array module (on the GPU a 1.7M-cell mesh takes a tenth of
a second instead of seconds), kept as NumPy arrays (the set-up's tables are built on the
host) and copied to the backend with :meth:`FVGeometry.to`. Faces are interior first,
then boundary faces grouped by marker (the plan's order); the ``colour`` strategy
permutes the interior faces so that each colour is contiguous.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields, replace

import numpy as np

from gpusolver.errors import ConfigError
from meshorder import Mesh, PlanError, Topology
from meshorder.colouring import colour_items
from meshorder.geometry import corner_mean, corner_sum, signed_measures
from meshorder.permutation import group_of
from meshorder.plan import Plan


@dataclass(frozen=True)
class FVGeometry:
    """Cell and face arrays of one mesh in one plan's order.

    Attributes
    ----------
    dim : int
    volume : array
        ``(n_cells,)`` cell volumes (areas in 2D).
    centroid : array
        ``(dim, n_cells)``.
    left, right : array
        ``(n_faces,)`` int64 cells of each face; ``right`` is -1 on the boundary.
    normal : array
        ``(dim, n_faces)`` unit normals pointing out of the left cell.
    area : array
        ``(n_faces,)``.
    face_centre : array
        ``(dim, n_faces)``.
    n_interior : int
        Faces ``[0, n_interior)`` are interior.
    markers : dict of str to (int, int)
        Marker name -> ``(first, end)`` range of its boundary faces.
    cell_order : numpy.ndarray
        Host array, new -> old cell numbers (for output in the file's order).
    interior_colours : numpy.ndarray
        Offsets of the interior face colours (``[0, n_interior]`` when uncoloured).
    boundary_nodes : numpy.ndarray
        Host array ``(n_faces - n_interior, k)``: mesh nodes of each boundary face
        (``-1`` pads triangles among quadrilaterals), for walking a wall's surface.
    """

    dim: int
    volume: np.ndarray
    centroid: np.ndarray
    left: np.ndarray
    right: np.ndarray
    normal: np.ndarray
    area: np.ndarray
    face_centre: np.ndarray
    n_interior: int
    markers: dict[str, tuple[int, int]]
    cell_order: np.ndarray
    interior_colours: np.ndarray
    boundary_nodes: np.ndarray

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return len(self.volume)

    @property
    def n_faces(self) -> int:
        """Number of faces."""
        return len(self.area)

    def to(self, backend, dtype) -> FVGeometry:
        """Copy the arrays to ``backend``: floats as ``dtype``, indices as int64."""
        changes = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if (f.name in ("cell_order", "interior_colours", "boundary_nodes")
                    or not isinstance(value, np.ndarray)):
                continue
            kind = dtype if value.dtype.kind == "f" else np.int64
            changes[f.name] = backend.asarray(value, dtype=kind)
        return replace(self, **changes)

    def on_host(self) -> FVGeometry:
        """The geometry with NumPy arrays (copies of a GPU's; itself when it has them)."""
        changes = {f.name: getattr(self, f.name).get() for f in fields(self)
                   if hasattr(getattr(self, f.name), "__cuda_array_interface__")}
        return replace(self, **changes) if changes else self

    def permute_interior(self, order: np.ndarray, colour_offsets: np.ndarray) -> FVGeometry:
        """Reorder interior faces by ``order`` (new -> old), recording colour offsets."""
        full = np.concatenate([order, np.arange(self.n_interior, self.n_faces)])
        return replace(
            self, left=self.left[full], right=self.right[full], normal=self.normal[:, full],
            area=self.area[full], face_centre=self.face_centre[:, full],
            interior_colours=np.asarray(colour_offsets, dtype=np.int64))


def face_geometry(points, face_nodes, dim: int, xp=np) -> tuple:
    """Unit normals (pointing out of the left cell) and areas of faces.

    In 2D a face is an edge and its area is its length (per unit depth).

    Parameters
    ----------
    points : array
        ``(n_points, 3)`` coordinates, of ``xp``.
    face_nodes : array
        ``(n_faces, k)`` nodes of each face (-1 pads triangles among quadrilaterals).
    dim : int
    xp : module
        ``numpy`` or ``cupy``: where the arithmetic runs.

    Returns
    -------
    normal : array
        ``(3, n_faces)`` unit normals.
    area : array
        ``(n_faces,)`` face areas.
    """
    nodes, p = face_nodes, points
    if dim == 2:
        a, b = p[nodes[:, 0]], p[nodes[:, 1]]
        vector = xp.stack([b[:, 1] - a[:, 1], a[:, 0] - b[:, 0], xp.zeros(len(a))], axis=1)
    else:
        # half the cross product of the diagonals (quadrilateral) or of two edges
        quad = nodes[:, 3] >= 0
        a, b, c = p[nodes[:, 0]], p[nodes[:, 1]], p[nodes[:, 2]]
        first, second = b - a, c - a
        first[quad], second[quad] = second[quad], p[nodes[quad, 3]] - b[quad]
        vector = 0.5 * xp.cross(first, second)
    x, y, z = vector.T
    area = xp.sqrt(x * x + y * y + z * z)  # elementwise: the same bits on CPU and GPU
    return (vector / area[:, None]).T.copy(), area


def build_geometry(mesh: Mesh, plan: Plan, backend=None) -> FVGeometry:
    """Lay out the geometry of ``mesh`` in ``plan``'s cell and face order, computed with
    ``backend``'s array module (default NumPy).

    Raises
    ------
    meshorder.PlanError
        If the plan was made for another mesh, or holds no face nodes (a plan file of
        format 2 or older: :func:`gpusolver.load_plan_for` completes those).
    """
    plan.check_mesh(mesh.digest(), mesh.source)
    if not plan.has_face_nodes():
        raise PlanError("the plan holds no face nodes (made by an older meshorder); load "
                        "it with gpusolver.load_plan_for or make it again")
    return _laid_out(mesh, plan.cell_order, plan.face_nodes, plan.face_cells,
                     plan.boundary_ranges(), backend)


def native_face_order(topology: Topology) -> np.ndarray:
    """Faces of :func:`native_geometry` (new -> native): interior faces in the topology's
    order, then boundary faces grouped by marker."""
    boundary = np.flatnonzero(~topology.interior)
    boundary = boundary[np.argsort(topology.face_marker[boundary], kind="stable")]
    return np.concatenate([np.flatnonzero(topology.interior), boundary])


def native_geometry(mesh: Mesh, topology: Topology,
                    face_order: np.ndarray | None = None, backend=None) -> FVGeometry:
    """The geometry of ``mesh`` in its own cell order, faces in ``face_order`` (new ->
    native: interior faces first, then boundary faces grouped by marker; default
    :func:`native_face_order`), computed with ``backend``'s array module (default
    NumPy)."""
    face_order = native_face_order(topology) if face_order is None else face_order
    n_interior = int(np.count_nonzero(topology.interior))
    boundary = face_order[n_interior:]
    ids, firsts, counts = np.unique(topology.face_marker[boundary], return_index=True,
                                    return_counts=True)
    markers = {topology.marker_names[int(m)]: (n_interior + int(a), n_interior + int(a + c))
               for m, a, c in zip(ids, firsts, counts, strict=True)}
    return _laid_out(mesh, np.arange(mesh.n_cells), topology.face_nodes[face_order],
                     topology.face_cells[face_order], markers, backend)


def _laid_out(mesh: Mesh, cells: np.ndarray, face_nodes: np.ndarray, face_cells: np.ndarray,
              markers: dict[str, tuple[int, int]], backend=None) -> FVGeometry:
    """The geometry with cells in ``cells`` order (new -> old), faces with ``face_nodes``
    (interior first) and their ``face_cells`` in the new numbering, the boundary faces'
    ``markers`` ranges; computed with ``backend``'s array module (default NumPy)."""
    xp = np if backend is None else backend.xp
    host = np.asarray if backend is None else backend.to_host
    dim = mesh.dim
    points = xp.asarray(mesh.points)
    nodes = xp.asarray(face_nodes)
    normal, area = face_geometry(points, nodes, dim, xp)
    # corner by corner (elementwise: the same bits with NumPy and CuPy); -1 pads add 0
    corners = points[xp.maximum(nodes, 0)] * (nodes >= 0)[:, :, None]
    face_centre = corner_sum(corners) / (nodes >= 0).sum(axis=1)[:, None]
    blocks = [dataclasses.replace(block, nodes=xp.asarray(block.nodes)) for block in mesh.cells]
    volume = xp.concatenate([signed_measures(points, block, xp) for block in blocks])
    centroid = xp.concatenate([corner_mean(points[block.nodes]) for block in blocks])
    order = xp.asarray(cells)
    n_interior = int(np.count_nonzero(face_cells[:, 1] >= 0))
    return FVGeometry(
        dim=dim,
        volume=host(volume[order]),
        centroid=host(xp.ascontiguousarray(centroid[order, :dim].T)),
        left=face_cells[:, 0].astype(np.int64),
        right=face_cells[:, 1].astype(np.int64),
        normal=host(xp.ascontiguousarray(normal[:dim])),
        area=host(area),
        face_centre=host(xp.ascontiguousarray(face_centre[:, :dim].T)),
        n_interior=n_interior,
        markers=markers,
        cell_order=np.asarray(cells),
        interior_colours=np.array([0, n_interior], dtype=np.int64),
        boundary_nodes=np.asarray(face_nodes[n_interior:]),
    )


def neighbour_offsets(geometry: FVGeometry) -> np.ndarray:
    """``(dim, n_faces)``: right centroid (face centre on the boundary) minus left centroid."""
    g = geometry
    other = g.face_centre.copy()
    ni = g.n_interior
    other[:, :ni] = g.centroid[:, g.right[:ni]]
    return other - g.centroid[:, g.left]


def colour_interior(geometry: FVGeometry, plan: Plan) -> FVGeometry:
    """Permute interior faces into face colour classes (boundary faces stay).

    The plan's colouring when it has one (``meshorder reorder --colour``); otherwise
    the faces are coloured here, with meshorder's colouring.
    """
    interior = np.arange(geometry.n_interior)
    if len(plan.colour_order):
        colour_of = group_of(plan.colour_order, plan.colour_offsets)[interior]
    else:
        colouring = colour_items(geometry.left[interior], geometry.right[interior],
                                 geometry.n_cells)
        colour_of = group_of(colouring.order, colouring.offsets)
    order = interior[np.argsort(colour_of, kind="stable")]
    counts = np.bincount(colour_of)
    offsets = np.concatenate([[0], np.cumsum(counts[counts > 0])])
    return geometry.permute_interior(order, offsets)


def periodic_partners(geometry: FVGeometry, marker: str, partner: str) -> np.ndarray:
    """For each face of ``marker``, the matching face of ``partner`` (global face index).

    Faces match when their centres coincide after the translation between the
    two markers' mean face centres.
    """
    a0, a1 = geometry.markers[marker]
    b0, b1 = geometry.markers[partner]
    if a1 - a0 != b1 - b0:
        raise ConfigError(f"periodic {marker!r} has {a1 - a0} faces but {partner!r} has {b1 - b0}")
    ca, cb = geometry.face_centre[:, a0:a1], geometry.face_centre[:, b0:b1]
    shift = cb.mean(axis=1) - ca.mean(axis=1)
    from scipy.spatial import cKDTree
    distance, match = cKDTree(cb.T).query((ca + shift[:, None]).T)
    scale = np.sqrt(geometry.area[a0:a1].min()) if geometry.dim == 3 else geometry.area[a0:a1].min()
    if distance.max() > 1e-6 * scale or len(np.unique(match)) != len(match):
        raise ConfigError(f"periodic {marker!r} and {partner!r}: faces do not match by a "
                          "translation")
    return b0 + match
