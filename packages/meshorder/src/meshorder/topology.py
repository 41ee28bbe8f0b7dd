"""Mesh topology: unique faces, cell and node graphs, edges, node-to-cell map.

Everything is vectorised with NumPy sorts: each cell's faces are listed, keyed
by their sorted node ids, sorted once, and equal keys grouped. Boundary facets
join the same sort, so matching them to faces costs nothing extra.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .celltypes import CELL_TYPES
from .errors import MeshWarning, TopologyError, UnknownNameError
from .mesh import CellBlock, Mesh
from .permutation import argsort_distinct

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Marker of interior faces in :attr:`Topology.face_marker`.
INTERIOR = -1
#: Name given to boundary faces that no facet marks.
UNMARKED_NAME = "unmarked"


@dataclass(frozen=True)
class CSR:
    """Compressed sparse rows: ``i``'s neighbours are ``indices[indptr[i]:indptr[i+1]]``."""

    indptr: np.ndarray
    indices: np.ndarray

    @property
    def n(self) -> int:
        """Number of rows."""
        return len(self.indptr) - 1

    def degrees(self) -> np.ndarray:
        """Number of neighbours of each row."""
        return np.diff(self.indptr)

    def to_scipy(self) -> sp.csr_array:
        """As a SciPy sparse array with unit weights."""
        import scipy.sparse as sp  # here, not at the top: a run with a plan needs no SciPy

        data = np.ones(len(self.indices), dtype=np.int8)
        return sp.csr_array((data, self.indices, self.indptr), shape=(self.n, self.n))

    @classmethod
    def from_pairs(cls, a: np.ndarray, b: np.ndarray, n: int) -> CSR:
        """Symmetric graph from undirected edges ``(a[k], b[k])``, duplicates removed,
        each row's columns ascending (SciPy's counting sort into rows and its sort within
        them: about 6 times faster than one NumPy sort of every (row, column) key).

        Examples
        --------
        >>> graph = CSR.from_pairs(np.array([0, 1, 1]), np.array([1, 2, 0]), 3)
        >>> graph.indptr.tolist(), graph.indices.tolist()
        ([0, 1, 3, 4], [1, 0, 2, 1])
        """
        import scipy.sparse as sp  # here, not at the top: a run with a plan needs no SciPy

        rows, cols = np.concatenate([a, b]), np.concatenate([b, a])
        matrix = sp.coo_array((np.ones(len(rows), dtype=np.int32), (rows, cols)),
                              shape=(n, n)).tocsr()
        matrix.sum_duplicates()  # sorts each row's columns too
        return cls(matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64))


class Topology:
    """Faces, graphs and maps of a mesh, in the mesh's native numbering.

    Faces are numbered in native order: by their left (lower-numbered) cell, then
    by the cell's local face index. The left cell is the one whose outward
    orientation the face nodes follow.

    Attributes
    ----------
    mesh : Mesh
    face_nodes : numpy.ndarray
        ``(n_faces, width)`` node ids, ``-1``-padded (width 2 in 2D, 4 in 3D).
    face_cells : numpy.ndarray
        ``(n_faces, 2)``: left cell, right cell or ``-1`` on the boundary.
    face_marker : numpy.ndarray
        Marker id of boundary faces, :data:`INTERIOR` for interior faces.
    face_facet : numpy.ndarray
        Index of the boundary facet matching each face, ``-1`` if none.
    marker_names : dict of int to str
        The mesh's marker names, plus ``unmarked`` if some boundary faces have no facet.
    cell_faces : numpy.ndarray or None
        With ``cell_faces=True``: the face of each cell's each local face, cell-major
        (block by block, each cell's faces in its type's order); otherwise None.
    """

    def __init__(self, mesh: Mesh, *, cell_faces: bool = False):
        self.mesh = mesh
        self.marker_names = dict(mesh.marker_names)
        (self.face_nodes, self.face_cells, self.face_marker, self.face_facet,
         self.cell_faces) = _unique_faces(mesh, self.marker_names, cell_faces)

    @classmethod
    def from_faces(cls, mesh: Mesh, marker_names: dict[int, str], face_nodes: np.ndarray,
                   face_cells: np.ndarray, face_marker: np.ndarray, face_facet: np.ndarray,
                   cell_faces: np.ndarray | None = None) -> Topology:
        """The topology of ``mesh`` from its faces, found otherwise than by sorting
        (:mod:`meshorder.refined_topology`); the arguments are the attributes."""
        topology = cls.__new__(cls)
        topology.mesh, topology.marker_names = mesh, marker_names
        topology.face_nodes, topology.face_cells = face_nodes, face_cells
        topology.face_marker, topology.face_facet = face_marker, face_facet
        topology.cell_faces = cell_faces
        return topology

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return self.mesh.n_cells

    @property
    def n_faces(self) -> int:
        """Number of unique faces."""
        return len(self.face_cells)

    @property
    def interior(self) -> np.ndarray:
        """Boolean mask of interior faces."""
        return self.face_cells[:, 1] >= 0

    @cached_property
    def cell_graph(self) -> CSR:
        """Cell-to-cell adjacency through shared faces."""
        left, right = self.face_cells[self.interior].T
        return CSR.from_pairs(left, right, self.n_cells)

    @cached_property
    def edges(self) -> np.ndarray:
        """``(n_edges, 2)`` unique edges, lower node first, sorted."""
        pairs = np.concatenate([_local_edges(b) for b in self.mesh.cells])
        low, high = sorted_columns(pairs)
        key = low * np.int64(self.mesh.n_points) + high
        key.sort()
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        return np.column_stack(np.divmod(key, np.int64(self.mesh.n_points)))

    @cached_property
    def node_graph(self) -> CSR:
        """Node-to-node adjacency through edges."""
        return CSR.from_pairs(self.edges[:, 0], self.edges[:, 1], self.mesh.n_points)

    @cached_property
    def node_cells(self) -> CSR:
        """Cells around each node (node-to-cell map)."""
        offsets, nodes = self.mesh.cell_node_csr()
        cells = np.repeat(np.arange(self.n_cells), np.diff(offsets))
        order = np.argsort(nodes, kind="stable")
        indptr = np.zeros(self.mesh.n_points + 1, dtype=np.int64)
        np.cumsum(np.bincount(nodes, minlength=self.mesh.n_points), out=indptr[1:])
        return CSR(indptr, cells[order])

    def max_faces_per_cell(self) -> int:
        """Largest number of faces of any cell type present."""
        return max(len(CELL_TYPES[b.type].faces) for b in self.mesh.cells)

    def faces_per_cell(self) -> np.ndarray:
        """Number of faces of every cell (the file's order), by its type."""
        return np.concatenate([np.full(len(b.nodes), len(CELL_TYPES[b.type].faces), np.int64)
                               for b in self.mesh.cells])

    def components(self) -> tuple[int, np.ndarray]:
        """Number of connected components of the cell graph and each cell's component."""
        from scipy.sparse.csgraph import connected_components

        n, labels = connected_components(self.cell_graph.to_scipy(), directed=False)
        return int(n), labels

    def unreferenced_points(self) -> np.ndarray:
        """Ids of points that no cell uses."""
        return np.flatnonzero(self.node_cells.degrees() == 0)

    def boundary_cells(self, markers: list[int] | None = None) -> np.ndarray:
        """Cells on the boundary faces of ``markers`` (all markers if None), in the
        boundary's natural order: facet order in the file, then unmarked faces."""
        boundary = np.flatnonzero(~self.interior)
        if markers is not None:
            boundary = boundary[np.isin(self.face_marker[boundary], markers)]
        facet = self.face_facet[boundary]
        boundary = boundary[np.lexsort((boundary, np.where(facet < 0, np.iinfo(np.int64).max,
                                                                   facet)))]
        cells = self.face_cells[boundary, 0]
        _, first = np.unique(cells, return_index=True)
        return cells[np.sort(first)]

    def marker_ids(self, names: list[str]) -> list[int]:
        """Marker ids of ``names``; raises listing the valid names if one is unknown."""
        by_name = {name: key for key, name in self.marker_names.items()}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise UnknownNameError(f"{self.mesh.source}: unknown marker(s) {', '.join(unknown)}; "
                                   f"the mesh has {', '.join(sorted(by_name))}")
        return [by_name[n] for n in names]

    def report(self) -> dict[str, int]:
        """Counts worth telling a user, including the non-fatal oddities."""
        n_components, _ = self.components()
        return {
            "cells": self.n_cells,
            "points": self.mesh.n_points,
            "faces": self.n_faces,
            "interior_faces": int(self.interior.sum()),
            "boundary_faces": int((~self.interior).sum()),
            "components": n_components,
            "unreferenced_points": len(self.unreferenced_points()),
        }


def _face_rows(mesh: Mesh, width: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Every cell face, then every boundary facet, as ``-1``-padded node rows.

    Cell faces come cell-major (block by block, each cell's faces in its type's order),
    written straight into one preallocated array: the face rows are the largest arrays
    of the topology, so no per-block copy is made.

    Returns
    -------
    rows : numpy.ndarray
        ``(n_rows, width)`` node ids.
    owner : numpy.ndarray
        Cell of each row, ``-1`` for facets.
    n_cell_rows : int
        Rows ``[0, n_cell_rows)`` are cell faces.
    """
    faces_per_cell = [len(CELL_TYPES[b.type].faces) for b in mesh.cells]
    n_cell_rows = sum(len(b) * k for b, k in zip(mesh.cells, faces_per_cell, strict=True))
    n_rows = n_cell_rows + sum(len(b) for b in mesh.facets)
    rows = np.full((n_rows, width), -1, dtype=np.int64)
    owner = np.full(n_rows, -1, dtype=np.int64)
    start = 0
    for block, k, first_cell in zip(mesh.cells, faces_per_cell, mesh.block_offsets()[:-1],
                                    strict=True):
        end = start + len(block) * k
        view = rows[start:end].reshape(len(block), k, width)
        for j, face in enumerate(CELL_TYPES[block.type].faces):
            view[:, j, : len(face)] = block.nodes[:, list(face)]
        owner[start:end].reshape(len(block), k)[:] = (first_cell + np.arange(len(block)))[:, None]
        start = end
    for block in mesh.facets:
        rows[start : start + len(block), : block.nodes.shape[1]] = block.nodes
        start += len(block)
    return rows, owner, n_cell_rows


def _local_edges(block: CellBlock) -> np.ndarray:
    edges = CELL_TYPES[block.type].edges
    return block.nodes[:, np.array(edges)].reshape(-1, 2)


def sorted_columns(nodes: np.ndarray) -> list[np.ndarray]:
    """Columns of ``nodes`` sorted across each row, by a min/max sorting network.

    Much faster than ``np.sort(axis=1)`` for the 2 or 4 columns faces have; each
    compare-exchange reuses the two columns' memory (one scratch column in all).
    """
    cols = [nodes[:, i].copy() for i in range(nodes.shape[1])]
    network = {2: [(0, 1)], 4: [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)]}[len(cols)]
    scratch = np.empty_like(cols[0])
    for i, j in network:
        np.minimum(cols[i], cols[j], out=scratch)
        np.maximum(cols[i], cols[j], out=cols[j])
        cols[i], scratch = scratch, cols[i]
    return cols


def _sort_keys(nodes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Integer keys equal exactly when two rows hold the same set of nodes.

    The last key alone tells rows apart except where they share their three highest
    nodes (``_grouping_order`` relies on that being rare) whenever the node ids fit in
    21 bits.
    """
    s = sorted_columns(nodes)  # fresh arrays, so the keys are built in place
    for column in s:
        column += 1  # padding -1 becomes 0 and sorts first
    if len(s) == 2:
        s[0] <<= 32
        s[0] |= s[1]
        return (s[0],)
    if max(int(column.max(initial=0)) for column in s) < 2**21:
        highest_three = s[1]
        highest_three <<= 42
        s[2] <<= 21
        highest_three |= s[2]
        highest_three |= s[3]
        if s[0].max(initial=0) == 0:  # triangles only: one key
            return (highest_three,)
        return (s[0], highest_three)
    s[0] <<= 32
    s[0] |= s[1]
    s[2] <<= 32
    s[2] |= s[3]
    return (s[0], s[2])


def _grouping_order(keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A stable permutation that makes rows with equal keys adjacent, and whether each
    row in that order equals the row before it.

    Sorts by the last key alone when that already groups equal rows (one stable sort
    instead of ``np.lexsort``'s one per key), otherwise by all keys. Each key is
    gathered into sorted order once, for the check and the answer together.
    """
    order = np.argsort(keys[-1], kind="stable")
    same = _same_as_previous(keys[-1], order)
    for k in keys[:-1]:
        equal = _same_as_previous(k, order)
        if not equal[same].all():  # the last key ties rows that differ in another
            order = np.lexsort(keys[::-1])
            same = np.logical_and.reduce([_same_as_previous(k, order) for k in keys])
            break
        same &= equal
    return order, same


def _same_as_previous(key: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``key[order]`` equal to its predecessor, element by element (``False`` first)."""
    sorted_key = key[order]
    same = np.zeros(len(order), dtype=bool)
    np.equal(sorted_key[1:], sorted_key[:-1], out=same[1:])
    return same


def _unique_faces(mesh: Mesh, marker_names: dict[int, str], cell_faces: bool):
    """Group cell faces and boundary facets by node set; see :class:`Topology`."""
    rows, owner, n_cell_rows = _face_rows(mesh, 2 if mesh.dim == 2 else 4)
    keys = _sort_keys(rows)
    order, same = _grouping_order(keys)  # same: row equal to the one before it (sorted)
    del keys  # the largest temporaries: free them before the next ones
    starts = np.flatnonzero(~same)
    group = np.cumsum(~same) - 1 if cell_faces else None
    del same
    n_cells_in = np.add.reduceat((order < n_cell_rows).astype(np.int64), starts) \
        if len(order) else np.zeros(0, np.int64)
    n_facets_in = np.diff(np.append(starts, len(order))) - n_cells_in
    _check_groups(mesh, rows, order, owner, starts, n_cells_in, n_cell_rows)

    faces = np.flatnonzero(n_cells_in > 0)
    first = order[starts[faces]]
    left = owner[first]
    second = order[np.minimum(starts[faces] + 1, len(order) - 1)]
    right = np.where(n_cells_in[faces] == 2, owner[second], -1)
    marker = np.full(len(faces), INTERIOR, dtype=np.int64)
    boundary = right < 0
    facet_markers = mesh.all_facet_markers()
    has_facet = n_facets_in[faces] > 0
    marked = boundary & has_facet
    facet_row = order[starts[faces[marked]] + n_cells_in[faces[marked]]] - n_cell_rows
    marker[marked] = facet_markers[facet_row]
    facet = np.full(len(faces), -1, dtype=np.int64)
    facet[marked] = facet_row
    unmarked = boundary & ~has_facet
    if unmarked.any():
        unmarked_id = max(marker_names, default=-1) + 1
        marker_names[unmarked_id] = UNMARKED_NAME
        marker[unmarked] = unmarked_id
    interior_marked = int(np.count_nonzero(~boundary & has_facet))
    if interior_marked:
        warnings.warn(f"{mesh.source}: {interior_marked} marked facets are interior faces "
                      "(shared by two cells); their markers are ignored", MeshWarning,
                      stacklevel=3)
    native = argsort_distinct(first, len(order))  # first occurrence is cell-major: left, local face
    cells = np.column_stack([left, right])[native]
    row_face = None
    if cell_faces:
        face_of_group = np.full(len(starts), -1, dtype=np.int64)
        face_of_group[faces[native]] = np.arange(len(faces))
        row_face = np.empty(len(order), dtype=np.int64)
        row_face[order] = face_of_group[group]
        row_face = row_face[:n_cell_rows]
    return rows[first[native]], cells, marker[native], facet[native], row_face


def _check_groups(mesh: Mesh, rows: np.ndarray, order: np.ndarray, owner: np.ndarray,
                  starts: np.ndarray, n_cells_in: np.ndarray, n_cell_rows: int) -> None:
    """Raise on a face of more than two cells, or a facet that is no cell's face."""
    crowded = np.flatnonzero(n_cells_in > 2)
    if len(crowded):
        g = int(crowded[0])
        members = order[starts[g] : starts[g] + n_cells_in[g]]
        nodes = [int(v) for v in rows[members[0]] if v >= 0]
        raise TopologyError(f"{mesh.source}: face with nodes {nodes} is shared by "
                            f"{n_cells_in[g]} cells {owner[members].tolist()} (at most 2 allowed)")
    orphans = np.flatnonzero(n_cells_in == 0)
    if len(orphans):
        facet = int(order[starts[orphans[0]]]) - n_cell_rows
        nodes = [int(v) for v in rows[facet + n_cell_rows] if v >= 0]
        marker = int(mesh.all_facet_markers()[facet])
        raise TopologyError(f"{mesh.source}: boundary facet {facet} (nodes {nodes}, marker "
                            f"{mesh.marker_names.get(marker, marker)!r}) is not a face of any "
                            "cell")
