"""Agglomeration: coarse cells for multigrid, grown from seed cells of the cell graph.

A coarse cell is a seed with its neighbours, plus the cells two steps from a seed
(Mavriplis' seed agglomeration for unstructured multigrid). Seeds are three or more
steps apart: a maximal independent set of the graph's square, found vectorised as in
Bell, Dalton and Olson (SIAM J. Sci. Comput. 34, 2012): in each round every undecided
cell whose priority is the largest within two steps becomes a seed, and undecided
cells within two steps of a seed drop out. On a tetrahedral mesh a coarse cell holds
about eight cells, on a triangular one about six.

Coarse cells are numbered in the order of their seeds, so a coarse level keeps the
locality of the fine cell order (the plan's).
"""

from __future__ import annotations

import numpy as np

from .topology import CSR

#: A coarser level is made only while it has at least this many cells.
MIN_COARSE_CELLS = 64


def _neighbourhood_max(graph: CSR, values: np.ndarray) -> np.ndarray:
    """The largest value over each vertex and its neighbours."""
    best = values.copy()
    has = graph.degrees() > 0
    if has.any():
        reduced = np.maximum.reduceat(values[graph.indices], graph.indptr[:-1][has])
        best[has] = np.maximum(best[has], reduced)
    return best


def _row_positions(graph: CSR, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions in ``graph.indices`` of the neighbours of ``rows``, one row after
    the other; where each row's start among them; each row's degree."""
    degrees = graph.indptr[rows + 1] - graph.indptr[rows]
    starts = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(degrees[:-1], out=starts[1:])
    at = np.arange(int(degrees.sum())) + np.repeat(graph.indptr[rows] - starts, degrees)
    return at, starts, degrees


def _rows_max(graph: CSR, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`_neighbourhood_max` of the vertices ``rows`` only."""
    at, starts, degrees = _row_positions(graph, rows)
    best = values[rows]
    has = degrees > 0
    if has.any():
        reduced = np.maximum.reduceat(values[graph.indices[at]], starts[has])
        best[has] = np.maximum(best[has], reduced)
    return best


def _seeds(graph: CSR, seed: int) -> np.ndarray:
    """Vertices three or more steps apart, every other vertex within two of one.

    Once most vertices are decided (after two or three rounds), a round looks only at
    the undecided ones and at their neighbours, whose largest neighbouring key is all
    the undecided ones read (on a 3.3M-cell graph 14 rounds, 24% of the vertices
    undecided after the second, 0.9% after the sixth).
    """
    n = graph.n
    kind = np.int32 if 3 * n < 2**31 else np.int64  # the keys' memory traffic halved
    priority = np.random.default_rng(seed).permutation(n).astype(kind)
    state = np.zeros(n, dtype=kind)  # -1 out (near a seed), 0 undecided, 1 seed
    while len(undecided := np.flatnonzero(state == 0)):
        key = (state + 1) * kind(n) + priority  # out < undecided < seed
        if 2 * len(undecided) > n:
            best = _neighbourhood_max(graph, _neighbourhood_max(graph, key))[undecided]
        else:
            near = np.zeros(n, dtype=bool)
            near[undecided] = True
            near[graph.indices[_row_positions(graph, undecided)[0]]] = True
            near = np.flatnonzero(near)
            once = np.empty_like(key)  # read only at the undecided vertices' neighbours
            once[near] = _rows_max(graph, key, near)
            best = _rows_max(graph, once, undecided)
        state[undecided[best >= 2 * n]] = -1
        state[undecided[best == key[undecided]]] = 1
    return np.flatnonzero(state == 1)


def agglomerate(graph: CSR, seed: int = 0) -> np.ndarray:
    """Coarse cell of every vertex of ``graph`` (numbered by their seeds' order).

    Parameters
    ----------
    graph : CSR
        The cell graph (face neighbours).
    seed : int
        Seed of the random priorities that pick seed cells.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 coarse cell of each vertex, ``0 .. n_coarse - 1``.

    Examples
    --------
    >>> path = CSR.from_pairs(np.arange(8), np.arange(1, 9), 9)
    >>> coarse = agglomerate(path)
    >>> bool(coarse.max() < 4 and np.all(np.diff(coarse) >= 0))
    True
    """
    coarse = np.full(graph.n, -1, dtype=np.int64)
    seeds = _seeds(graph, seed)
    coarse[seeds] = np.arange(len(seeds))
    while (free := coarse < 0).any():  # two rounds: neighbours of seeds, then theirs
        joined = _neighbourhood_max(graph, coarse)
        join = free & (joined >= 0)
        if not join.any():
            raise ValueError("agglomeration left cells unreached")  # not for a mesh graph
        coarse[join] = joined[join]
    return coarse


def coarse_graph(graph: CSR, coarse: np.ndarray) -> CSR:
    """The graph of the coarse cells: two are neighbours when any of their cells are.

    Each edge of the (symmetric) ``graph`` is taken in one direction only: the coarse
    graph is made symmetric again by :meth:`~meshorder.topology.CSR.from_pairs`.
    """
    rows = np.repeat(np.arange(graph.n), graph.degrees())
    upper = rows < graph.indices
    a, b = coarse[rows[upper]], coarse[graph.indices[upper]]
    cut = a != b
    return CSR.from_pairs(a[cut], b[cut], int(coarse.max()) + 1 if len(coarse) else 0)


def hierarchy(graph: CSR, levels: int, seed: int = 0) -> list[np.ndarray]:
    """Coarse cells of up to ``levels`` successively coarser levels.

    Entry ``k`` maps the cells of level ``k`` (0: the mesh) to those of level ``k + 1``.
    Stops early when a level would have fewer than :data:`MIN_COARSE_CELLS` cells.

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> from meshorder.topology import Topology
    >>> maps = hierarchy(Topology(grid_mesh(30, 30)).cell_graph, 3)
    >>> [int(m.max()) + 1 for m in maps]  # doctest: +SKIP
    [150, 28]
    """
    maps = []
    for _ in range(levels):
        coarse = agglomerate(graph, seed)
        n_coarse = int(coarse.max()) + 1
        if n_coarse < MIN_COARSE_CELLS:
            break
        maps.append(coarse)
        graph = coarse_graph(graph, coarse)
    return maps
