"""Each cell's faces as a dense table of slots (the cell-owner view of a face list)."""

from __future__ import annotations

import numpy as np


def face_slots(left: np.ndarray, right: np.ndarray, n_cells: int, n_interior: int) -> np.ndarray:
    """``(n_cells, max_faces)`` slots into ``[left values, right values, identity]``.

    Slot ``f`` is face ``f``'s left value, ``n_faces + f`` its right value; unused
    slots point at the identity column ``2 n_faces``.
    """
    n_faces = len(left)
    cells = np.concatenate([left, right[:n_interior]])
    slots = np.concatenate([np.arange(n_faces), n_faces + np.arange(n_interior)])
    order = np.argsort(cells, kind="stable")
    cells, slots = cells[order], slots[order]
    start = np.searchsorted(cells, np.arange(n_cells))
    position = np.arange(len(cells)) - start[cells]
    width = int(position.max(initial=-1)) + 1
    table = np.full((n_cells, max(width, 1)), 2 * n_faces, dtype=np.int64)
    table[cells, position] = slots
    return table
