"""Loads on walls: force coefficients per marker and surface pressure coefficients.

Both are integrated on the host from the boundary face fluxes of one residual
(``flux``: ``(n_vars, n_boundary_faces)``, times area), whose momentum part on a wall
is the pressure force.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusolver.layout.geometry import FVGeometry
from gpusolver.physics.gas import Gas


@dataclass(frozen=True)
class Forces:
    """Integrated wall forces of one marker (or all walls).

    Attributes
    ----------
    force : numpy.ndarray
        Force on the body, non-dimensional (free-stream rho = 1, c = 1).
    lift, drag : float
        Coefficients over the reference area.
    """

    force: np.ndarray
    lift: float
    drag: float


def _coefficients(gas: Gas, force: np.ndarray, q_area: float) -> Forces:
    return Forces(force, float(force @ gas.lift_direction) / q_area,
                  float(force @ gas.flow_direction) / q_area)


def wall_forces(flux, host: FVGeometry, gas: Gas, markers: list[str],
                reference_area: float, to_host=np.asarray) -> dict[str, Forces]:
    """Forces on every wall marker of ``markers``, and ``"total"``.

    ``flux`` ``(n_vars, n_boundary_faces)`` may live on the GPU: only each marker's summed
    momentum flux (in float64) comes to the host, through ``to_host``. The free-stream
    pressure is subtracted, so a closed body in uniform flow feels none.
    """
    ni = host.n_interior
    momentum, normal_area = {}, {}
    for name in markers:
        first, end = host.markers[name]
        momentum[name] = to_host(flux[1:-1, first - ni:end - ni].sum(axis=1, dtype=np.float64))
        normal_area[name] = (host.normal[:, first:end] * host.area[first:end]).sum(axis=1)
    return forces_from_momentum(momentum, normal_area, gas, reference_area)


def forces_from_momentum(momentum: dict[str, np.ndarray], normal_area: dict[str, np.ndarray],
                         gas: Gas, reference_area: float) -> dict[str, Forces]:
    """Forces on wall markers from the sums of their faces' momentum fluxes and of their
    normals times areas (``(dim,)`` each per marker; several mesh parts add theirs), and
    ``"total"``; see :func:`wall_forces`."""
    p_inf = 1.0 / gas.gamma
    q_area = gas.dynamic_pressure * reference_area
    result = {}
    total = np.zeros(gas.dim)
    for name, flux in momentum.items():
        force = flux - p_inf * normal_area[name]
        total += force
        result[name] = _coefficients(gas, force, q_area)
    result["total"] = _coefficients(gas, total, q_area)
    return result


def pressure_force(momentum: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Each wall face's pressure force ``(dim, m)``: its momentum flux ``(dim, m)`` along its
    unit ``normal``; the rest of the flux is friction.

    Examples
    --------
    >>> pressure_force(np.array([[0.3], [2.0]]), np.array([[0.0], [1.0]])).tolist()
    [[0.0], [2.0]]
    """
    return (momentum * normal).sum(axis=0) * normal


def split_forces(total: dict[str, Forces], pressure: dict[str, Forces], gas: Gas,
                 reference_area: float) -> dict[str, tuple[Forces, Forces]]:
    """Per marker (and ``"total"``), the ``pressure`` forces and the friction forces: the
    rest of the ``total`` ones.

    Examples
    --------
    >>> import numpy as np
    >>> gas = Gas(dim=2, mach=0.5)
    >>> q = gas.dynamic_pressure
    >>> total = {"wall": Forces(np.array([3.0, 1.0]) * q, 1.0, 3.0)}
    >>> pressure = {"wall": Forces(np.array([1.0, 1.0]) * q, 1.0, 1.0)}
    >>> _, friction = split_forces(total, pressure, gas, 1.0)["wall"]
    >>> round(friction.drag, 12), round(friction.lift, 12)
    (2.0, 0.0)
    """
    q_area = gas.dynamic_pressure * reference_area
    return {name: (pressure[name], _coefficients(gas, total[name].force - pressure[name].force,
                                                 q_area))
            for name in total}


def surface_walk(edges: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order 2-D wall edges along their chains; the arc length of each edge's midpoint.

    Each chain starts at its node of largest ``x`` (an airfoil's trailing edge, or the
    downstream end of an open wall) and goes first along the edge whose other node lies
    higher (the upper surface of an airfoil). Several chains (a main element and a flap)
    follow one another; the arc length restarts at 0 on each.

    Parameters
    ----------
    edges : numpy.ndarray
        ``(m, 2)`` node ids of the wall's edges.
    points : numpy.ndarray
        ``(n_points, >= 2)`` node coordinates.

    Returns
    -------
    order : numpy.ndarray
        Edge indices in walking order.
    arc : numpy.ndarray
        Arc length at the midpoint of each edge of ``order``.

    Examples
    --------
    >>> square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    >>> order, arc = surface_walk(np.array([[0, 1], [2, 3], [1, 2], [3, 0]]), square)
    >>> order.tolist(), arc.tolist()
    ([2, 1, 3, 0], [0.5, 1.5, 2.5, 3.5])
    """
    by_node: dict[int, list[int]] = {}
    for e, (a, b) in enumerate(edges):
        by_node.setdefault(int(a), []).append(e)
        by_node.setdefault(int(b), []).append(e)
    used = np.zeros(len(edges), dtype=bool)
    order, arc = [], []
    while not used.all():
        nodes = np.unique(edges[~used])
        ends = [n for n in nodes if sum(not used[e] for e in by_node[n]) == 1]
        candidates = np.array(ends if ends else nodes)
        node = int(candidates[np.argmax(points[candidates, 0])])
        first = [e for e in by_node[node] if not used[e]]
        other = [int(edges[e][0] if edges[e][1] == node else edges[e][1]) for e in first]
        edge = first[int(np.argmax(points[other, 1]))]
        length = 0.0
        while edge is not None:
            used[edge] = True
            a, b = (int(n) for n in edges[edge])
            step = float(np.linalg.norm(points[b, :2] - points[a, :2]))
            order.append(edge)
            arc.append(length + 0.5 * step)
            length += step
            node = b if a == node else a
            edge = next((e for e in by_node[node] if not used[e]), None)
    return np.array(order, dtype=np.int64), np.array(arc)


def wall_edges(host: FVGeometry, marker: str) -> np.ndarray:
    """The mesh nodes ``(m, 2)`` of a 2-D wall marker's faces, in the face order."""
    first, end = host.markers[marker]
    return host.boundary_nodes[first - host.n_interior:end - host.n_interior, :2]


def surface_pressure(flux: np.ndarray, host: FVGeometry, gas: Gas, marker: str
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Face centres ``(dim, m)`` and pressure coefficients of one wall marker."""
    first, end = host.markers[marker]
    ni = host.n_interior
    momentum = flux[1:-1, first - ni:end - ni]
    normal, area = host.normal[:, first:end], host.area[first:end]
    pressure = (momentum * normal).sum(axis=0) / area
    cp = (pressure - 1.0 / gas.gamma) / gas.dynamic_pressure
    return host.face_centre[:, first:end], cp


def skin_friction(flux: np.ndarray, host: FVGeometry, gas: Gas, marker: str, rho: np.ndarray,
                  mu: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Face centres ``(dim, m)``, skin-friction coefficients and y+ of the first cells of
    one wall marker.

    The friction is the tangential part of each face's momentum flux (the force on the
    wall); ``Cf`` is its component along the free stream over ``q A``, ``y+`` is
    ``sqrt(tau rho) y / mu`` of the face's cell (``rho``, ``mu`` per cell, ``y`` the
    distance from its centroid to the face's plane).

    Examples
    --------
    A shear of 0.01 along x on a wall of unit area below a cell 0.1 above it:

    >>> from types import SimpleNamespace
    >>> wall = SimpleNamespace(markers={"w": (0, 1)}, n_interior=0, area=np.array([1.0]),
    ...                        normal=np.array([[0.0], [-1.0]]), face_centre=np.zeros((2, 1)),
    ...                        centroid=np.array([[0.0], [0.1]]), left=np.array([0]))
    >>> flux = np.array([[0.0], [0.01], [1.0 / 1.4], [0.0]])  # mass, x, y momentum, energy
    >>> _, cf, y_plus = skin_friction(flux, wall, Gas(dim=2, mach=0.5), "w", np.ones(1),
    ...                               np.array([1e-4]))
    >>> round(float(cf[0]), 6), round(float(y_plus[0]), 3)
    (0.08, 100.0)
    """
    first, end = host.markers[marker]
    ni = host.n_interior
    momentum = flux[1:-1, first - ni:end - ni]
    normal, area = host.normal[:, first:end], host.area[first:end]
    tangential = momentum - pressure_force(momentum, normal)
    cf = (tangential * gas.flow_direction[:, None]).sum(axis=0) / area / gas.dynamic_pressure
    tau = np.sqrt((tangential * tangential).sum(axis=0)) / area
    cell = host.left[first:end]
    y = np.abs(((host.face_centre[:, first:end] - host.centroid[:, cell]) * normal).sum(axis=0))
    return host.face_centre[:, first:end], cf, np.sqrt(tau * rho[cell]) * y / mu[cell]
