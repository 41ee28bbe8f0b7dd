"""Linear cell types: corner counts, local faces and edges, orientation flips.

Node orders follow VTK (and so meshio). Local faces are listed with outward
normals for a positively oriented cell: counter-clockwise in 2D, positive
volume in 3D. Higher-order types are reduced to their corner vertices.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class CellType:
    """A linear cell type.

    Attributes
    ----------
    name : str
        meshio name of the linear type.
    dim : int
        Topological dimension (1 for facets of 2D meshes, 2 or 3).
    corners : int
        Number of corner vertices.
    faces : tuple of tuple of int
        Local corner indices of each face, outward-oriented (faces are edges in 2D).
    edges : tuple of tuple of int
        Local corner indices of each edge.
    flip : tuple of int
        Corner permutation that reverses the cell's orientation.
    """

    name: str
    dim: int
    corners: int
    faces: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, ...], ...]
    flip: tuple[int, ...]


_QUAD_EDGES = ((0, 1), (1, 2), (2, 3), (3, 0))
_TRI_EDGES = ((0, 1), (1, 2), (2, 0))

CELL_TYPES: dict[str, CellType] = {
    t.name: t
    for t in (
        CellType("line", 1, 2, ((0,), (1,)), ((0, 1),), (1, 0)),
        CellType("triangle", 2, 3, _TRI_EDGES, _TRI_EDGES, (0, 2, 1)),
        CellType("quad", 2, 4, _QUAD_EDGES, _QUAD_EDGES, (0, 3, 2, 1)),
        CellType(
            "tetra", 3, 4,
            ((0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)),
            ((0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)),
            (0, 2, 1, 3),
        ),
        CellType(
            "hexahedron", 3, 8,
            ((0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)),
            ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
             (0, 4), (1, 5), (2, 6), (3, 7)),
            (0, 3, 2, 1, 4, 7, 6, 5),
        ),
        CellType(
            "wedge", 3, 6,
            ((0, 1, 2), (3, 5, 4), (0, 3, 4, 1), (1, 4, 5, 2), (2, 5, 3, 0)),
            ((0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (0, 3), (1, 4), (2, 5)),
            (0, 2, 1, 3, 5, 4),
        ),
        CellType(
            "pyramid", 3, 5,
            ((0, 3, 2, 1), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)),
            ((0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (1, 4), (2, 4), (3, 4)),
            (0, 3, 2, 1, 4),
        ),
    )
}

#: Higher-order meshio type names and the linear type whose corners they start with.
HIGHER_ORDER: dict[str, str] = {
    "line3": "line", "line4": "line",
    "triangle6": "triangle", "triangle7": "triangle", "triangle10": "triangle",
    "quad8": "quad", "quad9": "quad", "quad16": "quad",
    "tetra10": "tetra", "tetra20": "tetra",
    "hexahedron20": "hexahedron", "hexahedron24": "hexahedron", "hexahedron27": "hexahedron",
    "wedge15": "wedge", "wedge18": "wedge",
    "pyramid13": "pyramid", "pyramid14": "pyramid",
}

#: Two-dimensional second-order types: each edge's mid node, as (corner, corner, node)
#: positions in the cell (gmsh's and meshio's numbering; a quad9's centre node and a
#: triangle7's are not on an edge).
MID_EDGE_NODES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "line3": ((0, 1, 2),),
    "triangle6": ((0, 1, 3), (1, 2, 4), (2, 0, 5)),
    "triangle7": ((0, 1, 3), (1, 2, 4), (2, 0, 5)),
    "quad8": ((0, 1, 4), (1, 2, 5), (2, 3, 6), (3, 0, 7)),
    "quad9": ((0, 1, 4), (1, 2, 5), (2, 3, 6), (3, 0, 7)),
}

#: Facet types: the faces that bound cells of each dimension.
FACET_TYPES = {2: ("line",), 3: ("triangle", "quad")}


def linear_type(name: str) -> CellType | None:
    """Return the linear cell type behind a meshio type name, or None if not a cell.

    Examples
    --------
    >>> linear_type("triangle6").name
    'triangle'
    >>> linear_type("vertex") is None
    True
    """
    name = HIGHER_ORDER.get(name, name)
    return CELL_TYPES.get(name)
