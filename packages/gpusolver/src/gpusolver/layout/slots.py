"""Each cell's faces as a dense table of slots (the cell-owner view of a face list)."""

from __future__ import annotations

import numpy as np


def face_slots(left, right, n_cells: int, n_interior: int, xp=np):
    """``(n_cells, max_faces)`` slots into ``[left values, right values, identity]``.

    Slot ``f`` is face ``f``'s left value, ``n_faces + f`` its right value; unused
    slots point at the identity column ``2 n_faces``. A cell's slots follow its faces'
    order. ``xp``: the array module that computes it (CuPy builds the table on the GPU,
    the set-up's largest sort).

    Examples
    --------
    >>> face_slots(np.array([0, 0, 1]), np.array([1, 2, -1]), 3, 2).tolist()
    [[0, 1], [2, 3], [4, 6]]
    """
    left, right = xp.asarray(left, dtype=np.int64), xp.asarray(right, dtype=np.int64)
    n_faces = len(left)
    cells = xp.concatenate([left, right[:n_interior]])
    slots = xp.concatenate([xp.arange(n_faces), n_faces + xp.arange(n_interior)])
    # one key per (cell, slot): any sort orders them alike, and each cell's slots ascend
    order = xp.argsort(cells * (2 * n_faces + 1) + slots)
    cells, slots = cells[order], slots[order]
    start = xp.searchsorted(cells, xp.arange(n_cells))
    position = xp.arange(len(cells)) - start[cells]
    width = int(position.max()) + 1 if len(cells) else 0
    table = xp.full((n_cells, max(width, 1)), 2 * n_faces, dtype=np.int64)
    table[cells, position] = slots
    return table
