"""Reference geometries of the papers, meshed with the gmsh API, with named markers.

Every generator takes a target cell count and returns the path it wrote; counts
land within a factor of about 1.5 of the target (mesh sizes come from
empirical constants). For a given gmsh version, the same arguments give the
same mesh, except that ``threads > 1`` lets gmsh's parallel 3D mesher (HXT)
number cells in thread order. The 2D geometries take ``order=2`` for second-order
elements whose wall edges follow the geometry (high-order DG's curved walls).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import onera_m6
from .atomic import atomic_path
from .io.gmsh_model import gmsh_session, mesh_from_model
from .mesh import Mesh
from .prism_layer import (
    boundary_loop,
    check_prisms,
    directed_edges,
    extrude,
    geometric_heights,
)
from .registry import Registry

#: Wall cell size (m) at which oneram6 gives about 100k tetrahedra (measured with
#: ONERA_M6_GROWTH: 106,562 at 0.02 m and 826,688 at 0.01 m, far = 20, cells ~ size^-2.95;
#: the leading-edge refinement adds about 4%: 109,825 and 307,549 for 100k and 300k).
ONERA_M6_SIZE_AT_100K = 0.0204
#: Cells of the ONERA M6 grow by this per metre from the wing (8: most cells near the
#: wing; at 1M cells about 40,000 wing faces, where a growth of 2 gave 6,700).
ONERA_M6_GROWTH = 8.0
#: Cells at the ONERA M6's leading edge are this fraction of the wall size, growing by
#: :data:`ONERA_M6_LEADING_EDGE_SLOPE` per unit distance from the edge. The leading-edge
#: radius is 1.5% of the chord (9 mm at 65% span), where the wall size at 1M cells is
#: 9.5 mm: at that size the edge was two or three faces round and the JST solution went
#: into a limit cycle at its suction peak on two meshes of five.
ONERA_M6_LEADING_EDGE_RATIO = 1 / 3
ONERA_M6_LEADING_EDGE_SLOPE = 0.3
#: First prism height (root chords) of a prism-layered ONERA M6: y+ about 1 at TMR's
#: Reynolds number of 14.6 million per root chord (``1 / (Re sqrt(Cf / 2))`` with Cf
#: 0.0025).
ONERA_M6_FIRST_LAYER = 2e-6
#: A prism-layered ONERA M6 (root chords, far = 20): tetrahedra times size**3 and wall
#: triangles times size**2 (measured: 458,586 and 6,011 at size 0.0316; 45,103 and 1,364
#: at 0.0691).
ONERA_M6_PRISM_COUNTS = (14.7, 6.3)

Generator = Callable[..., "Path | Mesh"]
GEOMETRIES: Registry[Generator] = Registry("geometry")
_register = GEOMETRIES.register


def generate(name: str, path: str | Path | None, cells: int, **options: object) -> Path | Mesh:
    """Mesh geometry ``name`` with about ``cells`` cells into ``path`` (gmsh ``.msh``).

    With ``path=None`` the mesh is returned in memory instead (no file round trip).
    """
    return GEOMETRIES.lookup(name)(None if path is None else Path(path), cells, **options)


def naca00xx(n: int, thickness: float = 0.12) -> np.ndarray:
    """Closed NACA 4-digit symmetric section: :func:`naca4` without camber."""
    return naca4(0.0, 0.0, thickness, n)


def naca4(camber: float, camber_position: float, thickness: float, n: int) -> np.ndarray:
    """Closed NACA 4-digit section, chord 1, cosine spacing, ``n`` points a side.

    ``camber`` and ``camber_position`` are the mean line's largest height and where it
    lies (NACA 2412: 0.02, 0.4, thickness 0.12); the thickness is laid off normal to the
    mean line. Returns ``(2n - 2, 2)`` points: from the trailing edge along the upper
    surface to the leading edge and back along the lower surface (counter-clockwise),
    the trailing edge not repeated. Uses the closed-trailing-edge coefficient (-0.1036).

    Examples
    --------
    >>> points = naca4(0.02, 0.4, 0.12, 41)
    >>> points.shape, float(points[:, 1].max().round(3)), float(points[:, 1].min().round(3))
    ((80, 2), 0.079, -0.042)
    """
    beta = np.linspace(0.0, np.pi, n)
    x = 0.5 * (1.0 - np.cos(beta))
    half = 5 * thickness * (0.2969 * np.sqrt(x) - 0.1260 * x - 0.3516 * x**2
                            + 0.2843 * x**3 - 0.1036 * x**4)
    mean, slope = np.zeros_like(x), np.zeros_like(x)
    if camber > 0:
        p = camber_position
        front = x < p
        mean = np.where(front, camber / p**2 * (2 * p * x - x**2),
                        camber / (1 - p) ** 2 * (1 - 2 * p + 2 * p * x - x**2))
        slope = np.where(front, 2 * camber / p**2 * (p - x), 2 * camber / (1 - p) ** 2 * (p - x))
    angle = np.arctan(slope)
    upper = np.column_stack([x - half * np.sin(angle), mean + half * np.cos(angle)])
    lower = np.column_stack([x + half * np.sin(angle), mean - half * np.cos(angle)])
    return np.concatenate([upper[::-1], lower[1:-1]])


def _write(gmsh: object, path: Path | None) -> Path | Mesh:
    """Write the model's mesh to ``path``; with no path, return it as a :class:`Mesh`."""
    if path is None:
        return mesh_from_model(gmsh, "generated")
    with atomic_path(path) as tmp:
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 1)
        gmsh.write(str(tmp))
    return path


def _deterministic(gmsh: object, threads: int = 1) -> None:
    gmsh.option.setNumber("Mesh.RandomSeed", 1)
    gmsh.option.setNumber("General.NumThreads", threads)


def _mesh_2d(gmsh: object, path: Path | None, markers: dict[str, list[int]],
             surfaces: list[int], *, frontal: bool = True, order: int = 1) -> Path | Mesh:
    """Name the boundary curves and the fluid, mesh in 2D and write (see :func:`_write`);
    ``order`` 2 gives second-order elements (triangle6, quad9) whose wall nodes lie on the
    geometry (see :func:`_second_order`)."""
    gmsh.model.geo.synchronize()
    for name, curves in markers.items():
        gmsh.model.addPhysicalGroup(1, curves, name=name)
    gmsh.model.addPhysicalGroup(2, surfaces, name="fluid")
    _deterministic(gmsh)
    if frontal:
        gmsh.option.setNumber("Mesh.Algorithm", 6)
    gmsh.model.mesh.generate(2)
    if order == 2:
        _second_order(gmsh)
    elif order != 1:
        raise ValueError(f"order must be 1 or 2, not {order!r}")
    return _write(gmsh, path)


def _second_order(gmsh: object) -> None:
    """Make the mesh second order: gmsh puts each boundary edge's mid node on its curve
    and the others at their edges' midpoints."""
    gmsh.model.mesh.setOrder(2)


def _airfoil_splines(geo: object, section: np.ndarray, size: float, *, scale: float = 1.0,
                     angle_deg: float = 0.0, offset: tuple[float, float] = (0.0, 0.0)
                     ) -> tuple[list[int], list[int]]:
    """Upper and lower splines of a section (rotated nose-up by ``-angle``), plus end points."""
    a = math.radians(angle_deg)
    rot = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    xy = section * scale @ rot.T + np.asarray(offset)
    tags = [geo.addPoint(x, y, 0.0, size) for x, y in xy]
    leading = (len(section) + 2) // 2 - 1
    upper = geo.addSpline(tags[: leading + 1])
    lower = geo.addSpline([*tags[leading:], tags[0]])
    return [upper, lower], [tags[0], tags[leading]]


def _farfield_circle(geo: object, centre: tuple[float, float], radius: float,
                     size: float) -> list[int]:
    c = geo.addPoint(centre[0], centre[1], 0.0, size)
    ring = [geo.addPoint(centre[0] + radius * math.cos(t), centre[1] + radius * math.sin(t),
                         0.0, size) for t in (0.0, math.pi / 2, math.pi, 1.5 * math.pi)]
    return [geo.addCircleArc(ring[i], c, ring[(i + 1) % 4]) for i in range(4)]


@_register("couette")
def couette(path: Path | None, cells: int, *, kind: str = "quad",
            length: float = 2.0, order: int = 1) -> Path | Mesh:
    """Structured channel ``length`` x 1 of quads, or of triangles (each quad split).

    Markers: ``bottom`` (fixed wall), ``top`` (moving wall), ``inlet``, ``outlet``.
    """
    per_quad = 1 if kind == "quad" else 2
    ny = max(1, round(math.sqrt(cells / per_quad / length)))
    nx = max(1, round(cells / per_quad / ny))
    with gmsh_session() as gmsh:
        geo = gmsh.model.geo
        p = [geo.addPoint(x, y, 0) for x, y in ((0, 0), (length, 0), (length, 1), (0, 1))]
        lines = [geo.addLine(p[i], p[(i + 1) % 4]) for i in range(4)]
        surface = geo.addPlaneSurface([geo.addCurveLoop(lines)])
        for line, n in zip(lines, (nx, ny, nx, ny), strict=True):
            geo.mesh.setTransfiniteCurve(line, n + 1)
        geo.mesh.setTransfiniteSurface(surface)
        if kind == "quad":
            geo.mesh.setRecombine(2, surface)
        names = ("bottom", "outlet", "top", "inlet")
        return _mesh_2d(gmsh, path, {n: [line] for n, line in zip(names, lines, strict=True)},
                        [surface], frontal=False, order=order)


@_register("naca0012-ogrid")
def naca0012_ogrid(path: Path | None, cells: int, *, farfield_radius: float = 20.0,
                   wall_spacing: float = 1e-3, order: int = 1) -> Path | Mesh:
    """Structured O-grid of quads around a NACA0012, far field ``farfield_radius`` chords.

    Two transfinite halves (upper, lower) with geometric radial clustering to the
    wall. Markers: ``airfoil``, ``farfield``.
    """
    n_radial = max(8, round(math.sqrt(cells / 4)))
    n_side = max(8, round(cells / 2 / n_radial))
    ratio = _growth(wall_spacing, farfield_radius, n_radial)
    with gmsh_session() as gmsh:
        geo = gmsh.model.geo
        (upper, lower), (te, le) = _airfoil_splines(geo, naca00xx(200), 0.01)
        centre = geo.addPoint(0.5, 0.0, 0.0)
        right = geo.addPoint(0.5 + farfield_radius, 0.0, 0.0)
        left = geo.addPoint(0.5 - farfield_radius, 0.0, 0.0)
        arc_top = geo.addCircleArc(right, centre, left)
        arc_bottom = geo.addCircleArc(left, centre, right)
        cut_te, cut_le = geo.addLine(te, right), geo.addLine(le, left)
        top = geo.addPlaneSurface([geo.addCurveLoop([upper, cut_le, -arc_top, -cut_te])])
        bottom = geo.addPlaneSurface([geo.addCurveLoop([lower, cut_te, -arc_bottom, -cut_le])])
        for curve in (upper, lower, arc_top, arc_bottom):
            geo.mesh.setTransfiniteCurve(curve, n_side + 1, "Bump", 0.2)
        for curve in (cut_te, cut_le):
            geo.mesh.setTransfiniteCurve(curve, n_radial + 1, "Progression", ratio)
        for surface in (top, bottom):
            geo.mesh.setTransfiniteSurface(surface)
            geo.mesh.setRecombine(2, surface)
        return _mesh_2d(gmsh, path, {"airfoil": [upper, lower],
                                     "farfield": [arc_top, arc_bottom]}, [top, bottom],
                        frontal=False, order=order)


def _growth(first: float, total: float, n: int) -> float:
    """Ratio r with first * (r**n - 1) / (r - 1) = total (geometric spacing)."""
    lo, hi = 1.0 + 1e-9, 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if first * (mid**n - 1) / (mid - 1) < total:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@_register("naca0012-tri")
def naca0012_triangles(path: Path | None, cells: int, *,
                       farfield_radius: float = 20.0, order: int = 1) -> Path | Mesh:
    """Unstructured triangles around a NACA0012 in a circular far field.

    Markers: ``airfoil``, ``farfield``.
    """
    wall = 0.36 / math.sqrt(cells)  # empirical: 8,000 cells at wall size 0.004
    with gmsh_session() as gmsh:
        geo = gmsh.model.geo
        foil, _ = _airfoil_splines(geo, naca00xx(120), wall)
        arcs = _farfield_circle(geo, (0.5, 0.0), farfield_radius, 500 * wall)
        surface = geo.addPlaneSurface([geo.addCurveLoop(arcs), geo.addCurveLoop(foil)])
        return _mesh_2d(gmsh, path, {"airfoil": foil, "farfield": arcs}, [surface],
                        order=order)


@_register("cylinder")
def cylinder(path: Path | None, cells: int, *, farfield_radius: float = 20.0,
             ring_radius: float = 1.0, first_layer: float = 0.1, order: int = 1
             ) -> Path | Mesh:
    """Cylinder of diameter 1: a structured quad ring at the wall, triangles outside.

    The ring's first cell is ``first_layer`` times as high as the wall's cells are long
    (0.1 for second-order finite volumes; high-order DG resolves the boundary layer inside
    thicker cells, and their explicit time step grows with the height squared).

    Markers: ``cylinder``, ``farfield``.
    """
    n_around = max(16, 4 * round(math.sqrt(cells) / 2.9))
    n_ring = max(4, n_around // 6)
    wall = 2 * math.pi * 0.5 / n_around
    with gmsh_session() as gmsh:
        geo = gmsh.model.geo
        centre = geo.addPoint(0, 0, 0)
        angles = [k * math.pi / 2 for k in range(4)]
        inner = [geo.addPoint(0.5 * math.cos(t), 0.5 * math.sin(t), 0, wall) for t in angles]
        outer = [geo.addPoint(ring_radius * math.cos(t), ring_radius * math.sin(t), 0,
                              wall * ring_radius / 0.5) for t in angles]
        wall_arcs = [geo.addCircleArc(inner[i], centre, inner[(i + 1) % 4]) for i in range(4)]
        ring_arcs = [geo.addCircleArc(outer[i], centre, outer[(i + 1) % 4]) for i in range(4)]
        spokes = [geo.addLine(inner[i], outer[i]) for i in range(4)]
        ring = []
        for i in range(4):
            loop = geo.addCurveLoop([wall_arcs[i], spokes[(i + 1) % 4], -ring_arcs[i], -spokes[i]])
            ring.append(geo.addPlaneSurface([loop]))
        for arc in wall_arcs + ring_arcs:
            geo.mesh.setTransfiniteCurve(arc, n_around // 4 + 1)
        ratio = _growth(wall * first_layer, ring_radius - 0.5, n_ring)
        for spoke in spokes:
            geo.mesh.setTransfiniteCurve(spoke, n_ring + 1, "Progression", ratio)
        for s in ring:
            geo.mesh.setTransfiniteSurface(s)
            geo.mesh.setRecombine(2, s)
        far = _farfield_circle(geo, (0.0, 0.0), farfield_radius, 1.5)
        outside = geo.addPlaneSurface([geo.addCurveLoop(far), geo.addCurveLoop(ring_arcs)])
        return _mesh_2d(gmsh, path, {"cylinder": wall_arcs, "farfield": far},
                        [*ring, outside], order=order)


@_register("flap")
def two_element_airfoil(path: Path | None, cells: int, *, farfield_radius: float = 20.0,
                        flap_angle_deg: float = 20.0, order: int = 1) -> Path | Mesh:
    """Main NACA0012 plus a 30%-chord flap deflected ``flap_angle_deg``, unstructured.

    Markers: ``main``, ``flap``, ``farfield``.
    """
    wall = 0.67 / math.sqrt(cells)  # empirical constant
    with gmsh_session() as gmsh:
        geo = gmsh.model.geo
        section = naca00xx(100)
        main, _ = _airfoil_splines(geo, section, wall)
        flap, _ = _airfoil_splines(geo, section, wall * 0.6, scale=0.3, angle_deg=flap_angle_deg,
                                   offset=(0.97, -0.04))
        arcs = _farfield_circle(geo, (0.5, 0.0), farfield_radius, 400 * wall)
        surface = geo.addPlaneSurface([geo.addCurveLoop(arcs), geo.addCurveLoop(main),
                                       geo.addCurveLoop(flap)])
        return _mesh_2d(gmsh, path, {"main": main, "flap": flap, "farfield": arcs}, [surface],
                        order=order)


@_register("box")
def box(path: Path | None, cells: int, *, threads: int = 1) -> Path | Mesh:
    """Unit cube of unstructured tetrahedra. Markers ``xmin`` ... ``zmax``."""
    size = (5.9 / cells) ** (1 / 3)  # empirical: Delaunay gives ~5.9 / h**3 tets
    with gmsh_session() as gmsh:
        volume = gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
        gmsh.model.occ.synchronize()
        for tag in range(1, 7):
            gmsh.model.addPhysicalGroup(2, [tag], name=f"{'xyz'[(tag - 1) // 2]}"
                                                       f"{('min', 'max')[(tag - 1) % 2]}")
        gmsh.model.addPhysicalGroup(3, [volume], name="fluid")
        gmsh.option.setNumber("Mesh.MeshSizeMax", size)
        gmsh.option.setNumber("Mesh.MeshSizeMin", size)
        _deterministic(gmsh, threads)
        gmsh.option.setNumber("Mesh.Algorithm3D", 10 if threads > 1 else 1)
        gmsh.model.mesh.generate(3)
        return _write(gmsh, path)


#: The swept wing's span (root chords), leading-edge sweep (degrees) and taper.
WING_SPAN, WING_SWEEP_DEG, WING_TAPER = 3.0, 30.0, 0.5
#: Points of the swept wing's NACA 0012 section (:func:`naca00xx`) that its spline joins.
WING_SECTION_POINTS = 80


@_register("wing")
def swept_wing(path: Path | None, cells: int, *, span: float = WING_SPAN,
               sweep_deg: float = WING_SWEEP_DEG, taper: float = WING_TAPER, far: float = 8.0,
               threads: int = 1, prism_layers: int = 5,
               first_height: float = 0.05, growth: float = 1.4) -> Path | Mesh:
    """Half-model swept, tapered NACA0012 wing in a box: a prism layer, then tetrahedra.

    Axes as for :func:`oneram6` and the solver's angle of attack: x chordwise, y
    spanwise from the root on the symmetry plane ``y = 0``, z up (the wing is
    built spanwise along z and turned about x at the end). Cell size grows linearly with
    the distance from the wing, the whole field scaled so that the count follows
    the target. ``prism_layers`` layers of prisms (first layer ``first_height``
    times the wall cell size, each next ``growth`` times thicker) are extruded from
    the wall along its node normals (:mod:`meshorder.prism_layer`), staying in the
    symmetry plane at the root; gmsh fills the rest with tetrahedra. With
    ``prism_layers=0``, tetrahedra only, the wing cut from the box by OpenCASCADE.
    Markers: ``wing``, ``symmetry``, ``farfield``.
    """
    if prism_layers < 0:
        raise ValueError(f"prism_layers must be 0 (none) or more, got {prism_layers}")
    size = _wing_cell_size(cells, prism_layers)
    planform = _Planform(span, span * math.tan(math.radians(sweep_deg)), taper)
    with gmsh_session() as gmsh:
        _deterministic(gmsh, threads)
        gmsh.option.setNumber("Mesh.Algorithm3D", 10 if threads > 1 else 1)
        if prism_layers == 0:
            _tetrahedral_wing(gmsh, planform, size, far)
            gmsh.model.mesh.generate(3)
        else:
            heights = geometric_heights(first_height * size, growth, prism_layers)
            _prism_layered_wing(gmsh, planform, size, far, heights)
        gmsh.model.mesh.affineTransform(_SPAN_Z_TO_Y)
        return _write(gmsh, path)


@_register("oneram6")
def oneram6(path: Path | None, cells: int, *, far: float = 20.0, threads: int = 1,
            prism_layers: int = 0, first_layer: float | None = None) -> Path | Mesh:
    """The ONERA M6 half wing (:mod:`meshorder.onera_m6`) in a box, in metres.

    x chordwise, y spanwise from the symmetry plane ``y = 0`` (the root), z up; the far
    field ``far`` root chords from the wing on every other side. Cell size grows
    linearly with the distance from the wing, the whole field scaled so that the count
    follows the target. Tetrahedra only by default (Euler). With ``prism_layers`` (RANS):
    that many layers of prisms on the wing, the first ``first_layer`` root chords thick
    (default :data:`ONERA_M6_FIRST_LAYER`: y+ about 1 at TMR's Reynolds number of 14.6
    million per root chord), growing geometrically to half the wall cells' size; the
    trailing edge is sharp (the section's 0.14% closed), tetrahedra beyond the layers.
    Markers: ``wing``, ``symmetry``, ``farfield``.
    """
    if far <= 0:
        raise ValueError(f"far must be positive, got {far}")
    if prism_layers < 0:
        raise ValueError(f"prism_layers must be 0 (none) or more, got {prism_layers}")
    if first_layer is not None and not prism_layers:
        raise ValueError("first_layer is the first prism's height: give prism_layers too")
    if prism_layers:
        return _oneram6_prism_layered(path, cells, far, threads, prism_layers,
                                      ONERA_M6_FIRST_LAYER if first_layer is None
                                      else first_layer)
    root, tip, tip_x = onera_m6.planform()
    with gmsh_session() as gmsh:
        _deterministic(gmsh, threads)
        gmsh.option.setNumber("Mesh.Algorithm3D", 10 if threads > 1 else 1)
        wing = _oneram6_solid(gmsh.model.occ)
        reach = far * root
        lo = np.array([-reach, 0.0, -reach])
        hi = np.array([tip_x + tip + reach, onera_m6.SEMI_SPAN + reach, reach])
        size = _oneram6_cell_size(cells)
        leading_edge = _segment_size((0.0, 0.0, 0.0), (tip_x, onera_m6.SEMI_SPAN, 0.0),
                                     ONERA_M6_LEADING_EDGE_RATIO * size,
                                     ONERA_M6_LEADING_EDGE_SLOPE)
        # far fields hundreds of chords out: cells keep growing, so their count stays bounded
        _wing_in_box(gmsh, wing, lo, hi, 1, size, growth_cap=max(60.0, 0.2 * reach / size),
                     growth_rate=ONERA_M6_GROWTH, finer=[leading_edge])
        gmsh.model.mesh.generate(3)
        return _write(gmsh, path)


def _oneram6_solid(occ: object) -> list[tuple[int, int]]:
    """The ONERA M6 half wing as an OpenCASCADE solid in metres, ruled between its root
    and tip sections, span along y."""
    root, tip, tip_x = onera_m6.planform()
    wires = []
    for y, chord, shift in ((0.0, root, 0.0), (onera_m6.SEMI_SPAN, tip, tip_x)):
        pts = [occ.addPoint(shift + chord * x, y, chord * z) for x, z in onera_m6.onera_d()]
        wires.append(occ.addWire([occ.addSpline([*pts, pts[0]])]))
    return occ.addThruSections(wires, makeSolid=True, makeRuled=True)


class BodySection(NamedTuple):
    """A generated wing as its section and planform, in the meshes' axes (x chordwise, y
    spanwise from the root at ``y = 0``, z up): at span ``y`` the wing is the unit-chord
    ``section`` (x, thickness; closed, last point not repeated, as the generator splines
    it) scaled to the chord there and shifted to its leading edge, the thickness along
    ``up`` times z; chord and leading edge vary linearly from the root to the tip."""

    section: np.ndarray
    root_chord: float
    tip_chord: float
    tip_shift: float
    span: float
    up: float


def body_section(geometry: str) -> BodySection:
    """The section and planform of ``geometry``'s body (``wing`` or ``oneram6``), as
    :func:`swept_wing` and :func:`oneram6` loft it."""
    if geometry == "oneram6":
        root, tip, tip_x = onera_m6.planform()
        return BodySection(onera_m6.onera_d(), root, tip, tip_x, onera_m6.SEMI_SPAN, 1.0)
    if geometry == "wing":  # built spanwise along z, its thickness along y, then turned
        return BodySection(naca00xx(WING_SECTION_POINTS), 1.0, WING_TAPER,
                           WING_SPAN * math.tan(math.radians(WING_SWEEP_DEG)), WING_SPAN, -1.0)
    raise ValueError(f"no body for {geometry!r}: wing or oneram6")


def _oneram6_prism_layered(path: Path | None, cells: int, far: float, threads: int,
                           prism_layers: int, first_layer: float) -> Path | Mesh:
    """:func:`oneram6` with prism layers: built in root chords with the span along z by
    :func:`_prism_layered_wing`, then turned and scaled to metres."""
    root, _, tip_x = onera_m6.planform()
    planform = _Planform(onera_m6.SEMI_SPAN / root, tip_x / root, onera_m6.TAPER)
    size = _wing_cell_size(cells, prism_layers, ONERA_M6_PRISM_COUNTS)
    total = 0.5 * size
    if first_layer * prism_layers >= total:
        raise ValueError(f"{prism_layers} layers of {first_layer} root chords are thicker "
                         f"than half the wall cells ({total:.3g} root chords at {cells} "
                         "cells): fewer or thinner layers, or fewer cells")
    heights = geometric_heights(first_layer, _growth(first_layer, total, prism_layers),
                                prism_layers)
    with gmsh_session() as gmsh:
        _deterministic(gmsh, threads)
        gmsh.option.setNumber("Mesh.Algorithm3D", 10 if threads > 1 else 1)
        _prism_layered_wing(gmsh, planform, size, far, heights, onera_m6.onera_d())
        gmsh.model.mesh.affineTransform([root * x for x in _SPAN_Z_TO_Y])
        return _write(gmsh, path)


def _oneram6_cell_size(cells: int) -> float:
    """Wall cell size (m) that gives about ``cells`` tetrahedra (far = 20 measured).

    At most the size of 100k cells: coarser walls stall gmsh's 3D mesher.
    """
    return ONERA_M6_SIZE_AT_100K * min(1.0, 1e5 / cells) ** (1 / 3)


_SPAN_Z_TO_Y = [1.0, 0.0, 0.0, 0.0,  # rotation by -90 deg about x: (x, y, z) -> (x, z, -y)
                0.0, 0.0, 1.0, 0.0,
                0.0, -1.0, 0.0, 0.0]


def _wing_cell_size(cells: int, prism_layers: int, counts: tuple[float, float] = (17.0, 11.6)
                    ) -> float:
    """Wall cell size that gives about ``cells`` cells; coarser walls break the 3D mesher.

    ``counts``: the tetrahedra times ``size**3`` and the wall triangles times ``size**2``
    (the swept wing's by default, measured at size 0.0303: 627,794 tetrahedra, 17.5 /
    size**3, 21.0 at 0.046; 12,640 wall triangles, 11.6 / size**2).
    """
    if prism_layers == 0:  # measured: 302k tets at 0.04, N ~ size**-3
        return min(0.1, 0.04 * (3.02e5 / cells) ** (1 / 3))
    tetrahedra, triangles = counts
    lo, hi = 1e-4, 0.1
    for _ in range(60):  # bisection: the count falls as the size grows
        mid = 0.5 * (lo + hi)
        count = tetrahedra * mid**-3 + triangles * prism_layers * mid**-2
        lo, hi = (mid, hi) if count > cells else (lo, mid)
    return hi


class _Planform(NamedTuple):
    """Span, leading-edge offset of the tip (sweep) and tip/root chord ratio."""

    span: float
    dx: float
    taper: float

    def box(self, far: float) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corners of the far-field box, ``far`` chords around the wing."""
        return (np.array([-far, -far, 0.0]),
                np.array([1.0 + self.dx + far, far, self.span + far]))


def _wing_solid(occ: object, planform: _Planform, section: np.ndarray | None = None
                ) -> list[tuple[int, int]]:
    """The wing as an OpenCASCADE solid lofted from the root and tip sections (``section``:
    the closed unit-chord section, NACA 0012 by default)."""
    section = naca00xx(WING_SECTION_POINTS) if section is None else section
    wires = []
    for z, scale, shift in ((0.0, 1.0, 0.0), (planform.span, planform.taper, planform.dx)):
        xy = section * scale + np.array([shift, 0.0])
        pts = [occ.addPoint(x, y, z) for x, y in xy]
        wires.append(occ.addWire([occ.addSpline([*pts, pts[0]])]))
    return occ.addThruSections(wires, makeSolid=True, makeRuled=False)


def _size_options(gmsh: object) -> None:
    """Mesh sizes from the background field only."""
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)


def _tetrahedral_wing(gmsh: object, planform: _Planform, size: float, far: float) -> None:
    """Box minus wing (OpenCASCADE), sized by the distance to the wing surfaces."""
    lo, hi = planform.box(far)
    _wing_in_box(gmsh, _wing_solid(gmsh.model.occ, planform), lo, hi, 2, size)


def _segment_size(start: tuple[float, float, float], end: tuple[float, float, float],
                  size: float, slope: float) -> str:
    """A gmsh MathEval size: ``size`` on the segment ``start``-``end``, growing by ``slope``
    per unit distance from it."""
    (x0, y0, z0), (x1, y1, z1) = start, end
    dx, dy, dz = x1 - x0, y1 - y0, z1 - z0
    along = f"Max(0, Min(1, ((x - {x0}) * {dx} + (y - {y0}) * {dy} + (z - {z0}) * {dz}) / " \
            f"{dx * dx + dy * dy + dz * dz}))"
    distance = (f"Sqrt((x - {x0} - {dx} * {along})^2 + (y - {y0} - {dy} * {along})^2 "
                f"+ (z - {z0} - {dz} * {along})^2)")
    return f"{size} + {slope} * {distance}"


def _wing_in_box(gmsh: object, wing: list, lo: np.ndarray, hi: np.ndarray, span_axis: int,
                 size: float, growth_cap: float = 60.0, growth_rate: float = 2.0,
                 finer: Sequence[str] = ()) -> None:
    """Cut ``wing`` from the box ``lo``-``hi``, name its surfaces, size cells by distance.

    The box face at ``lo[span_axis]`` is the symmetry plane; its other faces are far
    field. Cells grow linearly with the distance ``d`` from the wing (in its units), as
    ``size (1 + growth_rate d)``, up to ``growth_cap`` times ``size``; ``finer``: gmsh
    MathEval sizes (of x, y, z) that refine that where they are smaller.
    """
    occ = gmsh.model.occ
    box_ = occ.addBox(*lo, *(hi - lo))
    fluid, _ = occ.cut([(3, box_)], wing)
    occ.synchronize()
    wall, symmetry, farfield = [], [], []
    for _, tag in gmsh.model.getBoundary(fluid, oriented=False):
        box_lo, box_hi = np.split(np.array(gmsh.model.getBoundingBox(2, tag)), 2)
        flat_on = [np.abs(box_lo - edge) + np.abs(box_hi - edge) < 1e-5 for edge in (lo, hi)]
        if flat_on[0][span_axis]:
            symmetry.append(tag)
        elif np.any(flat_on[0]) or np.any(flat_on[1]):
            farfield.append(tag)
        else:
            wall.append(tag)
    _name_wing_groups(gmsh, wall, symmetry, farfield, [fluid[0][1]])
    field = gmsh.model.mesh.field
    distance = field.add("Distance")
    field.setNumbers(distance, "SurfacesList", wall)
    field.setNumber(distance, "Sampling", 60)
    graded = field.add("MathEval")  # size grows linearly away from the wing, all scaled by size
    field.setString(graded, "F",
                    f"{size} * min(1 + {growth_rate} * F{distance}, {growth_cap})")
    sizes = [graded]
    for expression in finer:
        sizes.append(field.add("MathEval"))
        field.setString(sizes[-1], "F", expression)
    smallest = field.add("Min")
    field.setNumbers(smallest, "FieldsList", sizes)
    field.setAsBackgroundMesh(smallest)
    _size_options(gmsh)


def _name_wing_groups(gmsh: object, wall: list[int], symmetry: list[int], farfield: list[int],
                      fluid: list[int]) -> None:
    gmsh.model.addPhysicalGroup(2, wall, name="wing")
    gmsh.model.addPhysicalGroup(2, symmetry, name="symmetry")
    gmsh.model.addPhysicalGroup(2, farfield, name="farfield")
    gmsh.model.addPhysicalGroup(3, fluid, name="fluid")


def _wall_triangles(gmsh: object, planform: _Planform, size: float,
                    section: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The wing's wall (sides and tip, not the root) meshed at ``size``, facing outwards
    (``section``: as :func:`_wing_solid`).

    Returns the nodes (root nodes exactly at ``z = 0``) and triangles. gmsh orients
    each CAD face's triangles by that face's parametrisation, so faces are made
    consistent through shared edges and the whole closed surface is turned
    outwards by the sign of its enclosed volume.
    """
    wing = _wing_solid(gmsh.model.occ, planform, section)
    gmsh.model.occ.synchronize()
    gmsh.option.setNumber("Mesh.MeshSizeMin", size)
    gmsh.option.setNumber("Mesh.MeshSizeMax", size)
    _size_options(gmsh)
    # MeshAdapt: the frontal mesher hangs on this lofted surface at some sizes (0.0905)
    gmsh.option.setNumber("Mesh.Algorithm", 1)
    gmsh.model.mesh.generate(2)
    gmsh.option.setNumber("Mesh.Algorithm", 6)
    gmsh.option.setNumber("Mesh.MeshSizeMin", 0)
    gmsh.option.setNumber("Mesh.MeshSizeMax", 1e22)
    tags, coords, _ = gmsh.model.mesh.getNodes()
    index = np.zeros(int(tags.max()) + 1, dtype=np.int64)
    index[tags.astype(np.int64)] = np.arange(len(tags))
    points = coords.reshape(-1, 3)
    faces = {}
    for _, face in gmsh.model.getBoundary(wing, oriented=False):
        _, _, nodes = gmsh.model.mesh.getElements(2, face)
        faces[face] = index[nodes[0].astype(np.int64)].reshape(-1, 3)
    faces = _consistently_oriented(faces)
    closed = points[np.concatenate(list(faces.values()))]
    if np.einsum("ij,ij->", closed[:, 0], np.cross(closed[:, 1], closed[:, 2])) < 0:
        faces = {face: triangles[:, ::-1] for face, triangles in faces.items()}
    wall = np.concatenate([t for t in faces.values()  # all but the root face (z = 0)
                           if np.abs(points[t, 2]).max() > 1e-9])
    used, wall = np.unique(wall, return_inverse=True)
    points = points[used].copy()
    points[np.abs(points[:, 2]) < 1e-9, 2] = 0.0
    gmsh.clear()
    return points, wall.reshape(-1, 3)


def _consistently_oriented(faces: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Flip whole faces so that every edge two faces share runs opposite ways in them."""
    def directed(triangles):
        return set(map(tuple, directed_edges(triangles).tolist()))

    first = next(iter(faces))
    done, queue = {first}, [first]
    while queue:
        edges = directed(faces[queue.pop()])
        for face in faces.keys() - done:
            theirs = directed(faces[face])
            if edges & theirs:
                faces[face] = faces[face][:, ::-1]
            elif not edges & {(b, a) for a, b in theirs}:
                continue
            done.add(face)
            queue.append(face)
    return faces


def _prism_layered_wing(gmsh: object, planform: _Planform, size: float, far: float,
                        heights: np.ndarray, section: np.ndarray | None = None) -> None:
    """Prisms extruded from the wall, the rest of the box left to gmsh's tetrahedra
    (``section``: as :func:`_wing_solid`).

    The layer's top surface becomes a discrete surface whose root loop is a hole
    in the symmetry face of a built-in-kernel box; gmsh meshes the box faces, then
    the volume between them and the top surface. The prisms, the wall and the
    prisms' faces on the symmetry plane are added afterwards as discrete entities
    (gmsh would try to mesh them again otherwise).
    """
    points, wall = _wall_triangles(gmsh, planform, size, section)
    on_root = points[:, 2] == 0.0
    layer = extrude(points, wall, heights, symmetry_axis=2)
    check_prisms(layer.points.reshape(-1, 3), layer.prisms)
    root = boundary_loop(wall, on_root)
    top = layer.points[-1]
    geo = gmsh.model.geo
    root_points = [geo.addPoint(*top[i]) for i in root]
    root_lines = [geo.addLine(a, b) for a, b in zip(root_points, np.roll(root_points, -1),
                                                      strict=True)]
    symmetry, farfield = _box_faces(geo, *planform.box(far), geo.addCurveLoop(root_lines))
    geo.synchronize()
    for line in root_lines:
        gmsh.model.mesh.setTransfiniteCurve(line, 2)  # the loop's nodes are the layer's
    _planform_size_field(gmsh, planform, size)
    gmsh.model.mesh.generate(2)

    n_layers, n_nodes = len(heights), len(points)
    node_tags = np.zeros((n_layers + 1, n_nodes), dtype=np.int64)
    node_tags[-1] = int(gmsh.model.mesh.getMaxNodeTag()) + 1 + np.arange(n_nodes)
    node_tags[-1, root] = [gmsh.model.mesh.getNodes(0, p)[0][0] for p in root_points]
    inside = np.setdiff1d(np.arange(n_nodes), root)
    top_surface = gmsh.model.addDiscreteEntity(2, -1, root_lines)
    gmsh.model.mesh.addNodes(2, top_surface, node_tags[-1, inside].tolist(),
                             top[inside].ravel().tolist())
    gmsh.model.mesh.addElementsByType(top_surface, 2, [], node_tags[-1][wall].ravel().tolist())
    tetrahedra = gmsh.model.addDiscreteEntity(3, -1, [symmetry, *farfield, top_surface])
    gmsh.option.setNumber("Mesh.Renumber", 0)  # keep the top surface's node tags
    gmsh.model.mesh.generate(3)

    node_tags[:-1] = (int(gmsh.model.mesh.getMaxNodeTag()) + 1
                      + np.arange(n_layers * n_nodes).reshape(n_layers, n_nodes))
    wall_surface = gmsh.model.addDiscreteEntity(2)
    layer_symmetry = gmsh.model.addDiscreteEntity(2)
    prisms = gmsh.model.addDiscreteEntity(3, -1, [wall_surface, top_surface, layer_symmetry])
    gmsh.model.mesh.addNodes(2, wall_surface, node_tags[0].tolist(), points.ravel().tolist())
    gmsh.model.mesh.addNodes(3, prisms, node_tags[1:-1].ravel().tolist(),
                             layer.points[1:-1].ravel().tolist())
    gmsh.model.mesh.addElementsByType(wall_surface, 2, [], node_tags[0][wall].ravel().tolist())
    root_edges = np.column_stack([root, np.roll(root, -1)])
    side_quads = np.concatenate([np.column_stack([node_tags[k][root_edges],
                                                  node_tags[k + 1][root_edges[:, ::-1]]])
                                 for k in range(n_layers)])
    gmsh.model.mesh.addElementsByType(layer_symmetry, 3, [], side_quads.ravel().tolist())
    gmsh.model.mesh.addElementsByType(prisms, 6, [],
                                      node_tags.ravel()[layer.prisms].ravel().tolist())
    _name_wing_groups(gmsh, [wall_surface], [symmetry, layer_symmetry], farfield,
                      [tetrahedra, prisms])


def _box_faces(geo: object, lo: np.ndarray, hi: np.ndarray, hole: int) -> tuple[int, list[int]]:
    """Six plane faces of the box ``lo``-``hi`` (built-in kernel); ``hole`` cut from z = lo.

    Returns the ``z = lo`` face and the other five.
    """
    corner = {(i, j, k): geo.addPoint(*np.where([i, j, k], hi, lo))
              for i in (0, 1) for j in (0, 1) for k in (0, 1)}
    lines: dict[tuple, int] = {}

    def loop(*keys):
        curves = []
        for a, b in zip(keys, keys[1:] + keys[:1], strict=True):
            if (b, a) in lines:
                curves.append(-lines[b, a])
            else:
                lines[a, b] = lines.get((a, b)) or geo.addLine(corner[a], corner[b])
                curves.append(lines[a, b])
        return geo.addCurveLoop(curves)

    bottom = geo.addPlaneSurface([loop((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)), hole])
    others = [geo.addPlaneSurface([loop(*face)]) for face in (
        ((0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)), ((0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)),
        ((0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 1, 1)), ((0, 0, 0), (0, 1, 0), (0, 1, 1), (0, 0, 1)),
        ((1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1)))]
    return bottom, others


def _planform_size_field(gmsh: object, planform: _Planform, size: float) -> None:
    """Size growing linearly with the distance to the wing's planform (its mean surface)."""
    span, dx, taper = planform
    zc = f"Max(0, Min(z, {span}))"
    lead = f"{dx} * {zc} / {span}"
    trail = f"({lead} + 1 - {1 - taper} * {zc} / {span})"
    outside = f"Max(Max({lead} - x, x - {trail}), 0)"
    distance = f"Sqrt({outside}^2 + y^2 + (z - {zc})^2)"
    field = gmsh.model.mesh.field
    graded = field.add("MathEval")
    field.setString(graded, "F", f"{size} * Min(1 + 2 * {distance}, 60)")
    field.setAsBackgroundMesh(graded)
    _size_options(gmsh)
