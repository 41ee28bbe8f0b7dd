"""Bodies of the vortex method: a closed polygon of panels, counter-clockwise.

The vortex sheet lives on the panels (segments from one vertex to the next, the last back
to the first). A body comes from a generated shape (:func:`circle`, :func:`rounded_plate`,
:func:`naca_airfoil`) or from a boundary marker of any 2D mesh meshorder reads
(:func:`body_from_mesh`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gpusolver.errors import ConfigError
from meshorder.generate import naca4
from meshorder.mesh import Mesh

#: Fewest panels of a body.
MIN_PANELS = 3


@dataclass(frozen=True)
class Body:
    """A closed polygon, counter-clockwise: panel ``i`` runs from vertex ``i`` to ``i + 1``.

    Attributes
    ----------
    vertices : numpy.ndarray
        ``(n, 2)`` corners, the first not repeated at the end.
    """

    vertices: np.ndarray

    def __post_init__(self):
        vertices = np.asarray(self.vertices, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[1] != 2 or len(vertices) < MIN_PANELS:
            raise ConfigError(f"a body needs at least {MIN_PANELS} (x, y) vertices, got "
                              f"shape {vertices.shape}")
        if not np.isfinite(vertices).all():
            raise ConfigError("a body's vertices must be finite")
        if np.any(np.hypot(*(np.roll(vertices, -1, axis=0) - vertices).T) == 0):
            raise ConfigError("a body has a panel of zero length (a repeated vertex)")
        if _signed_area(vertices) < 0:
            vertices = vertices[::-1].copy()
        object.__setattr__(self, "vertices", vertices)

    @property
    def n_panels(self) -> int:
        """Number of panels (= vertices)."""
        return len(self.vertices)

    @cached_property
    def ends(self) -> np.ndarray:
        """``(n, 2)`` end of each panel (the next vertex)."""
        return np.roll(self.vertices, -1, axis=0)

    @cached_property
    def lengths(self) -> np.ndarray:
        """Panel lengths."""
        return np.hypot(*(self.ends - self.vertices).T)

    @cached_property
    def midpoints(self) -> np.ndarray:
        """``(n, 2)`` panel midpoints."""
        return 0.5 * (self.vertices + self.ends)

    @cached_property
    def tangents(self) -> np.ndarray:
        """``(n, 2)`` unit tangents, counter-clockwise along the contour."""
        return (self.ends - self.vertices) / self.lengths[:, None]

    @cached_property
    def normals(self) -> np.ndarray:
        """``(n, 2)`` unit normals out of the body, into the flow."""
        return np.column_stack([self.tangents[:, 1], -self.tangents[:, 0]])

    @property
    def area(self) -> float:
        """Area enclosed."""
        return _signed_area(self.vertices)

    @property
    def perimeter(self) -> float:
        """Length of the contour."""
        return float(self.lengths.sum())


def _signed_area(vertices: np.ndarray) -> float:
    """Shoelace area, positive counter-clockwise (about the mean vertex, to keep digits)."""
    x, y = (vertices - vertices.mean(axis=0)).T
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def circle(n_panels: int, radius: float = 1.0, centre=(0.0, 0.0)) -> Body:
    """A regular polygon inscribed in a circle, a vertex on the positive x axis.

    Examples
    --------
    >>> round(circle(1000).perimeter, 6)  # 2 pi less O(1/n^2)
    6.283175
    """
    _check_panels(n_panels)
    angle = 2 * np.pi * np.arange(n_panels) / n_panels
    return Body(np.asarray(centre, dtype=np.float64)
                + radius * np.column_stack([np.cos(angle), np.sin(angle)]))


def rounded_plate(n_panels: int, length: float = 1.0, thickness: float = 0.02) -> Body:
    """A flat plate with semicircular ends, ``length`` from tip to tip, from x = 0.

    Panels of nearly equal length: each side and each end gets its share of
    ``n_panels`` by its length (at least two panels per end).

    Examples
    --------
    >>> plate = rounded_plate(400)
    >>> plate.n_panels, round(plate.area, 4)  # (1 - 0.02) 0.02 + pi 0.01^2 = 0.019914
    (400, 0.0199)
    """
    _check_panels(n_panels)
    if not 0 < thickness < length:
        raise ConfigError(f"the plate's thickness must lie in (0, length={length}), got "
                          f"{thickness}")
    r = thickness / 2
    flat = length - thickness
    arc = np.pi * r
    per_end = max(2, round(n_panels * arc / (2 * flat + 2 * arc)))
    per_side = (n_panels - 2 * per_end) // 2
    if per_side < 1:
        raise ConfigError(f"{n_panels} panels are too few for a rounded plate (at least "
                          f"{2 * 2 + 2})")
    extra = n_panels - 2 * (per_end + per_side)  # 0 or 1: the lower side takes it
    lower = np.column_stack([r + flat * np.arange(per_side + extra) / (per_side + extra),
                             np.full(per_side + extra, -r)])
    upper = np.column_stack([r + flat - flat * np.arange(per_side) / per_side,
                             np.full(per_side, r)])

    def end(x_centre, start_angle):
        angle = start_angle + np.pi * np.arange(per_end) / per_end
        return np.column_stack([x_centre + r * np.cos(angle), r * np.sin(angle)])

    return Body(np.concatenate([lower, end(r + flat, -np.pi / 2), upper, end(r, np.pi / 2)]))


def naca_airfoil(code: str, n_panels: int) -> Body:
    """A NACA 4-digit section (``"0012"``, ``"2412"``), chord 1 from x = 0, its trailing
    edge closed, ``n_panels`` panels (even) clustered at both edges."""
    if not re.fullmatch(r"\d{4}", code):
        raise ConfigError(f"NACA {code!r}: expected four digits such as '0012' or '2412'")
    _check_panels(n_panels)
    if n_panels % 2:
        raise ConfigError(f"a NACA section takes an even number of panels, got {n_panels}")
    camber, position, thickness = int(code[0]) / 100, int(code[1]) / 10, int(code[2:]) / 100
    if thickness == 0 or (camber > 0) != (position > 0):
        raise ConfigError(f"NACA {code}: needs a thickness, and a camber position with a "
                          "camber")
    return Body(naca4(camber, position, thickness, n_panels // 2 + 1))


def body_from_mesh(mesh: Mesh, marker: str) -> Body:
    """The closed contour of the boundary lines marked ``marker`` in a 2D mesh.

    Raises
    ------
    ConfigError
        If the mesh is not 2D, the marker is unknown or holds no lines, or its lines do
        not form exactly one closed loop.
    """
    where = f"{mesh.source}: marker {marker!r}"
    if mesh.dim != 2:
        raise ConfigError(f"{mesh.source}: a vortex body needs a 2D mesh, this one is "
                          f"{mesh.dim}D")
    ids = [k for k, name in mesh.marker_names.items() if name == marker]
    if not ids:
        raise ConfigError(f"{where} not in the mesh; it has "
                          f"{', '.join(sorted(mesh.marker_names.values())) or 'none'}")
    edges = np.concatenate([block.nodes[np.isin(markers, ids)][:, :2]
                            for block, markers in zip(mesh.facets, mesh.facet_markers,
                                                      strict=True)])
    if len(edges) < MIN_PANELS:
        raise ConfigError(f"{where} holds {len(edges)} boundary lines; a body needs at "
                          f"least {MIN_PANELS} forming one closed loop")
    return Body(mesh.points[_closed_loop(edges, where), :2])


def _closed_loop(edges: np.ndarray, where: str) -> np.ndarray:
    """The nodes of ``edges`` ``(m, 2)`` in loop order, if they form one simple cycle."""
    nodes, counts = np.unique(edges, return_counts=True)
    if np.any(counts != 2):
        node = int(nodes[np.argmax(counts != 2)])
        raise ConfigError(f"{where}: node {node} ends {int(counts[counts != 2][0])} of its "
                          "lines, expected 2 (the lines must form one closed loop)")
    touching = {int(n): [] for n in nodes}
    for k, (a, b) in enumerate(edges.tolist()):
        touching[a].append(k)
        touching[b].append(k)
    loop, node, edge = [], int(edges[0, 0]), 0
    while True:
        loop.append(node)
        a, b = edges[edge]
        node = int(b) if int(a) == node else int(a)
        if node == loop[0]:
            break
        edge = next(k for k in touching[node] if k != edge)
    if len(loop) != len(edges):
        raise ConfigError(f"{where}: its {len(edges)} lines form more than one loop (the "
                          f"first has {len(loop)}); a body is one closed contour")
    return np.array(loop)


def _check_panels(n_panels: int) -> None:
    if not (isinstance(n_panels, int | np.integer) and n_panels >= MIN_PANELS):
        raise ConfigError(f"a body needs an integer number of panels >= {MIN_PANELS}, got "
                          f"{n_panels!r}")

