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

def write_mesh(mesh: Mesh, path: str | Path, *, cell_order: np.ndarray | None = None,
               node_order: np.ndarray | None = None, file_format: str | None = None) -> None:
    """Write ``mesh`` with cells and nodes in a new order (both given new -> old).

    Cells are written in exactly the new order (consecutive cells of one type form
    a block). Boundary facets follow, grouped by marker; marker ids become 1..K in
    the file with their names as gmsh physical names / meshio field data.

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
    if mesh.dim == 2 and np.all(points[:, 2] == points[0, 2]):
        points = points[:, :2]
    marker_ids = sorted(mesh.marker_names)
    file_marker = {m: i + 1 for i, m in enumerate(marker_ids)}
    blocks, tags = _cell_runs(mesh, cell_order, new_node)
    for block, markers in zip(mesh.facets, mesh.facet_markers, strict=True):
        for marker in np.unique(markers):
            rows = block.nodes[markers == marker]
            blocks.append(meshio.CellBlock(block.type, new_node[rows]))
            tags.append(np.full(len(rows), file_marker[int(marker)], np.int64))
    field_data = {mesh.marker_names[m]: np.array([file_marker[m], mesh.dim - 1])
                  for m in marker_ids}
    is_gmsh = (file_format or path.suffix.lower()).lstrip(".") in ("msh", "gmsh", "gmsh22")
    keys = ("gmsh:physical", "gmsh:geometrical") if is_gmsh else ("marker",)
    out = meshio.Mesh(points, blocks, cell_data={k: tags for k in keys}, field_data=field_data)
    with atomic_path(path) as tmp:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                meshio.write(tmp, out, file_format=file_format)
        except Exception as exc:
            raise MeshWriteError(f"{path}: cannot write this format: {exc}") from None


def _cell_runs(mesh: Mesh, cell_order: np.ndarray,
               new_node: np.ndarray) -> tuple[list[meshio.CellBlock], list[np.ndarray]]:
    """Split the reordered cells into runs of one type, as meshio blocks."""
    offsets = mesh.block_offsets()
    block_of = np.searchsorted(offsets, cell_order, side="right") - 1
    starts = np.flatnonzero(np.diff(block_of, prepend=-1))
    ends = np.append(starts[1:], len(cell_order))
    blocks, tags = [], []
    for start, end in zip(starts, ends, strict=True):
        b = int(block_of[start])
        local = cell_order[start:end] - offsets[b]
        block = mesh.cells[b]
        blocks.append(meshio.CellBlock(block.type, new_node[block.nodes[local]]))
        tags.append(np.zeros(end - start, np.int64))
    return blocks, tags
