"""The topology of a uniformly refined mesh from its coarse topology, without a sort.

:class:`meshorder.topology.Topology` finds a mesh's faces by sorting every cell's faces
by their nodes, the set-up's largest cost on a refined part. After one uniform split
(:func:`meshorder.refine.split_once`) the fine faces are known without it: each lies
either inside one coarse cell, where its split's template says which two children share
it, or on one coarse face, as one of that face's pieces (a triangle's four: the three at
its corners and the middle one; a quadrilateral's four, an edge's two, each at a
corner). So every fine cell face gets a key, ``(coarse cell, inner face)`` or ``(coarse
face, piece)``, from small tables and the coarse cell-to-face map, and the faces sharing a
key pair up by two scatters: time linear in the cells, where the sort is ``n log n``
and touches every face row.

The answer is :class:`~meshorder.topology.Topology`'s to the bit: the faces in the same
native order (by their lower cell, then its local face), the same nodes, markers and
facets; the tests compare the two on every cell type. A coarse mesh whose facets are not
one to one with its boundary faces (a facet on an interior face, two facets on one face)
falls back to the sort.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from .celltypes import CELL_TYPES
from .mesh import Mesh
from .refine import Refinement, Split, split_plan, splits, unrefined
from .topology import INTERIOR, UNMARKED_NAME, Topology

if TYPE_CHECKING:
    from .surface import Placement

#: The pieces of one coarse face: a triangle's three corner pieces and its middle one,
#: a quadrilateral's four corner pieces, an edge's two.
PIECES = 4
#: The piece number of a triangle's middle piece (the one without a coarse corner).
MIDDLE = 3


def refine_with_topology(mesh: Mesh, levels: int, place: Placement | None = None
                         ) -> tuple[Refinement, Topology]:
    """``mesh`` refined ``levels`` times (:func:`meshorder.refine.refine_tracked`, with
    ``place``) and the fine mesh's topology, each level's from the one before
    (:func:`refined_topology`).

    Raises
    ------
    MeshorderError
        For a second-order mesh, or ``levels`` below 0.
    """
    levels_of = splits(mesh, levels, place)  # checks the arguments first
    refinement, topology = unrefined(mesh), Topology(mesh, cell_faces=True)
    for split in levels_of:
        refinement, topology = refinement.then(split), refined_topology(topology, split)
    return refinement, topology


def refined_topology(coarse: Topology, split: Split) -> Topology:
    """The topology of ``split.mesh``, refined once from ``coarse.mesh``, built from
    ``coarse`` (which must hold its :attr:`~meshorder.topology.Topology.cell_faces`);
    with its own ``cell_faces``, for a further level.

    Examples
    --------
    >>> from meshorder.refine import split_once
    >>> from meshorder.testing import grid_mesh
    >>> mesh = grid_mesh(3, 2)
    >>> split = split_once(mesh)
    >>> fast = refined_topology(Topology(mesh, cell_faces=True), split)
    >>> slow = Topology(split.mesh, cell_faces=True)
    >>> all(np.array_equal(getattr(fast, a), getattr(slow, a)) for a in
    ...     ("face_nodes", "face_cells", "face_marker", "face_facet", "cell_faces"))
    True
    """
    n_facets = sum(len(b) for b in coarse.mesh.facets)
    if coarse.cell_faces is None:
        raise ValueError("refined_topology needs the coarse topology's cell_faces")
    if np.count_nonzero(coarse.face_facet >= 0) != n_facets:
        return Topology(split.mesh, cell_faces=True)  # facets not one to one with faces
    fine = split.mesh
    pieces = _Pieces(coarse)
    keys, owner, local = _face_keys(coarse, split, pieces)
    partner, slot_of_key = _partners(keys)
    slots = np.arange(len(keys))
    is_face = (partner < 0) | (partner > slots)
    face_of_slot = np.cumsum(is_face) - 1
    faces = np.flatnonzero(is_face)
    right = partner[faces]
    face_cells = np.column_stack([owner[faces], np.where(right >= 0, owner[right], -1)])
    face_nodes = _face_nodes(fine, faces, owner[faces], local[faces])
    marker_names = dict(fine.marker_names)
    face_marker = np.full(len(faces), INTERIOR, dtype=np.int64)
    face_facet = np.full(len(faces), -1, dtype=np.int64)
    facet_slot = _facet_slots(coarse, split, pieces, slot_of_key)
    facet_face = face_of_slot[facet_slot]
    face_marker[facet_face] = fine.all_facet_markers()
    face_facet[facet_face] = np.arange(len(facet_face))
    unmarked = (face_cells[:, 1] < 0) & (face_facet < 0)
    if unmarked.any():
        unmarked_id = max(marker_names, default=-1) + 1
        marker_names[unmarked_id] = UNMARKED_NAME
        face_marker[unmarked] = unmarked_id
    cell_faces = face_of_slot[np.where(is_face, slots, partner)]
    return Topology.from_faces(fine, marker_names, face_nodes, face_cells, face_marker,
                               face_facet, cell_faces)


class _Pieces:
    """Which piece of a coarse face a fine face (or facet) on it is: the place of its
    coarse corner among the face's nodes in increasing order, :data:`MIDDLE` without
    one (a triangle's middle piece)."""

    def __init__(self, coarse: Topology):
        # column by column (each contiguous): one gather per column instead of one of
        # whole rows, half the time of a refinement's pieces
        self.sorted_columns = np.ascontiguousarray(np.sort(coarse.face_nodes, axis=1).T)
        self.padding = np.count_nonzero(self.sorted_columns < 0, axis=0)  # -1 pads first

    def of(self, faces: np.ndarray, corner: np.ndarray, has_corner: np.ndarray) -> np.ndarray:
        """The pieces of coarse ``faces`` at coarse nodes ``corner`` (where
        ``has_corner``)."""
        below = -self.padding[faces]
        for column in self.sorted_columns:
            below += column[faces] < corner
        return np.where(has_corner, below, MIDDLE)


def _face_keys(coarse: Topology, split: Split, pieces: _Pieces
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every fine cell face's key (``(coarse face, piece)`` first, then ``(coarse cell,
    inner face)``), cell and local face, cell-major."""
    fine, mesh = split.mesh, coarse.mesh
    faces_per_cell = [len(CELL_TYPES[b.type].faces) for b in fine.cells]
    n_slots = sum(len(b) * k for b, k in zip(fine.cells, faces_per_cell, strict=True))
    keys = np.empty(n_slots, dtype=np.int64)
    owner = np.empty(n_slots, dtype=np.int64)
    local = np.empty(n_slots, dtype=np.int8)
    coarse_offsets = mesh.block_offsets()
    coarse_rows = np.cumsum([0, *(len(b) * len(CELL_TYPES[b.type].faces)
                                  for b in mesh.cells)])
    n_inner = max(len(_inner_table(b.type)[0]) for b in mesh.cells)
    inner_base = PIECES * coarse.n_faces
    start = 0
    for block, k, first, columns in zip(fine.cells, faces_per_cell, fine.block_offsets()[:-1],
                                        split.cell_columns, strict=True):
        end = start + len(block) * k
        parent = split.cell_parent[first:first + len(block)]
        parent_block = np.searchsorted(coarse_offsets, parent, side="right") - 1
        view = keys[start:end].reshape(len(block), k)
        owner[start:end].reshape(len(block), k)[:] = (first + np.arange(len(block)))[:, None]
        local[start:end].reshape(len(block), k)[:] = np.arange(k, dtype=np.int8)
        parent_blocks = np.unique(parent_block)
        for b in parent_blocks:
            kind = mesh.cells[b].type
            # the rows of this parent type: a slice where it is the only one (the usual)
            rows = slice(None) if len(parent_blocks) == 1 else np.flatnonzero(parent_block == b)
            cols = columns[rows].astype(np.int32)
            bits = np.left_shift(np.int32(1), cols)
            masks, codes = _inner_table(kind)[1:]
            p = parent[rows]
            within = p - coarse_offsets[b]
            face_rows = coarse_rows[b] + within * len(CELL_TYPES[kind].faces)
            corners = CELL_TYPES[kind].corners
            for j, face in enumerate(CELL_TYPES[block.type].faces):
                mask, corner_column = bits[:, face[0]].copy(), cols[:, face[0]].copy()
                for v in face[1:]:
                    mask |= bits[:, v]
                    np.minimum(corner_column, cols[:, v], out=corner_column)
                code = codes[np.searchsorted(masks, mask)]
                key = inner_base + p * n_inner + (-1 - code)
                on = np.flatnonzero(code >= 0)
                coarse_face = coarse.cell_faces[face_rows[on] + code[on]]
                corner = corner_column[on]
                node = mesh.cells[b].nodes[within[on], np.minimum(corner, corners - 1)]
                key[on] = PIECES * coarse_face + pieces.of(coarse_face, node,
                                                            corner < corners)
                view[rows, j] = key
        start = end
    return keys, owner, local


@cache
def _inner_table(kind: str) -> tuple[list[int], np.ndarray, np.ndarray]:
    """For a coarse cell of type ``kind``: the node masks (bits of columns of its node
    table, :attr:`meshorder.refine.SplitPlan.column`) of the faces inside it, and every
    child face's mask, sorted, with its code: the coarse local face it lies on, or
    ``-1 - i`` for the ``i``-th inner face."""
    plan, ctype = split_plan(kind), CELL_TYPES[kind]
    face_masks = []
    for face in ctype.faces:
        inside = set(face)
        columns = list(face) + [plan.column[("e", *e)] for e in plan.edges
                                if set(e) <= inside]
        columns += [plan.column[("q", *q)] for q in plan.quads if set(q) == inside]
        face_masks.append(sum(1 << c for c in columns))
    child_masks = set()
    for template in plan.templates:
        for child_type, references in template:
            columns = plan.child_columns(references)
            for face in CELL_TYPES[child_type].faces:
                child_masks.add(sum(1 << columns[v] for v in face))
    inner, masks, codes = [], sorted(child_masks), []
    for mask in masks:
        on = [j for j, f in enumerate(face_masks) if mask & ~f == 0]
        if on:
            codes.append(on[0])
        else:
            codes.append(-1 - len(inner))
            inner.append(mask)
    return inner, np.array(masks, dtype=np.int64), np.array(codes, dtype=np.int64)


def _partners(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The other slot with each slot's key, ``-1`` where none, and a slot of each key
    (two scatters: each key is held by one or two slots)."""
    index = np.int32 if len(keys) < 2**31 else np.int64  # half the memory traffic
    slots = np.arange(len(keys), dtype=index)
    first = np.full(int(keys.max(initial=-1)) + 1, -1, dtype=index)
    first[keys] = slots
    winner = first[keys]
    loser = winner != slots
    second = np.full(len(first), -1, dtype=index)
    second[keys[loser]] = slots[loser]
    return np.where(loser, winner, second[keys]).astype(np.int64), first


def _face_nodes(mesh, faces: np.ndarray, cells: np.ndarray, local: np.ndarray) -> np.ndarray:
    """The node rows (``-1``-padded) of the local faces ``local`` of ``cells``."""
    width = 2 if mesh.dim == 2 else 4
    nodes = np.full((len(faces), width), -1, dtype=np.int64)
    offsets = mesh.block_offsets()
    block_of = np.searchsorted(offsets, cells, side="right") - 1 if len(mesh.cells) > 1 \
        else None
    for b, block in enumerate(mesh.cells):
        flat, corners = block.nodes.ravel(), block.nodes.shape[1]
        for j, face in enumerate(CELL_TYPES[block.type].faces):
            rows = local == j
            if block_of is not None:
                rows &= block_of == b
            rows = np.flatnonzero(rows)
            at = (cells[rows] - offsets[b]) * corners
            for i, v in enumerate(face):
                nodes[rows, i] = flat[at + v]
    return nodes


def _facet_slots(coarse: Topology, split: Split, pieces: _Pieces,
                 slot_of_key: np.ndarray) -> np.ndarray:
    """The fine cell face each fine facet lies on: its coarse facet's face and its
    piece of it, a key of the fine cell faces (``slot_of_key``: one slot of each key,
    the only one on a boundary face)."""
    fine = split.mesh
    has = coarse.face_facet >= 0
    facet_face = np.empty(np.count_nonzero(has), dtype=np.int64)
    facet_face[coarse.face_facet[has]] = np.flatnonzero(has)
    coarse_face = facet_face[split.facet_parent]
    corner = np.concatenate([b.nodes.min(axis=1) for b in fine.facets]) \
        if fine.facets else np.zeros(0, np.int64)
    piece = pieces.of(coarse_face, corner, corner < coarse.mesh.n_points)
    return slot_of_key[PIECES * coarse_face + piece].astype(np.int64)
