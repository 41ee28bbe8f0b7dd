"""Conflict-free colourings of faces (or edges): no two items of one colour share a vertex;
and of cells: no two neighbouring cells share a colour (:func:`colour_cells`).

A face touches one or two cells, an edge two nodes; with a colouring, each colour
class can accumulate into its cells without atomics. The algorithm is a
vectorised Jones-Plassmann first-fit greedy: every uncoloured item proposes the
first colour its vertices do not yet use, the item of lowest (random, seeded)
priority wins each conflict, and losers try again. A balancing pass then moves items from classes
above the mean size into smaller classes wherever both vertices allow, so the
colour count stays that of first-fit and the launches get similar work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import MeshorderError
from .permutation import grouped, stable_argsort
from .topology import CSR

MAX_COLOURS = 64  # one uint64 bit mask per vertex


class ColouringError(MeshorderError, ValueError):
    """The colouring needs more colours than a vertex bit mask holds."""


@dataclass(frozen=True)
class Colouring:
    """Colour classes as a flat order plus offsets.

    Attributes
    ----------
    colour : numpy.ndarray
        Colour of each item.
    order : numpy.ndarray
        Items grouped by colour, increasing item index inside a colour.
    offsets : numpy.ndarray
        Colour ``c`` is ``order[offsets[c]:offsets[c+1]]``.
    """

    colour: np.ndarray
    order: np.ndarray
    offsets: np.ndarray

    @property
    def n_colours(self) -> int:
        """Number of colours used."""
        return len(self.offsets) - 1

    def balance(self) -> float:
        """Largest class size over mean class size (1.0 is perfect)."""
        sizes = np.diff(self.offsets)
        return float(sizes.max() / sizes.mean()) if len(sizes) else 1.0


def colour_cells(graph, seed: int = 0, *, any_degree: bool = False) -> Colouring:
    """Colour the vertices of ``graph`` (a :class:`~meshorder.topology.CSR`) so that no two
    neighbours share a colour: multicolour Gauss-Seidel sweeps update a colour at once.

    Jones-Plassmann first fit, vectorised: in each round every uncoloured vertex whose
    (seeded random) priority beats all its uncoloured neighbours takes the first colour
    that no coloured neighbour holds; those vertices are independent, so a round never
    conflicts. A vertex of degree ``d`` gets one of the first ``d + 1`` colours.

    With ``any_degree``, vertices of any degree: those that find all of the
    :data:`MAX_COLOURS` colours taken by neighbours are coloured afterwards, among
    themselves, with the next :data:`MAX_COLOURS` colours (and so on).

    Raises
    ------
    ColouringError
        If more than :data:`MAX_COLOURS` colours would be needed (and not ``any_degree``).

    Examples
    --------
    >>> from meshorder.topology import CSR
    >>> path = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> colours = colour_cells(path).colour
    >>> bool(colours[0] != colours[1] != colours[2])
    True
    """
    n = graph.n
    if not any_degree and int(graph.degrees().max(initial=0)) >= MAX_COLOURS:
        raise ColouringError(f"a cell has {int(graph.degrees().max())} neighbours; at most "
                             f"{MAX_COLOURS - 1} fit the {MAX_COLOURS}-colour masks")
    graph_rows = np.repeat(np.arange(n), graph.degrees())
    priority = np.random.default_rng(seed).permutation(n)
    # each edge once, from its lower-priority end to its higher one: a vertex loses a
    # round to its uncoloured higher neighbours, and a winner's uncoloured neighbours
    # are all lower (half the edges of the symmetric graph to filter and gather)
    upward = priority[graph.indices] > priority[graph_rows]
    lower, higher = graph_rows[upward], np.asarray(graph.indices, dtype=np.int64)[upward]
    deferred = np.zeros(n, dtype=bool)
    colour = np.full(n, -1, dtype=np.int64)
    used = np.zeros(n, dtype=np.uint64)  # bit c: a neighbour holds colour c
    while (uncoloured := colour < 0).any():
        # only edges between two uncoloured vertices matter from here on
        keep = uncoloured[lower] & uncoloured[higher]
        lower, higher = lower[keep], higher[keep]
        winners = uncoloured.copy()
        winners[lower] = False
        full = winners & (used == np.uint64(2**64 - 1))  # every colour taken: later
        deferred |= full
        colour[full] = MAX_COLOURS  # out of this round's way
        winners &= ~full
        colour[winners] = _lowest_bit(~used[winners])
        edges = winners[higher]
        np.bitwise_or.at(used, lower[edges],
                         np.left_shift(np.uint64(1), colour[higher[edges]].astype(np.uint64)))
    if deferred.any():  # colour them among themselves with the next colours
        inside = deferred[graph_rows] & deferred[graph.indices]
        local = np.cumsum(deferred) - 1
        rest = colour_cells(CSR.from_pairs(local[graph_rows[inside]],
                                           local[graph.indices[inside]], int(deferred.sum())),
                            seed, any_degree=True)
        colour[deferred] = MAX_COLOURS + rest.colour
        colour = np.unique(colour, return_inverse=True)[1].astype(np.int64)  # no gaps
    return Colouring(colour, *grouped(colour))


def _lowest_bit(x: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit of each nonzero uint64: the bits below it and it,
    counted, less one."""
    below = np.bitwise_count(x ^ (x - np.uint64(1)))
    return below.astype(np.int64) - 1


def colour_items(a: np.ndarray, b: np.ndarray, n_vertices: int, *,
                 balanced: bool = True) -> Colouring:
    """Colour items touching vertices ``a[i]`` and ``b[i]`` (``b[i] = -1``: one vertex).

    Parameters
    ----------
    a, b : numpy.ndarray
        Vertices of each item. Conflicts go to a seeded random priority, so the result
        is reproducible.
    n_vertices : int
        Number of vertices.
    balanced : bool
        After first-fit, move items from classes above the mean size into smaller
        classes where their vertices allow, without adding colours.

    Returns
    -------
    Colouring

    Raises
    ------
    ColouringError
        If more than 64 colours would be needed.

    Examples
    --------
    >>> c = colour_items(np.array([0, 1, 0]), np.array([1, 2, -1]), 3)
    >>> bool(c.colour[0] != c.colour[1] and c.colour[0] != c.colour[2])
    True
    """
    m = len(a)
    a = np.asarray(a, dtype=np.int64)
    b = np.where(np.asarray(b) < 0, n_vertices, b).astype(np.int64)  # n_vertices: a dummy
    used = np.zeros(n_vertices + 1, dtype=np.uint64)
    colour = np.full(m, -1, dtype=np.int64)
    pending = np.arange(m, dtype=np.int64)
    # Seeded random priorities. (Index priorities, tried first, mimic sequential first-fit
    # but chain conflicts: each round settled under 1% of the items, and the colour counts
    # came out the same.)
    # int32 where every priority fits: it halves the claim table's memory traffic
    priority = np.random.default_rng(0).permutation(m).astype(
        np.int32 if m < np.iinfo(np.int32).max else np.int64)
    claims = _ClaimTable(n_vertices, priority.dtype)
    while len(pending):
        free = ~(used[a[pending]] | used[b[pending]])
        if np.any(free == 0):
            raise ColouringError(f"more than {MAX_COLOURS} colours would be needed")
        proposal = _lowest_bit(free)
        winners = _winners(pending, proposal, a, b, priority, claims)
        _assign(used, colour, pending[winners], proposal[winners], a, b, n_vertices)
        pending = pending[~winners]
    if m:
        _drop_top_colours(used, colour, a, b, n_vertices, priority, claims)
    if balanced and m:
        _rebalance(used, colour, a, b, n_vertices, priority, claims)
    return Colouring(colour, *grouped(colour))


def _assign(used: np.ndarray, colour: np.ndarray, items: np.ndarray, new: np.ndarray,
            a: np.ndarray, b: np.ndarray, n_vertices: int) -> None:
    """Give ``items`` colours ``new``, keeping the vertex masks in step."""
    old = colour[items]
    had = old >= 0
    if had.any():
        keep = ~(np.uint64(1) << old[had].astype(np.uint64))
        np.bitwise_and.at(used, a[items[had]], keep)
        np.bitwise_and.at(used, b[items[had]], keep)
    colour[items] = new
    bits = np.uint64(1) << new.astype(np.uint64)
    np.bitwise_or.at(used, a[items], bits)
    np.bitwise_or.at(used, b[items], bits)
    used[n_vertices] = 0  # the dummy vertex of one-cell items never blocks a colour


def _drop_top_colours(used: np.ndarray, colour: np.ndarray, a: np.ndarray, b: np.ndarray,
                      n_vertices: int, priority: np.ndarray, claims: _ClaimTable,
                      rounds: int = 16) -> None:
    """Move items of the highest colour into lower free colours; drop the class if emptied."""
    for _ in range(rounds):
        top = int(colour.max())
        if top == 0:
            return
        movers, proposal = _propose_moves(used, a, b, np.flatnonzero(colour == top),
                                          np.uint64((1 << top) - 1), top)
        if not len(movers):
            return
        winners = _winners(movers, proposal, a, b, priority, claims)
        _assign(used, colour, movers[winners], proposal[winners], a, b, n_vertices)


def _rebalance(used: np.ndarray, colour: np.ndarray, a: np.ndarray, b: np.ndarray,
               n_vertices: int, priority: np.ndarray, claims: _ClaimTable,
               rounds: int = 8) -> None:
    """Move items from large classes to small ones (same colour count), in place."""
    n_colours = int(colour.max()) + 1
    target = -(-len(colour) // n_colours)
    for _ in range(rounds):
        sizes = np.bincount(colour, minlength=n_colours)
        small = np.flatnonzero(sizes < target)
        if not len(small) or sizes.max() <= target:
            return
        small_mask = np.bitwise_or.reduce(np.uint64(1) << small.astype(np.uint64))
        movers, proposal = _propose_moves(used, a, b, np.flatnonzero(sizes[colour] > target),
                                          small_mask, n_colours)
        if not len(movers):
            return
        winners = _winners(movers, proposal, a, b, priority, claims)
        movers, proposal = movers[winners], proposal[winners]
        # respect capacities: sources stay >= target, destinations stay <= target
        leave = _rank_within(colour[movers]) < (sizes - target)[colour[movers]]
        arrive = _rank_within(proposal) < (target - sizes)[proposal]
        accept = leave & arrive
        if not accept.any():
            return
        _assign(used, colour, movers[accept], proposal[accept], a, b, n_vertices)


def _propose_moves(used: np.ndarray, a: np.ndarray, b: np.ndarray, movers: np.ndarray,
                   allowed: np.uint64, n_colours: int) -> tuple[np.ndarray, np.ndarray]:
    """Movers with a free colour among ``allowed``, and the colour each proposes."""
    free = ~(used[a[movers]] | used[b[movers]]) & allowed
    movers, free = movers[free != 0], free[free != 0]
    return movers, _lowest_bit(_rotate_by_item(free, movers, n_colours))


def _rotate_by_item(free: np.ndarray, items: np.ndarray, n_colours: int) -> np.ndarray:
    """Keep only the bits of ``free`` at or after a per-item start colour, if any are set.

    Spreads movers over the small classes instead of piling them into the first.
    """
    start = (items % n_colours).astype(np.uint64)
    high = free & ~((np.uint64(1) << start) - np.uint64(1))
    return np.where(high != 0, high, free)


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """Position of each element among the earlier elements of its group (0, 1, ...)."""
    order = stable_argsort(groups)
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.diff(sorted_groups, prepend=-1))
    rank_sorted = np.arange(len(groups)) - np.repeat(starts, np.diff(np.append(starts,
                                                                               len(groups))))
    rank = np.empty(len(groups), dtype=np.int64)
    rank[order] = rank_sorted
    return rank


class _ClaimTable:
    """The lowest priority claiming each (colour, vertex) slot, reused by every round.

    Allocating and filling a fresh table each round cost about an eighth of the
    colouring at 10M faces; this one holds a row of ``n_vertices + 1`` slots per
    colour, grows by whole rows (the rows already there are copied, not refilled) and
    each round puts back the slots it touched. Priorities are int32 where they fit,
    which halves the table's memory traffic.
    """

    ROWS = 8  # first capacity in colours: 3D faces take 7 to 9

    def __init__(self, n_vertices: int, dtype: np.dtype):
        self.n_vertices = n_vertices
        self.empty = np.iinfo(dtype).max
        self.best = np.zeros(0, dtype=dtype)

    def slots(self, colours: np.ndarray, *vertices: np.ndarray) -> list[np.ndarray]:
        """Slots of (colour, vertex) for each vertex array, growing the table for a new
        highest colour."""
        stride = self.n_vertices + 1
        rows = len(self.best) // stride
        width = int(colours.max()) + 1
        if width > rows:
            grown = np.empty(max(width, 2 * rows, self.ROWS) * stride, dtype=self.best.dtype)
            grown[: len(self.best)] = self.best
            grown[len(self.best):] = self.empty
            self.best = grown
        return [colours * stride + v for v in vertices]


def _winners(pending: np.ndarray, proposal: np.ndarray, a: np.ndarray, b: np.ndarray,
             priority: np.ndarray, claims: _ClaimTable) -> np.ndarray:
    """Mask of pending items that hold their proposal at both vertices (lowest priority wins)."""
    slot_a, slot_b = claims.slots(proposal, a[pending], b[pending])
    mine = priority[pending]
    best = claims.best
    np.minimum.at(best, slot_a, mine)
    np.minimum.at(best, slot_b, mine)
    one_vertex = b[pending] == claims.n_vertices  # the dummy vertex never conflicts
    won = (best[slot_a] == mine) & ((best[slot_b] == mine) | one_vertex)
    best[slot_a] = claims.empty
    best[slot_b] = claims.empty
    return won
