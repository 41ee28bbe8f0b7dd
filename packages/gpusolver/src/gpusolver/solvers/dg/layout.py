"""The elements and faces of a 2-D mesh in a plan's order, for the modal DG solver.

Elements are triangles and quadrilaterals with counter-clockwise corners (meshorder
orients them on reading). Straight-sided ones are mapped from their corners (affine
triangles, bilinear quadrilaterals). An element with a curved edge, one whose mid node
in a second-order mesh (:attr:`meshorder.mesh.Mesh.mid_edge_nodes`) is off its chord, is
mapped through its corners and the mid-edge points of its edges (quadratic triangles,
serendipity quadrilaterals; a quad9's centre node is not used), so that a wall keeps the
geometry's curvature. Per group of elements (shape, straight or curved), the volume
quadrature's weighted physical gradients of the modes are tabulated per element; the
mass matrix of each element is inverted once (the identity over the Jacobian on affine
elements, full on the others). Faces are the plan's, in its order (interior first, then
boundary faces by marker); each carries the modes' values at its Gauss points as seen
from both sides, and at each point the unit normal out of its left element and the
length element.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.solvers.dg.reference import (
    CORNERS,
    basis,
    element_rule,
    line_rule,
    n_modes,
    quadrature_strength,
)
from meshorder import Mesh
from meshorder.plan import Plan


@dataclass(frozen=True)
class ElementGroup:
    """The elements of one shape.

    Attributes
    ----------
    shape : str
        ``triangle`` or ``quad``.
    elements : numpy.ndarray
        Their indices (plan order).
    nodes : numpy.ndarray
        ``(n, k, 2)`` coordinates of the nodes that map the reference element
        (:func:`shape_functions`): the corners, counter-clockwise, and in a curved group
        then the mid-edge point of each edge in the corners' order.
    values : numpy.ndarray
        ``(n_modes, n_q)`` modes at the volume quadrature points.
    weighted_gradients : numpy.ndarray
        ``(2, n_modes, n_q, n)`` physical gradients of the modes times weight and Jacobian.
    weights : numpy.ndarray
        ``(n_q, n)`` quadrature weight times Jacobian (integrals over each element).
    points : numpy.ndarray
        ``(2, n_q, n)`` physical quadrature points.
    """

    shape: str
    elements: np.ndarray
    nodes: np.ndarray
    values: np.ndarray
    weighted_gradients: np.ndarray
    weights: np.ndarray
    points: np.ndarray


@dataclass(frozen=True)
class DGLayout:
    """A mesh laid out for modal DG of degree ``degree``.

    Attributes
    ----------
    degree, n_modes, n_elements : int
    groups : list of ElementGroup
    inverse_mass : numpy.ndarray
        ``(n_elements, n_modes, n_modes)``.
    mean_weights : numpy.ndarray
        ``(n_modes, n_elements)``: each mode's mean over each element, so that an
        element's mean state is these times its coefficients.
    size : numpy.ndarray
        ``(n_elements,)`` length scale of convection: twice the area over the perimeter.
    diffusion_size : numpy.ndarray
        ``(n_elements,)`` length scale of diffusion: ``size``, and on a quadrilateral at
        most half its height across its longest side (the area over that side): a
        stretched quadrilateral's diffusive time step is set by its short side, which
        ``size`` overestimates.
    left, right : numpy.ndarray
        Elements of each face (``right`` -1 on the boundary).
    normal : numpy.ndarray
        ``(2, n_faces)`` unit normals of the chords, out of the left element.
    area : numpy.ndarray
        Chord lengths (the area per unit depth, as in the finite-volume geometry);
        ``normal * area`` is the integral of the normal over the face, curved or not.
    face_centre : numpy.ndarray
        ``(2, n_faces)`` the faces' midpoints (on curved faces, their mid nodes).
    face_weights : numpy.ndarray
        ``(n_qf,)`` Gauss weights on [0, 1].
    trace_table : numpy.ndarray
        ``(n_tables, n_modes, n_qf)`` modes at a face's Gauss points seen from an element:
        one table per shape, local edge and direction (:func:`trace_index`).
    trace_left, trace_right : numpy.ndarray
        The table of each face's left element and of each interior face's right one.
    face_points : numpy.ndarray
        ``(2, n_qf, n_faces)`` physical Gauss points.
    point_normals : numpy.ndarray
        ``(2, n_qf, n_faces)`` the unit normal at each face Gauss point, out of the left
        element (``normal`` on straight faces).
    line_jacobian : numpy.ndarray
        ``(n_qf, n_faces)`` length per unit of the face's parameter at each Gauss point
        (``area`` on straight faces): with ``face_weights``, the face's integration
        weights.
    curved_faces : numpy.ndarray
        Indices of the faces whose mid node is off the chord.
    n_interior : int
    markers : dict of str to (int, int)
        Marker -> range of its boundary faces.
    boundary_nodes : numpy.ndarray
        ``(n_boundary_faces, 2)`` mesh nodes of each boundary face (walking a wall).
    cell_order : numpy.ndarray
        New -> old element numbers (outputs in the file's order).
    left_trace_gradients, right_trace_gradients : numpy.ndarray or None
        ``(2, n_modes, n_qf, n_faces)`` (right: interior faces) physical gradients of the
        left (right) element's modes at each face's Gauss points; laid out for viscous
        flow only (None otherwise).

    The fields the run's outputs read (``markers``, ``n_interior``, ``normal``, ``area``,
    ``face_centre``, ``boundary_nodes``) mean what they mean in
    :class:`gpusolver.layout.geometry.FVGeometry`.
    """

    degree: int
    n_modes: int
    n_elements: int
    groups: list[ElementGroup]
    inverse_mass: np.ndarray
    mean_weights: np.ndarray
    size: np.ndarray
    diffusion_size: np.ndarray
    left: np.ndarray
    right: np.ndarray
    normal: np.ndarray
    area: np.ndarray
    face_centre: np.ndarray
    face_weights: np.ndarray
    trace_table: np.ndarray
    trace_left: np.ndarray
    trace_right: np.ndarray
    face_points: np.ndarray
    point_normals: np.ndarray
    line_jacobian: np.ndarray
    curved_faces: np.ndarray
    n_interior: int
    markers: dict[str, tuple[int, int]]
    boundary_nodes: np.ndarray
    cell_order: np.ndarray
    left_trace_gradients: np.ndarray | None = None
    right_trace_gradients: np.ndarray | None = None

    #: Two-dimensional (as :class:`~gpusolver.layout.geometry.FVGeometry` says its own).
    dim = 2

    @cached_property
    def scalar_mass(self) -> np.ndarray:
        """``(n_elements,)`` True where the mass matrix is the Jacobian times the identity
        (affine elements: triangles and parallelograms), to round-off."""
        diagonal = self.inverse_mass[:, 0, 0]
        off = self.inverse_mass - diagonal[:, None, None] * np.eye(self.n_modes)
        return np.abs(off).max(axis=(1, 2)) <= 1e-12 * diagonal

    @cached_property
    def left_trace(self) -> np.ndarray:
        """``(n_faces, n_modes, n_qf)`` modes at each face's Gauss points, left element."""
        return self.trace_table[self.trace_left]

    @cached_property
    def right_trace(self) -> np.ndarray:
        """The same for the right elements of the interior faces (zeros elsewhere)."""
        out = np.zeros((len(self.left), self.n_modes, len(self.face_weights)))
        out[:self.n_interior] = self.trace_table[self.trace_right]
        return out


def shape_functions(shape: str, ref: np.ndarray, n_nodes: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Weights ``(k, n)`` of an element's ``n_nodes`` geometry nodes at reference points
    ``ref`` ``(2, n)`` and their reference derivatives ``(2, k, n)``.

    ``n_nodes`` is the number of corners (the default: affine triangles, bilinear
    quadrilaterals) or twice it: the corners, then the mid-edge point of each edge
    (quadratic triangles, 6 nodes; serendipity quadrilaterals, 8 nodes).

    Examples
    --------
    The weights sum to one, and each node's weight is one at its node:

    >>> corners, mids = CORNERS["quad"], 0.5 * (CORNERS["quad"] + np.roll(CORNERS["quad"], -1, 0))
    >>> weights, derivatives = shape_functions("quad", np.concatenate([corners, mids]).T, 8)
    >>> bool(np.allclose(weights, np.eye(8))), bool(np.allclose(derivatives.sum(axis=1), 0))
    (True, True)
    """
    x, y = ref
    one, zero = np.ones_like(x), np.zeros_like(x)
    corners = len(CORNERS[shape])
    quadratic = n_nodes is not None and n_nodes != corners
    if quadratic and n_nodes != 2 * corners:
        raise ValueError(f"a {shape} is mapped by {corners} or {2 * corners} nodes, "
                         f"not {n_nodes}")
    if shape == "triangle":
        area = [1 - x - y, x, y]  # barycentric coordinates and their derivatives
        slope = [(-one, -one), (one, zero), (zero, one)]
        if not quadratic:
            return np.stack(area), np.stack([np.stack([s[a] for s in slope]) for a in range(2)])
        weights = [c * (2 * c - 1) for c in area]
        derivatives = [[(4 * c - 1) * s[a] for c, s in zip(area, slope, strict=True)]
                       for a in range(2)]
        for i in range(3):
            j = (i + 1) % 3
            weights.append(4 * area[i] * area[j])
            for a in range(2):
                derivatives[a].append(4 * (slope[i][a] * area[j] + area[i] * slope[j][a]))
        return np.stack(weights), np.stack([np.stack(d) for d in derivatives])
    sx, sy = CORNERS["quad"].T[:, :, None]
    if not quadratic:
        return (0.25 * (1 + sx * x) * (1 + sy * y),
                np.stack([0.25 * sx * (1 + sy * y), 0.25 * sy * (1 + sx * x)]))
    weights = [0.25 * (1 + sx * x) * (1 + sy * y) * (sx * x + sy * y - 1)]
    dx = [0.25 * sx * (1 + sy * y) * (2 * sx * x + sy * y)]
    dy = [0.25 * sy * (1 + sx * x) * (sx * x + 2 * sy * y)]
    for mx, my in 0.5 * (CORNERS["quad"] + np.roll(CORNERS["quad"], -1, axis=0)):
        if mx == 0:  # the mid node of a side y = my
            weights.append(0.5 * (1 - x * x) * (1 + my * y)[None])
            dx.append(-x * (1 + my * y)[None])
            dy.append(0.5 * my * (1 - x * x)[None])
        else:  # of a side x = mx
            weights.append(0.5 * (1 + mx * x) * (1 - y * y)[None])
            dx.append(0.5 * mx * (1 - y * y)[None])
            dy.append(-(1 + mx * x) * y[None])
    return np.concatenate(weights), np.stack([np.concatenate(dx), np.concatenate(dy)])


def subdivision(shape: str, divisions: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference points ``(2, m)`` of a regular lattice on ``shape`` and the sub-cells
    ``(k, corners)`` (counter-clockwise) they make: ``divisions`` per edge.

    Examples
    --------
    >>> points, cells = subdivision("triangle", 2)
    >>> points.shape, cells.shape
    ((2, 6), (4, 3))
    """
    n = divisions
    if shape == "quad":
        t = np.linspace(-1.0, 1.0, n + 1)
        points = np.stack([np.tile(t, n + 1), np.repeat(t, n + 1)])
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="xy")
        corner = (j * (n + 1) + i).ravel()
        return points, np.column_stack([corner, corner + 1, corner + n + 2, corner + n + 1])
    index, points = {}, []
    for j in range(n + 1):
        for i in range(n + 1 - j):
            index[i, j] = len(points)
            points.append((i / n, j / n))
    cells = []
    for j in range(n):
        for i in range(n - j):
            cells.append((index[i, j], index[i + 1, j], index[i, j + 1]))
            if i + j < n - 1:
                cells.append((index[i + 1, j], index[i + 1, j + 1], index[i, j + 1]))
    return np.array(points).T, np.array(cells)


def _physical_gradients(shape: str, degree: int, ref: np.ndarray, x: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Physical gradients ``(2, n_modes, q, n_e)`` of the modes at reference points ``ref``
    ``(2, q)`` of elements mapped by nodes ``x`` ``(n_e, k, 2)`` (:func:`shape_functions`),
    and the Jacobian ``(q, n_e)``.

    Raises
    ------
    ConfigError
        If the Jacobian is not positive at a point (an inverted or degenerate element).
    """
    _, derivatives = shape_functions(shape, ref, x.shape[1])
    jacobian = np.einsum("akq,ekd->daqe", derivatives, x)  # d x_d / d xi_a
    det = jacobian[0, 0] * jacobian[1, 1] - jacobian[0, 1] * jacobian[1, 0]
    if np.any(det <= 0):
        raise ConfigError(f"a {shape} has a non-positive Jacobian (inverted or degenerate)")
    inverse = np.stack([np.stack([jacobian[1, 1], -jacobian[0, 1]]),
                        np.stack([-jacobian[1, 0], jacobian[0, 0]])]) / det  # xi_a / x_d
    return np.einsum("adqe,amq->dmqe", inverse, basis(shape, degree).gradients(ref)), det


def map_points(shape: str, ref: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``(2, q, n)`` physical points of reference points ``ref`` ``(2, q)`` in elements
    mapped by ``nodes`` ``(n, k, 2)`` (:func:`shape_functions`)."""
    weights, _ = shape_functions(shape, ref, nodes.shape[1])
    return np.einsum("kq,ekd->dqe", weights, nodes)


def element_quadrature(shape: str, nodes: np.ndarray, degree: int, strength: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A rule of ``strength`` on elements of ``shape`` mapped by ``nodes``
    ``(n, k, 2)``: physical points ``(2, q, n)``, weights times Jacobian ``(q, n)``, and
    the modes of ``degree`` there ``(n_modes, q)``.

    Raises
    ------
    ConfigError
        If an element's Jacobian is not positive at a point.
    """
    rule = element_rule(shape, strength)
    _, det = _physical_gradients(shape, 0, rule.points, nodes)
    return (map_points(shape, rule.points, nodes), rule.weights[:, None] * det,
            basis(shape, degree).values(rule.points))


def _edge_points(shape: str, edge: int, forward: int, t: np.ndarray) -> np.ndarray:
    """Reference points ``(2, len(t))`` at line points ``t`` along local edge ``edge`` of
    ``shape``, from its first corner (``forward``) or from its second."""
    ref = CORNERS[shape]
    start, end = ref[edge], ref[(edge + 1) % len(ref)]
    along = t if forward else 1.0 - t
    return start[:, None] + along[None] * (end - start)[:, None]


def trace_gradients(geometry: np.ndarray, n_nodes: np.ndarray, elements: np.ndarray,
                    tables: np.ndarray, degree: int, t: np.ndarray) -> np.ndarray:
    """``(2, n_modes, len(t), n)`` physical gradients of the modes of ``elements`` at the
    line points ``t`` of their sides whose trace tables are ``tables``
    (:func:`trace_index`); ``geometry`` and ``n_nodes`` map each element
    (:func:`_geometry`)."""
    out = np.zeros((2, n_modes(degree), len(t), len(elements)))
    for s, shape in enumerate(SHAPES):
        k = len(CORNERS[shape])
        for nodes in (k, 2 * k):
            for edge in range(k):
                for forward in (0, 1):
                    sides = np.flatnonzero((tables == s * 8 + 2 * edge + forward)
                                           & (n_nodes[elements] == nodes))
                    if sides.size:
                        out[..., sides], _ = _physical_gradients(
                            shape, degree, _edge_points(shape, edge, forward, t),
                            geometry[elements[sides], :nodes])
    return out


def _corners(mesh: Mesh, cell_order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shape names and corner node ids ``(n, 4)`` (-1 pads triangles), plan order."""
    shapes, corners = [], []
    for block in mesh.cells:  # a 2-D mesh holds triangles and quadrilaterals only
        shapes.append(np.full(len(block), block.type))
        padded = np.full((len(block), 4), -1, dtype=np.int64)
        padded[:, :block.nodes.shape[1]] = block.nodes
        corners.append(padded)
    return np.concatenate(shapes)[cell_order], np.concatenate(corners)[cell_order]


#: A mid node this far off its edge's chord midpoint, relative to the chord's length,
#: curves the edge.
CURVED_EDGE = 1e-10


def mid_edge_points(mesh: Mesh, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mid-edge point ``(n, 2)`` of each edge between nodes ``a`` and ``b``: the mesh's
    mid node where it has one off the chord (:attr:`Mesh.mid_edge_nodes`), else the
    chord's midpoint; and ``(n,)`` True where it is off (a curved edge)."""
    xy = mesh.points[:, :2]
    middle = 0.5 * (xy[a] + xy[b])
    if not len(mesh.mid_edge_nodes):
        return middle, np.zeros(len(a), dtype=bool)
    nodes, found = mesh.edge_nodes(a, b)
    node = xy[nodes]
    off = np.linalg.norm(node - middle, axis=1)
    curved = found & (off > CURVED_EDGE * np.linalg.norm(xy[b] - xy[a], axis=1))
    return np.where(curved[:, None], node, middle), curved


def _geometry(mesh: Mesh, corners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 8, 2)`` each element's corners and then its edges' mid-edge points
    (:func:`mid_edge_points`), and ``(n,)`` how many of them map it
    (:func:`shape_functions`): its corners, or where an edge is curved all of them."""
    xy = mesh.points[:, :2]
    count = np.where(corners[:, 3] >= 0, 4, 3)
    geometry = np.zeros((len(corners), 8, 2))
    curved = np.zeros(len(corners), dtype=bool)
    for k in range(4):
        valid = np.flatnonzero(k < count)
        a, b = corners[valid, k], corners[valid, (k + 1) % count[valid]]
        geometry[valid, k] = xy[a]
        geometry[valid, count[valid] + k], bent = mid_edge_points(mesh, a, b)
        curved[valid] |= bent
    return geometry, np.where(curved, 2 * count, count)


def _local_edges(corners: np.ndarray, cells: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Local edge of each face ``(a, b)`` in element ``cells`` and whether it runs a -> b."""
    c = corners[cells]
    count = np.where(c[:, 3] >= 0, 4, 3)
    edge = np.full(len(cells), -1)
    forward = np.zeros(len(cells), dtype=bool)
    for k in range(4):
        start, end = c[:, k], c[np.arange(len(cells)), (k + 1) % count]
        valid = k < count
        same = valid & (start == a) & (end == b)
        reverse = valid & (start == b) & (end == a)
        edge = np.where(same | reverse, k, edge)
        forward |= same
    return edge, forward


#: Shapes in the order of their trace tables.
SHAPES = tuple(CORNERS)


def trace_index(shape: np.ndarray, edge: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Trace table of each element side: its shape name, local edge (0..3), direction."""
    code = np.zeros(len(shape), dtype=np.int64)
    for i, name in enumerate(SHAPES):
        code[shape == name] = i
    return code * 8 + 2 * edge + forward


def trace_tables(degree: int, t: np.ndarray) -> np.ndarray:
    """``(16, n_modes, n_qf)`` modes at line points ``t`` along each local edge of each
    shape, forward (from its first corner) and backward; unused edges are zero."""
    out = np.zeros((8 * len(SHAPES), n_modes(degree), len(t)))
    for s, shape in enumerate(SHAPES):
        for k in range(len(CORNERS[shape])):
            for forward in (0, 1):
                out[s * 8 + 2 * k + forward] = basis(shape, degree).values(
                    _edge_points(shape, k, forward, t))
    return out


def build_layout(mesh: Mesh, plan: Plan, degree: int, viscous: bool = False) -> DGLayout:
    """Lay out ``mesh`` in ``plan``'s order for DG of degree ``degree`` (0 to 3); with
    ``viscous``, the modes' gradients at the faces too.

    Raises
    ------
    ConfigError
        For a 3D mesh, a degree outside 0..3, or an element whose Jacobian is not
        positive at a quadrature point (a non-convex quadrilateral).
    """
    if mesh.dim != 2:
        raise ConfigError("the DG solver is two-dimensional; the mesh is 3D")
    if degree not in range(4):
        raise ConfigError(f"degree must be 0, 1, 2 or 3, not {degree!r}")
    plan.check_mesh(mesh.digest(), mesh.source)
    shapes, corners = _corners(mesh, plan.cell_order)
    geometry, n_nodes = _geometry(mesh, corners)
    xy = mesh.points[:, :2]
    n, m = len(shapes), n_modes(degree)
    strength = quadrature_strength(degree)
    groups, inverse_mass, mean_weights = [], np.empty((n, m, m)), np.empty((m, n))
    size, diffusion_size = np.empty(n), np.empty(n)
    for shape in CORNERS:
        k = len(CORNERS[shape])
        for nodes in (k, 2 * k):  # straight-sided, then curved
            elements = np.flatnonzero((shapes == shape) & (n_nodes == nodes))
            if not len(elements):
                continue
            x = geometry[elements, :nodes]  # (n_e, nodes, 2)
            points, jw, values = element_quadrature(shape, x, degree, strength)
            physical, _ = _physical_gradients(shape, degree, element_rule(shape, strength)
                                              .points, x)
            weighted = values[:, :, None] * jw[None]
            inverse_mass[elements] = np.linalg.inv(np.einsum("mqe,nq->emn", weighted, values))
            mean_weights[:, elements] = weighted.sum(axis=1) / jw.sum(axis=0)
            chords = np.linalg.norm(x[:, :k] - np.roll(x[:, :k], -1, axis=1), axis=2)
            size[elements] = 2.0 * jw.sum(axis=0) / chords.sum(axis=1)
            diffusion_size[elements] = size[elements]
            if shape == "quad":
                diffusion_size[elements] = np.minimum(size[elements],
                                                      0.5 * jw.sum(axis=0) / chords.max(axis=1))
            groups.append(ElementGroup(shape, elements, x, values, physical * jw[None, None],
                                       jw, points))

    faces = plan.face_nodes[:, :2]
    left, right = plan.face_cells[:, 0], plan.face_cells[:, 1]
    a, b = faces[:, 0], faces[:, 1]
    rule = line_rule(strength)
    edge_l, forward_l = _local_edges(corners, left, a, b)
    ni = plan.n_interior_faces
    edge_r, forward_r = _local_edges(corners, right[:ni], a[:ni], b[:ni])
    trace_left = trace_index(shapes[left], edge_l, forward_l)
    trace_right = trace_index(shapes[right[:ni]], edge_r, forward_r)
    middle, curved = mid_edge_points(mesh, a, b)
    normal, length, face_points, point_normals, line_jacobian = _face_geometry(
        xy[a], middle, xy[b], curved, forward_l, rule.points)
    gradients = (None, None)
    if viscous:
        gradients = (trace_gradients(geometry, n_nodes, left, trace_left, degree, rule.points),
                     trace_gradients(geometry, n_nodes, right[:ni], trace_right, degree,
                                     rule.points))
    return DGLayout(degree, m, n, groups, inverse_mass, mean_weights, size, diffusion_size,
                    left, right,
                    normal, length, middle.T, rule.weights,
                    trace_tables(degree, rule.points), trace_left, trace_right, face_points,
                    point_normals, line_jacobian, np.flatnonzero(curved), ni,
                    plan.boundary_ranges(),
                    faces[ni:], np.asarray(plan.cell_order), *gradients)


def _face_geometry(start: np.ndarray, middle: np.ndarray, end: np.ndarray,
                   curved: np.ndarray, forward: np.ndarray, t: np.ndarray) -> tuple:
    """The geometry of faces from ``start`` through ``middle`` to ``end`` (``(n, 2)``
    each; quadratic where ``curved``, else straight) at line points ``t``: the chords'
    unit normals ``(2, n)`` and lengths ``(n,)``, the points ``(2, len(t), n)``, the unit
    normals there ``(2, len(t), n)`` and the lengths per unit of ``t`` ``(len(t), n)``.
    Normals point out of the element whose counter-clockwise edge runs from ``start``
    to ``end`` where ``forward``, the other way elsewhere."""
    sign = np.where(forward, 1.0, -1.0)
    chord = (end - start).T * sign  # (2, n): along the left element's edge
    length = np.linalg.norm(chord, axis=0)
    normal = np.stack([chord[1], -chord[0]]) / length
    points = start.T[:, None, :] + t[None, :, None] * (end - start).T[:, None]
    point_normals = np.repeat(normal[:, None, :], len(t), axis=1)
    line_jacobian = np.repeat(length[None], len(t), axis=0)
    c = np.flatnonzero(curved)
    if len(c):  # x(t) = (1-t)(1-2t) A + 4t(1-t) M + t(2t-1) B
        tt = t[None, :, None]
        a, m, b = (p[c].T[:, None, :] for p in (start, middle, end))
        points[:, :, c] = ((1 - tt) * (1 - 2 * tt) * a + 4 * tt * (1 - tt) * m
                           + tt * (2 * tt - 1) * b)
        tangent = ((4 * tt - 3) * a + (4 - 8 * tt) * m + (4 * tt - 1) * b) * sign[c]
        line_jacobian[:, c] = np.linalg.norm(tangent, axis=0)
        point_normals[:, :, c] = np.stack([tangent[1], -tangent[0]]) / line_jacobian[:, c]
    return normal, length, points, point_normals, line_jacobian
