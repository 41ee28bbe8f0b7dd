"""Reference geometries meshed with the gmsh API, with named boundary markers.

Deterministic for a given gmsh version: same arguments, same mesh.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .atomic import atomic_path
from .io.gmsh_model import gmsh_session


def naca00xx(n: int, thickness: float = 0.12) -> np.ndarray:
    """Closed NACA 4-digit symmetric section, chord 1, from the trailing edge round.

    Uses cosine spacing with ``n`` points per side and the closed-trailing-edge
    coefficient (-0.1036). Returns ``(2n - 2, 2)`` points, trailing edge first,
    along the upper surface to the leading edge and back along the lower surface,
    without repeating the trailing edge.
    """
    beta = np.linspace(0.0, np.pi, n)
    x = 0.5 * (1.0 - np.cos(beta))
    y = 5 * thickness * (0.2969 * np.sqrt(x) - 0.1260 * x - 0.3516 * x**2
                         + 0.2843 * x**3 - 0.1036 * x**4)
    upper = np.column_stack([x[::-1], y[::-1]])
    lower = np.column_stack([x[1:-1], -y[1:-1]])
    return np.concatenate([upper, lower])


def naca0012_triangles(path: str | Path, *, wall_size: float = 0.004,
                       far_size: float = 2.0, farfield_radius: float = 20.0,
                       points_per_side: int = 120) -> None:
    """Unstructured triangle mesh around a NACA0012 in a circular far field.

    Markers: ``airfoil`` and ``farfield``. Written atomically in gmsh 4.1 format.

    Parameters
    ----------
    path : str or pathlib.Path
        Output ``.msh`` file.
    wall_size, far_size : float
        Target edge length on the airfoil and on the far field (chords).
    farfield_radius : float
        Far-field radius in chords, centred at mid-chord.
    points_per_side : int
        Spline control points per airfoil side.
    """
    section = naca00xx(points_per_side)
    with gmsh_session() as gmsh:
        gmsh.model.add("naca0012")
        geo = gmsh.model.geo
        tags = [geo.addPoint(x, y, 0.0, wall_size) for x, y in section]
        leading = points_per_side - 1
        upper = geo.addSpline(tags[: leading + 1])
        lower = geo.addSpline([*tags[leading:], tags[0]])
        centre = geo.addPoint(0.5, 0.0, 0.0, far_size)
        ring = [geo.addPoint(0.5 + farfield_radius * np.cos(a), farfield_radius * np.sin(a),
                             0.0, far_size) for a in (0.0, np.pi / 2, np.pi, 1.5 * np.pi)]
        arcs = [geo.addCircleArc(ring[i], centre, ring[(i + 1) % 4]) for i in range(4)]
        outer = geo.addCurveLoop(arcs)
        inner = geo.addCurveLoop([upper, lower])
        surface = geo.addPlaneSurface([outer, inner])
        geo.synchronize()
        gmsh.model.addPhysicalGroup(1, [upper, lower], name="airfoil")
        gmsh.model.addPhysicalGroup(1, arcs, name="farfield")
        gmsh.model.addPhysicalGroup(2, [surface], name="fluid")
        gmsh.option.setNumber("Mesh.Algorithm", 6)
        gmsh.option.setNumber("Mesh.RandomSeed", 1)
        gmsh.model.mesh.generate(2)
        with atomic_path(path) as tmp:
            gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
            gmsh.option.setNumber("Mesh.Binary", 1)
            gmsh.write(str(tmp))
