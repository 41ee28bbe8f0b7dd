"""Shorter LU-SGS wavefronts: reorder cells inside aligned groups of four.

A Gauss-Seidel sweep in cell order needs as many sequential launches as the
longest chain of neighbours with increasing indices (the forward levels of
:mod:`meshorder.hyperplanes`). In a Cuthill-McKee order much of that chain runs
between neighbours of the same BFS level a few places apart. Reordering the four
cells of a group flips the direction of the edges inside the group and nothing
else: the group keeps its place, so each pass moves the bandwidth by at most six
and the memory sectors a warp of faces touches hardly change, while the chains
through the group can be cut.

Each pass looks only at groups on or near the longest chain, tries all 24 orders
of each such group against the chain lengths that enter and leave it from outside,
and keeps the order with the shortest chain through the group (then the smallest
sum, then the current order). Passes alternate the group alignment by two cells
so that chains crossing a group boundary can be cut too; a pass is kept only if it
cuts the forward levels (the groups decide at once, on the chains of the order
before the pass, so a pass could otherwise lengthen a chain through two groups).
"""

from __future__ import annotations

import itertools

import numpy as np

from .graph import gather, neighbour_offsets
from .hyperplanes import split_by_direction, split_levels
from .metrics import renumber_graph
from .topology import CSR

GROUP = 4
#: Every order of a group, the current one first (so ties keep it).
_ORDERS = np.array(list(itertools.permutations(range(GROUP))), dtype=np.int64)
#: Offsets of the group alignment, one per pass in turn.
_SHIFTS = (0, GROUP // 2)


def shorten_wavefronts(graph: CSR, order: np.ndarray, *, passes: int = 3,
                       slack: float = 0.05) -> np.ndarray:
    """``order`` with cells permuted inside groups of four to cut forward levels.

    Parameters
    ----------
    graph : CSR
        Adjacency in the original numbering.
    order : numpy.ndarray
        Permutation new -> old to refine.
    passes : int
        Most passes; stops early when a pass moves nothing or does not cut levels.
    slack : float
        Groups whose longest chain is within this fraction of the overall longest
        are reordered; the rest keep their order.

    Returns
    -------
    numpy.ndarray
        The refined permutation (new -> old), with no more levels than ``order``.
        A cell moves at most three places per pass.

    Examples
    --------
    A path numbered 0-2-1-3 takes four levels; numbered 0-1-2-3 from its ends
    inwards, two.

    >>> path = CSR(np.array([0, 1, 3, 5, 6]), np.array([2, 2, 3, 0, 1, 1]))
    >>> shorten_wavefronts(path, np.array([0, 2, 1, 3])).tolist()
    [0, 1, 2, 3]
    """
    order = np.asarray(order, dtype=np.int64)
    lower, upper = split_by_direction(renumber_graph(graph, order))
    forward, backward = split_levels(lower, upper), split_levels(lower, upper, backward=True)
    for k in range(passes):
        found = _reorder_groups(lower, upper, forward.level, backward.level,
                                _SHIFTS[k % len(_SHIFTS)], slack)
        if found is None:
            break
        local, rows = found
        new_lower, new_upper = _permute_split(lower, upper, local, rows)
        new_forward = split_levels(new_lower, new_upper)
        if new_forward.n_levels >= forward.n_levels:
            break
        order, lower, upper, forward = order[local], new_lower, new_upper, new_forward
        if k + 1 < passes:
            backward = split_levels(lower, upper, backward=True)
    return order


def _reorder_groups(lower: CSR, upper: CSR, forward: np.ndarray, backward: np.ndarray,
                    shift: int, slack: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Best order of each group ``[4g - shift, 4g - shift + 4)`` on or near the longest chain.

    Returns the permutation of positions (new -> old) and the positions of every
    group that changed, or ``None`` if nothing moves.
    """
    n = lower.n
    through = forward + backward  # longest chain through a cell, minus one
    longest = int(through.max(initial=0))
    first = (GROUP - shift) % GROUP  # start of the first whole group
    n_groups = max(n - first, 0) // GROUP
    cells = first + np.arange(n_groups * GROUP).reshape(n_groups, GROUP)
    cells = cells[through[cells].max(axis=1) >= longest - slack * longest]
    entering, leaving, adjacent = _group_chains(lower, upper, cells, forward, backward)
    linked = adjacent.any(axis=(1, 2))  # other groups have nothing to reorder
    cells = cells[linked]
    best = _best_orders(entering[linked], leaving[linked], adjacent[linked])
    moved = best != 0
    if not moved.any():
        return None
    rows = cells[moved]
    local = np.arange(n)
    local[rows.ravel()] = np.take_along_axis(rows, _ORDERS[best[moved]], axis=1).ravel()
    return local, rows.ravel()


def _permute_split(lower: CSR, upper: CSR, local: np.ndarray,
                   rows: np.ndarray) -> tuple[CSR, CSR]:
    """Both halves of ``split_by_direction(renumber_graph(graph, local))``.

    ``local`` moves vertices only inside groups, and ``rows`` lists every position
    of the groups it changes. A group's lower (and higher) neighbours fill the same
    range of ``indices`` in any order of the group (each edge inside it is lower for
    exactly one end), so only the rows of changed groups are rewritten; the rest is
    relabelled in place.
    """
    n = lower.n
    rank = np.empty(n, dtype=np.int64)
    rank[local] = np.arange(n)
    old = local[rows]
    below, at_below = gather(lower, old)
    above, at_above = gather(upper, old)
    neighbours = rank[np.concatenate([below, above])]
    at = np.concatenate([at_below, at_above])  # position in rows
    is_lower = neighbours < rows[at]
    halves = []
    for half, keep in ((lower, is_lower), (upper, ~is_lower)):
        degrees = half.degrees()
        degrees[rows] = np.bincount(at[keep], minlength=len(rows))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(degrees, out=indptr[1:])
        result = CSR(indptr, rank[half.indices])
        by_row = np.argsort(at[keep], kind="stable")
        result.indices[neighbour_offsets(result, rows)[0]] = neighbours[keep][by_row]
        halves.append(result)
    return halves[0], halves[1]


def _group_chains(lower: CSR, upper: CSR, cells: np.ndarray, forward: np.ndarray,
                  backward: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chains entering and leaving each cell from outside its group, and in-group adjacency.

    Returns ``entering`` (levels the cell must wait for: one more than its highest
    lower-numbered neighbour outside the group, 0 if none), ``leaving`` (the same for
    the backward sweep) and ``adjacent[g, i, j]``, whether cells ``i`` and ``j`` of
    group ``g`` are neighbours.
    """
    flat = cells.ravel()
    group_start = np.repeat(cells[:, 0], GROUP)
    entering = np.zeros(len(flat), dtype=np.int64)
    leaving = np.zeros(len(flat), dtype=np.int64)
    below, at = gather(lower, flat)
    outside = below < group_start[at]
    np.maximum.at(entering, at[outside], forward[below[outside]] + 1)
    inner, partner = at[~outside], below[~outside] - group_start[at[~outside]]
    above, at = gather(upper, flat)
    outside = above >= group_start[at] + GROUP
    np.maximum.at(leaving, at[outside], backward[above[outside]] + 1)
    adjacent = np.zeros((len(cells), GROUP, GROUP), dtype=bool)
    adjacent[inner // GROUP, inner % GROUP, partner] = True
    adjacent[inner // GROUP, partner, inner % GROUP] = True
    shape = (len(cells), GROUP)
    return (entering.reshape(shape).astype(np.int32), leaving.reshape(shape).astype(np.int32),
            adjacent)


def _best_orders(entering: np.ndarray, leaving: np.ndarray, adjacent: np.ndarray) -> np.ndarray:
    """Index into ``_ORDERS`` of the best order of each group.

    For every order, chain lengths are propagated through the group forward
    (``entering``) and backward (``leaving``); the cost is the longest chain through
    any cell, then the sum over the cells. ``argmin`` keeps the first (current)
    order on ties.
    """
    up = np.ascontiguousarray(entering[:, _ORDERS].transpose(2, 0, 1))  # (position, group, order)
    down = np.ascontiguousarray(leaving[:, _ORDERS].transpose(2, 0, 1))
    for k in range(GROUP):  # chains entering position k through earlier positions
        for j in range(k):
            linked = adjacent[:, _ORDERS[:, k], _ORDERS[:, j]]
            np.maximum(up[k], (up[j] + 1) * linked, out=up[k])
    for k in range(GROUP - 1, -1, -1):  # and leaving it through later ones
        for j in range(k + 1, GROUP):
            linked = adjacent[:, _ORDERS[:, k], _ORDERS[:, j]]
            np.maximum(down[k], (down[j] + 1) * linked, out=down[k])
    chain = up + down
    cost = chain.max(axis=0).astype(np.int64) * (GROUP * (int(chain.max(initial=0)) + 1))
    cost += chain.sum(axis=0)
    return np.argmin(cost, axis=1)
