"""LU-SGS hyperplanes: wavefront levels of the forward and backward sweeps.

In a forward Gauss-Seidel sweep in cell order, a cell needs its lower-numbered
neighbours first; its level is one more than the highest level among them. All
cells of one level are independent and can be updated in one GPU launch. The
backward sweep is the same with the order reversed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import first_occurrences, gather
from .topology import CSR


@dataclass(frozen=True)
class Levels:
    """Cells grouped by wavefront level.

    Attributes
    ----------
    level : numpy.ndarray
        Level of each vertex (new numbering).
    order : numpy.ndarray
        Vertices grouped by level, increasing index inside a level.
    offsets : numpy.ndarray
        Level ``k`` is ``order[offsets[k]:offsets[k+1]]``.
    """

    level: np.ndarray
    order: np.ndarray
    offsets: np.ndarray

    @property
    def n_levels(self) -> int:
        """Number of levels (sequential launches)."""
        return len(self.offsets) - 1

    def widths(self) -> np.ndarray:
        """Number of vertices in each level."""
        return np.diff(self.offsets)


def wavefront_levels(graph: CSR, *, backward: bool = False) -> Levels:
    """Levels of the Gauss-Seidel sweep over vertices ``0..n-1`` of ``graph``.

    Parameters
    ----------
    graph : CSR
        Adjacency in the sweep's numbering (the new cell order).
    backward : bool
        Sweep from the last vertex to the first (dependencies on higher indices).

    Returns
    -------
    Levels

    Examples
    --------
    >>> path = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> wavefront_levels(path).level.tolist()
    [0, 1, 2]
    """
    n = graph.n
    rows = np.repeat(np.arange(n), graph.degrees())
    upstream = (graph.indices > rows) if backward else (graph.indices < rows)
    waiting = np.bincount(rows[upstream], minlength=n)
    level = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(waiting == 0)
    scratch = np.empty(n, dtype=np.int64)
    depth = 0
    while len(frontier):
        level[frontier] = depth
        neighbours, parent = gather(graph, frontier)
        downstream = (neighbours < frontier[parent]) if backward else (
            neighbours > frontier[parent])
        touched = neighbours[downstream]
        np.subtract.at(waiting, touched, 1)
        touched = first_occurrences(touched, scratch)
        frontier = np.sort(touched[waiting[touched] == 0])
        depth += 1
    order = np.lexsort((np.arange(n), level)).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(level, minlength=depth))])
    return Levels(level, order, offsets.astype(np.int64))


def renumber_by_level(levels: Levels) -> np.ndarray:
    """Permutation (new -> old) that numbers cells level by level.

    Every neighbour of a cell that was lower-numbered has a lower forward level,
    and every higher-numbered one a higher level, so after this renumbering each
    cell has exactly the same lower and upper neighbours: the sequential LU-SGS
    sweep is unchanged, and each level is a contiguous range of cells.
    """
    return levels.order.copy()
