"""Write a mesh, optionally renumbered, in any format meshio writes."""

from __future__ import annotations

import warnings
from pathlib import Path

import meshio
import numpy as np

from ..atomic import atomic_path
from ..errors import MeshWriteError
from ..mesh import Mesh
from ..permutation import check_permutation, inverse
from . import su2
from .meshio_reader import named_marker_key


def check_format(path: str | Path) -> None:
    """Raise :class:`MeshWriteError` unless :func:`write_mesh` can write ``path``'s format.

    Checked before any work: meshio's formats by extension (``.su2`` written here).
    """
    suffix = Path(path).suffix
    if suffix.lower() not in meshio.extension_to_filetypes:
        raise MeshWriteError(f"{path}: cannot write files with extension {suffix!r}; use "
                             ".msh, .su2, .vtu or another format meshio writes")


#: Linear 2-D cells and facets -> their second-order type (corners, then the node of each
#: edge in turn: meshio's, VTK's and gmsh's order alike).
SECOND_ORDER = {"line": "line3", "triangle": "triangle6", "quad": "quad8"}


def second_order(mesh: Mesh, cell_type: str, nodes: np.ndarray) -> tuple[str, np.ndarray]:
    """``nodes`` of ``cell_type`` with the node of each edge appended, where the mesh
    holds one for every edge (:attr:`Mesh.mid_edge_nodes`: a curved wall stays curved);
    else as they are. Quadrilaterals become ``quad8`` (a ``quad9``'s centre node is not
    kept).

    Examples
    --------
    >>> mesh = Mesh(np.zeros((4, 3)), [], mid_edge_nodes=np.array([[0, 1, 2], [1, 3, 2]]))
    >>> second_order(mesh, "line", np.array([[1, 0]]))
    ('line3', array([[1, 0, 2]]))
    """
    if cell_type not in SECOND_ORDER or not len(mesh.mid_edge_nodes):
        return cell_type, nodes
    first, second = nodes, np.roll(nodes, -1, axis=1)  # each edge, in the cell's order
    if cell_type == "line":
        first, second = first[:, :1], second[:, :1]
    mid, found = mesh.edge_nodes(first, second)
    if not found.all():  # a linear block, or one with straight edges among curved ones
        return cell_type, nodes
    return SECOND_ORDER[cell_type], np.hstack([nodes, mid])


def write_mesh(mesh: Mesh, path: str | Path, *, cell_order: np.ndarray | None = None,
               node_order: np.ndarray | None = None, file_format: str | None = None) -> None:
    """Write ``mesh`` with cells and nodes in a new order (both given new -> old).

    Each cell type is one block, its cells in the new order (so a single-type mesh
    is written in exactly the new order). Boundary facets follow, grouped by
    marker; marker ids become 1..K in the file, named through gmsh physical names
    where the format keeps them (``.msh`` is written as gmsh 2.2 for that reason).

    Parameters
    ----------
    mesh : Mesh
    path : str or pathlib.Path
        Output file; the format comes from its extension unless ``file_format`` is given.
    cell_order, node_order : numpy.ndarray, optional
        Permutations new -> old; identity when omitted.
    file_format : str, optional
        A meshio format name.

    Raises
    ------
    MeshWriteError
        If meshio cannot write that format; no file is left behind.
    """
    path = Path(path)
    cell_order = np.arange(mesh.n_cells) if cell_order is None else cell_order
    node_order = np.arange(mesh.n_points) if node_order is None else node_order
    check_permutation(cell_order, mesh.n_cells, "cell order")
    check_permutation(node_order, mesh.n_points, "node order")
    new_node = inverse(node_order)
    points = mesh.points[node_order]
    planar = path.suffix.lower() in (".msh", ".su2") or (file_format or "").startswith("gmsh")
    if mesh.dim == 2 and planar and np.all(points[:, 2] == points[0, 2]):
        points = points[:, :2]  # VTU and friends want three coordinates
    marker_ids = sorted(mesh.marker_names)
    file_marker = {m: i + 1 for i, m in enumerate(marker_ids)}
    cell_rank = inverse(cell_order)
    blocks, tags = [], []
    first = mesh.block_offsets()
    for i, block in enumerate(mesh.cells):  # one block per type, new order inside the type
        ranks = cell_rank[first[i] : first[i + 1]]
        kind, nodes = second_order(mesh, block.type, block.nodes[np.argsort(ranks)])
        blocks.append(meshio.CellBlock(kind, new_node[nodes]))
        tags.append(np.zeros(len(block), np.int64))
    for block, markers in zip(mesh.facets, mesh.facet_markers, strict=True):
        order = np.argsort(markers, kind="stable")
        kind, nodes = second_order(mesh, block.type, block.nodes[order])
        blocks.append(meshio.CellBlock(kind, new_node[nodes]))
        tags.append(np.array([file_marker[int(m)] for m in markers[order]], np.int64))
    field_data = {mesh.marker_names[m]: np.array([file_marker[m], mesh.dim - 1])
                  for m in marker_ids}
    if file_format is None and path.suffix.lower() == ".su2":  # meshio 5.3.5's writer fails
        name_of = {file_marker[m]: mesh.marker_names[m] for m in marker_ids}
        markers: dict[str, list] = {name_of[f]: [] for f in sorted(name_of)}
        for block, tag in zip(blocks[len(mesh.cells):], tags[len(mesh.cells):], strict=True):
            for f in np.unique(tag):
                markers[name_of[int(f)]].append((block.type, block.data[tag == f]))
        with atomic_path(path) as tmp:
            su2.write(tmp, points, [(b.type, b.data) for b in blocks[:len(mesh.cells)]],
                      list(markers.items()))
        return
    if file_format is None and path.suffix.lower() == ".msh":
        file_format = "gmsh22"  # meshio's 4.1 writer drops physical groups
    is_gmsh = (file_format or "").startswith("gmsh")
    names = {file_marker[m]: mesh.marker_names[m] for m in marker_ids}
    keys = ("gmsh:physical", "gmsh:geometrical") if is_gmsh else (named_marker_key(names),)
    out = meshio.Mesh(points, blocks, cell_data={k: tags for k in keys}, field_data=field_data)
    with atomic_path(path) as tmp:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                meshio.write(tmp, out, file_format=file_format)
        except OSError:
            raise  # the disk's error: atomic_path names the user's file
        except Exception as exc:
            raise MeshWriteError(f"{path}: cannot write this format: {exc}") from None
