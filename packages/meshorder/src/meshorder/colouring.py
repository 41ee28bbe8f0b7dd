"""Conflict-free colourings of faces (or edges): no two items of one colour share a vertex.

A face touches one or two cells, an edge two nodes; with a colouring, each colour
class can accumulate into its cells without atomics. The algorithm is a
vectorised Jones-Plassmann greedy: every uncoloured item proposes the first
colour its vertices do not yet use, the lowest-numbered item wins each conflict,
and losers try again. Balance comes from each item starting its search at a
rotating preferred colour, so classes fill evenly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import MeshorderError

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


def _lowest_bit(x: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit of each nonzero uint64."""
    low = x & (~x + np.uint64(1))
    return np.log2(low.astype(np.float64)).astype(np.int64)


def colour_items(a: np.ndarray, b: np.ndarray, n_vertices: int, *,
                 balanced: bool = True) -> Colouring:
    """Colour items touching vertices ``a[i]`` and ``b[i]`` (``b[i] = -1``: one vertex).

    Parameters
    ----------
    a, b : numpy.ndarray
        Vertices of each item; priority goes to lower item indices.
    n_vertices : int
        Number of vertices.
    balanced : bool
        Start each item's search at a rotating colour to even out class sizes
        (otherwise plain first-fit).

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
    incidence = np.bincount(np.concatenate([a, b[b < n_vertices]]), minlength=n_vertices)
    k = int(max(1, incidence.max(initial=1)))  # lower bound on colours
    if k > MAX_COLOURS:
        raise ColouringError(f"a vertex touches {k} items; more than {MAX_COLOURS} colours "
                             "would be needed")
    used = np.zeros(n_vertices + 1, dtype=np.uint64)
    colour = np.full(m, -1, dtype=np.int64)
    pending = np.arange(m, dtype=np.int64)
    window = np.uint64((1 << k) - 1) if k < 64 else np.uint64(2**64 - 1)
    while len(pending):
        free = ~(used[a[pending]] | used[b[pending]])
        proposal = _propose(free, pending % k if balanced else np.zeros_like(pending), k, window)
        winners = _winners(pending, proposal, a, b, n_vertices)
        won = pending[winners]
        colour[won] = proposal[winners]
        bits = np.uint64(1) << proposal[winners].astype(np.uint64)
        np.bitwise_or.at(used, a[won], bits)
        np.bitwise_or.at(used, b[won], bits)
        pending = pending[~winners]
    order = np.argsort(colour, kind="stable").astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(colour))]).astype(np.int64)
    return Colouring(colour, order, offsets)


def _propose(free: np.ndarray, start: np.ndarray, k: int, window: np.uint64) -> np.ndarray:
    """First free colour at or after ``start`` (cyclically within ``0..k-1``), else beyond."""
    inside = free & window
    s = start.astype(np.uint64)
    k64 = np.uint64(k)
    rotated = ((inside >> s) | (inside << ((k64 - s) % np.uint64(64)))) & window
    rotated = np.where(s == 0, inside, rotated)
    proposal = np.full(len(free), -1, dtype=np.int64)
    has_inside = inside != 0
    proposal[has_inside] = (_lowest_bit(rotated[has_inside]) + start[has_inside]) % k
    outside = free[~has_inside] & ~window
    if np.any(outside == 0):
        raise ColouringError(f"more than {MAX_COLOURS} colours would be needed")
    proposal[~has_inside] = _lowest_bit(outside)
    return proposal


def _winners(pending: np.ndarray, proposal: np.ndarray, a: np.ndarray, b: np.ndarray,
             n_vertices: int) -> np.ndarray:
    """Mask of pending items that hold their proposal at both vertices (lowest index wins)."""
    width = int(proposal.max()) + 1
    slot_a = a[pending] * width + proposal
    slot_b = b[pending] * width + proposal
    best = np.full((n_vertices + 1) * width, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, slot_a, pending)
    np.minimum.at(best, slot_b, pending)
    one_vertex = b[pending] == n_vertices  # the dummy vertex never conflicts
    return (best[slot_a] == pending) & ((best[slot_b] == pending) | one_vertex)
