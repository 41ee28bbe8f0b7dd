"""Hierarchical (block) colouring of faces for race-free accumulation without atomics.

The flat face colouring runs one launch per face colour, and each launch touches
cells all over the mesh, so every launch streams the whole state again. Block
colouring (the OP2 scheme) keeps the plan's face order and cuts it into blocks
of consecutive faces, one CUDA thread block each:

- a block stages the states of the cells it touches in shared memory, computes its
  face fluxes into shared slots, and each of its cells then sums the slots of its
  faces (a per-block cell-to-face table, so no atomics are needed inside the block);
- blocks are coloured so that two blocks of one colour share no cell; one launch
  per block colour then adds each block's shared sums into the global residual
  with plain read-modify-writes.

Blocks are contiguous in the plan order, so a locality-preserving cell order keeps
each block's cells close together in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .colouring import MAX_COLOURS

#: Faces per block: one thread per face.
DEFAULT_BLOCK_SIZE = 256

#: Most faces per block: a block's local cell numbers (at most two per face) and its
#: face sides (two per face) are int16.
MAX_BLOCK_SIZE = 16383


@dataclass(frozen=True)
class FaceBlocks:
    """Blocks of consecutive faces, their cells, each cell's faces, and the block colouring.

    Attributes
    ----------
    block_size : int
        Faces per block (the last block may hold fewer).
    cell_offsets : numpy.ndarray
        int32, ``(n_blocks + 1,)``: block ``b``'s cells are
        ``cells[cell_offsets[b]:cell_offsets[b + 1]]``.
    cells : numpy.ndarray
        int32 global cell indices of each block, increasing within a block.
    local_left, local_right : numpy.ndarray
        int16 position of each face's cells among its block's cells (``-1``: no
        right cell, a boundary face).
    side_offsets : numpy.ndarray
        int32, ``(len(cells) + 1,)``: the faces of the ``i``-th entry of ``cells``
        are ``sides[side_offsets[i]:side_offsets[i + 1]]``.
    sides : numpy.ndarray
        int16 ``2 * k + 1`` where the cell is the right cell of its block's face
        ``k``, ``2 * k`` where it is the left cell, in face order.
    block_order, block_offsets : numpy.ndarray
        int32 blocks grouped by colour: colour ``k`` is
        ``block_order[block_offsets[k]:block_offsets[k + 1]]``.
    """

    block_size: int
    cell_offsets: np.ndarray
    cells: np.ndarray
    local_left: np.ndarray
    local_right: np.ndarray
    side_offsets: np.ndarray
    sides: np.ndarray
    block_order: np.ndarray
    block_offsets: np.ndarray

    @property
    def n_blocks(self) -> int:
        """Number of face blocks."""
        return len(self.cell_offsets) - 1

    @property
    def n_block_colours(self) -> int:
        """Number of block colours (kernel launches)."""
        return len(self.block_offsets) - 1

    @property
    def max_block_cells(self) -> int:
        """Most cells touched by one block (sizes the shared-memory arrays)."""
        return int(np.diff(self.cell_offsets).max(initial=0))

    def block_cells(self, block: int) -> np.ndarray:
        """Global indices of the cells touched by ``block``."""
        return self.cells[self.cell_offsets[block]:self.cell_offsets[block + 1]]


#: Arrays of :class:`FaceBlocks` that a plan stores (as ``block_<name>``).
BLOCK_ARRAYS = ("cell_offsets", "cells", "local_left", "local_right", "side_offsets", "sides",
                "block_order", "block_offsets")

#: dtype of each of them in :class:`FaceBlocks` (what the kernels read).
BLOCK_DTYPES = {"cell_offsets": np.int32, "cells": np.int32, "local_left": np.int16,
                "local_right": np.int16, "side_offsets": np.int32, "sides": np.int16,
                "block_order": np.int32, "block_offsets": np.int32}


def build_face_blocks(left: np.ndarray, right: np.ndarray, n_cells: int,
                      block_size: int = DEFAULT_BLOCK_SIZE) -> FaceBlocks:
    """Cut faces (in their given order) into blocks, list each block cell's faces, colour blocks.

    Parameters
    ----------
    left, right : numpy.ndarray
        Cells of each face; ``right = -1`` on the boundary.
    n_cells : int
    block_size : int
        Faces per block, at most :data:`MAX_BLOCK_SIZE`.

    Returns
    -------
    FaceBlocks

    Examples
    --------
    >>> blocks = build_face_blocks(np.array([0, 1, 2, 0]), np.array([1, 2, 3, -1]), 4,
    ...                            block_size=2)
    >>> blocks.n_blocks, blocks.block_cells(1).tolist(), blocks.n_block_colours
    (2, [0, 2, 3], 2)
    """
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block_size must be in 1..{MAX_BLOCK_SIZE}, got {block_size}")
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    n_faces = len(left)
    block_of_face = np.arange(n_faces, dtype=np.int64) // block_size
    n_blocks = -(-n_faces // block_size)
    interior = right >= 0
    keys = np.sort(np.concatenate([block_of_face * n_cells + left,
                                   block_of_face[interior] * n_cells + right[interior]]))
    # sort, then drop repeats: np.unique (NumPy 2.4) hashes here, 20-50x slower at 10M faces
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    key_block = keys // n_cells
    cell_offsets = np.searchsorted(key_block, np.arange(n_blocks + 1))
    local_left = np.searchsorted(keys, block_of_face * n_cells + left) - cell_offsets[block_of_face]
    local_right = np.full(n_faces, -1, dtype=np.int64)
    local_right[interior] = (np.searchsorted(keys, block_of_face[interior] * n_cells
                                             + right[interior])
                             - cell_offsets[block_of_face[interior]])
    cells = keys % n_cells
    side_offsets, sides = _cell_sides(cell_offsets[block_of_face], local_left, local_right,
                                      block_size, len(cells))
    block_colour = _colour_blocks(cells, cell_offsets, n_cells)
    block_order = np.argsort(block_colour, kind="stable")
    block_offsets = np.concatenate([[0], np.cumsum(np.bincount(block_colour))])
    return FaceBlocks(
        block_size=block_size,
        cell_offsets=cell_offsets.astype(np.int32),
        cells=cells.astype(np.int32),
        local_left=local_left.astype(np.int16),
        local_right=local_right.astype(np.int16),
        side_offsets=side_offsets,
        sides=sides,
        block_order=block_order.astype(np.int32),
        block_offsets=block_offsets.astype(np.int32),
    )


def _cell_sides(first_cell: np.ndarray, local_left: np.ndarray, local_right: np.ndarray,
                block_size: int, n_entries: int) -> tuple[np.ndarray, np.ndarray]:
    """Each block cell's faces: ``side_offsets`` and ``sides`` of :class:`FaceBlocks`.

    ``first_cell`` is, per face, the position in ``cells`` of its block's first cell.
    """
    local_face = np.arange(len(local_left), dtype=np.int64) % block_size
    interior = local_right >= 0
    entry = np.concatenate([first_cell + local_left, (first_cell + local_right)[interior]])
    side = np.concatenate([2 * local_face, 2 * local_face[interior] + 1])
    order = np.argsort(entry * (2 * block_size) + side)  # by cell, then by face
    counts = np.bincount(entry, minlength=n_entries)
    side_offsets = np.concatenate([[0], np.cumsum(counts)])
    return side_offsets.astype(np.int32), side[order].astype(np.int16)


def _colour_blocks(cells: np.ndarray, cell_offsets: np.ndarray, n_cells: int) -> np.ndarray:
    """First-fit colours of blocks, in order, so that no two of a colour share a cell.

    Colours are handed out in palettes of 64 (one uint64 mask per cell): blocks that
    find every colour of the current palette taken wait for the next palette.
    """
    colour = np.full(len(cell_offsets) - 1, -1, dtype=np.int64)
    pending = np.arange(len(colour))
    palette = 0
    while len(pending):
        used = np.zeros(n_cells, dtype=np.uint64)
        deferred = []
        for block in pending:
            members = cells[cell_offsets[block]:cell_offsets[block + 1]]
            free = ~np.bitwise_or.reduce(used[members])
            if free == 0:
                deferred.append(block)
                continue
            bit = free & (~free + np.uint64(1))
            colour[block] = palette * MAX_COLOURS + int(bit).bit_length() - 1
            used[members] |= bit
        pending = np.array(deferred, dtype=np.int64)
        palette += 1
    return colour
