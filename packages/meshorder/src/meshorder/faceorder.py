"""Face orders that follow a cell order, registered by name.

Interior faces come first; boundary faces follow, grouped by marker (in marker
id order) so that one boundary condition is one contiguous range.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .graph import bfs_levels
from .registry import Registry
from .topology import Topology

FaceOrder = Callable[..., np.ndarray]
FACE_ORDERS: Registry[FaceOrder] = Registry("face order")
_register = FACE_ORDERS.register
get_face_order = FACE_ORDERS.lookup


def _low_high(topology: Topology, cell_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    left = cell_rank[topology.face_cells[:, 0]]
    right = np.where(topology.interior, cell_rank[topology.face_cells[:, 1]], left)
    return np.minimum(left, right), np.maximum(left, right)


def _boundary_group(topology: Topology) -> np.ndarray:
    """Sort key placing interior faces (-1) before boundary faces grouped by marker."""
    return np.where(topology.interior, -1, topology.face_marker)


def _greedy(topology: Topology, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``np.lexsort((high, low, _boundary_group(topology)))``, the interior faces by one
    stable sort of the single key ``low * n_cells + high`` (a refined M6 part's 7.07M
    faces, 2-core CPU, 2026-11-30: 0.21 s against the lexsort's 1.28 s in the file's
    cell order, 2.0 s against 4.7 s in a random one), then the boundary faces
    lexsorted (a few of them)."""
    interior = np.flatnonzero(topology.interior)
    key = low[interior] * max(topology.n_cells, 1) + high[interior]
    boundary = np.flatnonzero(~topology.interior)
    by_marker = np.lexsort((high[boundary], low[boundary], topology.face_marker[boundary]))
    return np.concatenate([interior[np.argsort(key, kind="stable")], boundary[by_marker]])


@_register("greedy")
def greedy_faces(topology: Topology, cell_rank: np.ndarray, **_: object) -> np.ndarray:
    """Faces sorted by their lower-numbered cell in the new order, then the higher one.

    Parameters
    ----------
    topology : Topology
    cell_rank : numpy.ndarray
        New index of each old cell (the inverse of the cell order).

    Returns
    -------
    numpy.ndarray
        Face permutation new -> old.
    """
    low, high = _low_high(topology, cell_rank)
    return _greedy(topology, low, high).astype(np.int64)


@_register("strided")
def strided_faces(topology: Topology, cell_rank: np.ndarray, **_: object) -> np.ndarray:
    """The greedy order taken in sweeps: every cell's first face, then every cell's second
    one, and so on (boundary faces still last, by marker).

    Consecutive faces then have distinct, consecutive lower cells, so that a warp of
    threads, one per face, never adds into one cell twice through one side (the greedy
    order puts a cell's faces side by side: where each face's first cell is its lower
    one, its threads collide on the same cell at every atomic add).

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> topology = Topology(grid_mesh(3, 1))
    >>> rank = np.arange(3)
    >>> low = np.minimum(*topology.face_cells[strided_faces(topology, rank)][:2].T)
    >>> low.tolist()  # the two interior faces: cells 0 and 1, each one's first
    [0, 1]
    """
    low, high = _low_high(topology, cell_rank)
    group = _boundary_group(topology)
    greedy = _greedy(topology, low, high)
    low, group = low[greedy], group[greedy]
    first = np.ones(len(greedy), dtype=bool)  # the first face of each (group, low cell)
    first[1:] = (low[1:] != low[:-1]) | (group[1:] != group[:-1])
    positions = np.arange(len(greedy))
    sweep = positions - np.maximum.accumulate(np.where(first, positions, 0))
    return greedy[np.lexsort((low, sweep, group))].astype(np.int64)


@_register("layered")
def layered_faces(topology: Topology, cell_rank: np.ndarray, *,
                  seed_cells: np.ndarray | None = None, **_: object) -> np.ndarray:
    """Faces grouped by the boundary-distance layer of their cells, then greedy.

    A face belongs to the lower layer of its two cells, layers being BFS distance
    from ``seed_cells`` (default: every boundary cell). Within a layer faces are
    sorted by their lower then higher cell in the new order.
    """
    seeds = topology.boundary_cells() if seed_cells is None else seed_cells
    layer = bfs_levels(topology.cell_graph, seeds)
    layer = np.where(layer < 0, layer.max() + 1, layer)
    left = layer[topology.face_cells[:, 0]]
    right = np.where(topology.interior, layer[topology.face_cells[:, 1]], left)
    low, high = _low_high(topology, cell_rank)
    return np.lexsort((high, low, np.minimum(left, right),
                       _boundary_group(topology))).astype(np.int64)
