"""LU-SGS hyperplanes: wavefront levels of the forward and backward sweeps.

In a forward Gauss-Seidel sweep in cell order, a cell needs its lower-numbered
neighbours first; its level is one more than the highest level among them. All
cells of one level are independent and can be updated in one GPU launch. The
backward sweep is the same with the order reversed. For neighbours, an earlier
level means a lower number, so "upstream" is "in an earlier level of the sweep".

:func:`colour_levels` gives multicolour sweeps instead: the levels are the cell
colours (a few wide levels rather than hundreds of narrow ones), and a cell's
upstream neighbours are those of earlier colours: Gauss-Seidel in colour order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .colouring import colour_cells
from .graph import gather_neighbours
from .permutation import grouped
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
    return split_levels(*split_by_direction(graph), backward=backward)


def sweep_levels(graph: CSR) -> tuple[Levels, Levels]:
    """Forward and backward levels of ``graph`` (:func:`wavefront_levels` both ways).

    The graph is split into lower and higher neighbours once for both sweeps.
    """
    lower, upper = split_by_direction(graph)
    return split_levels(lower, upper), split_levels(lower, upper, backward=True)


def colour_levels(graph: CSR, seed: int = 0) -> tuple[Levels, Levels]:
    """Forward and backward sweep levels by cell colour (:func:`colour_cells`): the
    forward sweep takes the colours in turn, the backward one in reverse.

    Examples
    --------
    >>> path = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> forward, backward = colour_levels(path)
    >>> forward.n_levels, backward.n_levels
    (2, 2)
    """
    return colour_sweeps(colour_cells(graph, seed).colour)


def colour_sweeps(colour: np.ndarray) -> tuple[Levels, Levels]:
    """Forward and backward sweep levels of cells coloured ``colour`` (see
    :func:`colour_levels`).

    Examples
    --------
    >>> forward, backward = colour_sweeps(np.array([1, 0, 1]))
    >>> forward.order.tolist(), backward.order.tolist()
    ([1, 0, 2], [0, 2, 1])
    """
    reverse = int(colour.max(initial=-1)) - colour
    return Levels(colour, *grouped(colour)), Levels(reverse, *grouped(reverse))


def split_levels(lower: CSR, upper: CSR, *, backward: bool = False) -> Levels:
    """:func:`wavefront_levels` of a graph given as its :func:`split_by_direction` halves."""
    return _sweep(lower, upper) if backward else _sweep(upper, lower)


def split_by_direction(graph: CSR) -> tuple[CSR, CSR]:
    """The lower-numbered and the higher-numbered neighbours of every vertex (self-loops dropped).

    Examples
    --------
    >>> path = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> lower, upper = split_by_direction(path)
    >>> lower.indices.tolist(), upper.indices.tolist()
    ([0, 1], [1, 2])
    """
    rows = np.repeat(np.arange(graph.n, dtype=np.int32 if graph.n < 2**31 else np.int64),
                     graph.degrees())
    parts = []
    for keep in (graph.indices < rows, graph.indices > rows):
        indptr = np.zeros(graph.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[keep], minlength=graph.n), out=indptr[1:])
        parts.append(CSR(indptr, graph.indices[keep]))
    return parts[0], parts[1]


def _sweep(downstream: CSR, upstream: CSR) -> Levels:
    """Peel vertices whose ``upstream`` neighbours are all done, one level at a time.

    Each level's touched vertices come sorted and counted from one ``np.unique`` (faster
    than an unbuffered subtraction, a de-duplication and a sort of the next level).
    """
    n = downstream.n
    waiting = upstream.degrees()
    level = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(waiting == 0)
    fronts = []
    while len(frontier):
        level[frontier] = len(fronts)
        fronts.append(frontier)
        touched, times = np.unique(gather_neighbours(downstream, frontier), return_counts=True)
        waiting[touched] -= times
        frontier = touched[waiting[touched] == 0]
    order = np.concatenate(fronts) if fronts else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(f) for f in fronts], dtype=np.int64)])
    return Levels(level, order.astype(np.int64), offsets.astype(np.int64))


def renumber_by_level(levels: Levels) -> np.ndarray:
    """Permutation (new -> old) that numbers cells level by level.

    Every neighbour of a cell that was lower-numbered has a lower forward level,
    and every higher-numbered one a higher level, so after this renumbering each
    cell has exactly the same lower and upper neighbours: the sequential LU-SGS
    sweep is unchanged, and each level is a contiguous range of cells.
    """
    return levels.order.copy()
