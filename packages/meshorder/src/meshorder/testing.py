"""Small structured meshes built in memory, for tests, examples and scaling runs."""

from __future__ import annotations

import itertools

import numpy as np

from .geometry import signed_measures
from .mesh import CellBlock, Mesh
from .topology import Topology

SIDES_2D = ("left", "right", "bottom", "top")
SIDES_3D = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")


def _grid_points(*counts: int) -> np.ndarray:
    axes = [np.linspace(0.0, 1.0, n + 1) for n in counts]
    mesh = np.meshgrid(*axes, indexing="ij")
    pts = np.column_stack([m.ravel() for m in mesh])
    return pts if pts.shape[1] == 3 else np.column_stack([pts, np.zeros(len(pts))])


def _with_side_markers(points: np.ndarray, blocks: list[tuple[str, np.ndarray]],
                       sides: tuple[str, ...], source: str) -> Mesh:
    """Attach boundary facets, marked by the side of the unit box they lie on."""
    bare = Mesh.from_blocks(points, [(t, c, None) for t, c in blocks], source=source)
    topo = Topology(bare)
    faces = topo.face_nodes[~topo.interior]
    dim = bare.dim
    facet_blocks = []
    for width in sorted({int((f >= 0).sum()) for f in faces}):
        rows = faces[(faces >= 0).sum(axis=1) == width][:, :width]
        centre = points[rows].mean(axis=1)[:, :dim]
        side = np.argmax(np.column_stack([np.abs(centre - 0.0), np.abs(centre - 1.0)])
                         .reshape(len(rows), 2, dim).transpose(0, 2, 1).reshape(len(rows), -1)
                         < 1e-12, axis=1)
        facet_type = {2: "line", 3: "triangle", 4: "quad"}[width]
        facet_blocks.append((facet_type, rows, side))
    names = dict(enumerate(sides))
    return Mesh.from_blocks(points, [(t, c, None) for t, c in blocks] + facet_blocks,
                            names, source)


def grid_mesh(nx: int, ny: int, kind: str = "quad") -> Mesh:
    """Unit square of ``nx`` by ``ny`` quads (or twice as many triangles, or ``mixed``:
    triangles on the left half, quads on the right), sides marked.

    Cells are numbered column by column (y fastest, then x);
    markers are ``left``, ``right``, ``bottom``, ``top``.

    Examples
    --------
    >>> grid_mesh(2, 3).n_cells, grid_mesh(2, 3, "triangle").n_cells
    (6, 12)
    """
    points = _grid_points(nx, ny)
    node = np.arange((nx + 1) * (ny + 1)).reshape(nx + 1, ny + 1)
    quads = np.column_stack([node[:-1, :-1].ravel(), node[1:, :-1].ravel(),
                             node[1:, 1:].ravel(), node[:-1, 1:].ravel()])
    def split(quads):
        tris = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
        return tris.reshape(2, -1, 3).transpose(1, 0, 2).reshape(-1, 3)

    if kind == "quad":
        blocks = [("quad", quads)]
    elif kind == "mixed":  # triangles on the left half, quads on the right
        left = points[quads].mean(axis=1)[:, 0] < 0.5
        blocks = [("triangle", split(quads[left])), ("quad", quads[~left])]
    else:
        blocks = [("triangle", split(quads))]
    return _with_side_markers(points, blocks, SIDES_2D, f"grid {nx}x{ny} {kind}")


def annulus_mesh(n_around: int, n_radial: int, kind: str = "quad", order: int = 2,
                 radii: tuple[float, float] = (0.5, 1.0)) -> Mesh:
    """The ring between two circles about the origin: ``n_around`` by ``n_radial`` quads
    (or twice as many triangles, each quad cut along a diagonal), evenly spaced in angle
    and radius; markers ``inner`` and ``outer``.

    With ``order=2`` the cells are second order (quad9, triangle6) with their nodes
    placed in polar coordinates: edges along a circle are arcs (to second order), radial
    ones straight, so that every cell has a curved edge
    (:attr:`~meshorder.mesh.Mesh.mid_edge_nodes`). With ``order=1``: the corners only.

    Examples
    --------
    >>> mesh = annulus_mesh(8, 2, "triangle")
    >>> mesh.n_cells, len(mesh.mid_edge_nodes), sorted(mesh.marker_names.values())
    (32, 56, ['inner', 'outer'])
    """
    rings, spokes = 2 * n_radial + 1, 2 * n_around  # the second-order lattice
    radius = np.linspace(radii[0], radii[1], rings)
    angle = np.linspace(0.0, 2 * np.pi, spokes, endpoint=False)
    points = np.column_stack([np.outer(np.cos(angle), radius).ravel(),
                              np.outer(np.sin(angle), radius).ravel()])

    def node(i, j):  # angle index i (wrapping), radius index j
        return (i % spokes) * rings + j

    i, j = (2 * a.ravel() for a in np.meshgrid(np.arange(n_around), np.arange(n_radial),
                                               indexing="ij"))
    corners = [node(i, j), node(i + 2, j), node(i + 2, j + 2), node(i, j + 2)]
    mids = [node(i + 1, j), node(i + 2, j + 1), node(i + 1, j + 2), node(i, j + 1)]
    centre = node(i + 1, j + 1)
    if kind == "quad":
        cells = [("quad9", np.column_stack([*corners, *mids, centre]))]
    else:
        cells = [("triangle6", np.concatenate([
            np.column_stack([corners[0], corners[1], corners[2], mids[0], mids[1], centre]),
            np.column_stack([corners[0], corners[2], corners[3], centre, mids[2], mids[3]])]))]
    around = 2 * np.arange(n_around)
    facets = [("line3", np.column_stack([node(around, 0), node(around + 2, 0),
                                         node(around + 1, 0)]), np.zeros(n_around, np.int64)),
              ("line3", np.column_stack([node(around, rings - 1), node(around + 2, rings - 1),
                                         node(around + 1, rings - 1)]),
               np.ones(n_around, np.int64))]
    blocks = [(t, c, None) for t, c in cells] + facets
    if order == 1:
        linear = {"quad9": ("quad", 4), "triangle6": ("triangle", 3), "line3": ("line", 2)}
        blocks = [(linear[t][0], c[:, :linear[t][1]], m) for t, c, m in blocks]
    return Mesh.from_blocks(points, blocks, {0: "inner", 1: "outer"},
                            f"annulus {n_around}x{n_radial} {kind} order {order}")


def box_cells(nx: int, ny: int, nz: int, kind: str = "tetra") -> tuple[np.ndarray, CellBlock]:
    """Points and cells of the unit cube: hexahedra, or six tetrahedra per hexahedron.

    The tetrahedra are the Kuhn subdivision (all share each cube's main diagonal),
    which is conforming; each is positively oriented.
    """
    points = _grid_points(nx, ny, nz)
    node = np.arange(len(points)).reshape(nx + 1, ny + 1, nz + 1)

    def corner(dx: int, dy: int, dz: int) -> np.ndarray:
        return node[dx : dx + nx, dy : dy + ny, dz : dz + nz].ravel()

    if kind == "hexahedron":
        order = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0),
                 (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
        return points, CellBlock("hexahedron", np.column_stack([corner(*c) for c in order]))
    tets = []
    for axes in itertools.permutations(range(3)):
        path = [np.zeros(3, int)]
        for axis in axes:
            path.append(path[-1] + np.eye(3, dtype=int)[axis])
        corners = [tuple(p) for p in path]
        cube = np.array(corners, float)
        unit = CellBlock("tetra", np.arange(4)[None])
        if signed_measures(cube, unit)[0] < 0:
            corners[1], corners[2] = corners[2], corners[1]
        tets.append(np.column_stack([corner(*c) for c in corners]))
    cells = np.stack(tets, axis=1).reshape(-1, 4)
    return points, CellBlock("tetra", cells)


def box_mesh(nx: int, ny: int, nz: int, kind: str = "tetra") -> Mesh:
    """Unit cube mesh (see :func:`box_cells`) with sides marked ``xmin`` ... ``zmax``."""
    points, block = box_cells(nx, ny, nz, kind)
    return _with_side_markers(points, [(block.type, block.nodes)], SIDES_3D,
                              f"box {nx}x{ny}x{nz} {kind}")
