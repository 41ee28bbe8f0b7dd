"""Partitions of the cell graph for several GPUs: parts, interior-first order, halos.

METIS (k-way, through :func:`meshorder.orderings.metis.clusters`) splits the cells into
parts. The new cell order puts the parts one after another; inside a part its
*interior* cells (no neighbour in another part) come first, then its *boundary* cells
(those that some other part needs), each group in the order of a given cell ordering
(rcm, hilbert, ...), so every ordering applies inside each part. A part computes its
interior cells while its halo is in flight; its boundary cells wait for the halo.

Halos: a part's halo is every cell of another part within :data:`HALO_LAYERS` faces of
its own cells (the second-order finite-volume residual of a cell reads the gradients of
its neighbours, which read theirs). For each pair of neighbouring parts ``p`` and ``q``,
``send[p, q]`` lists the cells of ``p`` in the halo of ``q`` (new numbering,
increasing), and part ``q`` receives exactly that list from ``p``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import MeshorderError
from .orderings.metis import clusters
from .topology import CSR

#: Layers of neighbouring cells in a part's halo.
HALO_LAYERS = 2


class PartitionError(MeshorderError, ValueError):
    """The cells cannot be split into the parts asked for."""


@dataclass(frozen=True)
class Partition:
    """A split of the cells into parts, with the new order and the halo lists.

    Attributes
    ----------
    order : numpy.ndarray
        New -> old cell numbers: part 0's cells, then part 1's, ...
    offsets : numpy.ndarray
        ``(n_parts + 1,)``: part ``p`` is new cells ``[offsets[p], offsets[p + 1])``.
    n_interior : numpy.ndarray
        ``(n_parts,)``: the part's first ``n_interior[p]`` cells have no neighbour in
        another part.
    send : dict of (int, int) to numpy.ndarray
        ``send[p, q]``: new numbers of the cells of ``p`` in the halo of part ``q``,
        increasing; ``q`` receives them in this order.
    """

    order: np.ndarray
    offsets: np.ndarray
    n_interior: np.ndarray
    send: dict[tuple[int, int], np.ndarray]

    @property
    def n_parts(self) -> int:
        """Number of parts."""
        return len(self.offsets) - 1

    def part_of(self) -> np.ndarray:
        """The part of every cell, in the new numbering."""
        return np.repeat(np.arange(self.n_parts), np.diff(self.offsets))

    def neighbours(self, part: int) -> list[int]:
        """The parts that ``part`` exchanges halo cells with, increasing."""
        return sorted(q for p, q in self.send if p == part)

    def receive(self, part: int, neighbour: int) -> np.ndarray:
        """New numbers of the halo cells ``part`` receives from ``neighbour``."""
        return self.send[neighbour, part]

    def halo(self, part: int) -> np.ndarray:
        """New numbers of every halo cell of ``part``, increasing."""
        received = [self.receive(part, q) for q in self.neighbours(part)]
        return np.sort(np.concatenate([np.zeros(0, np.int64), *received]))

    def metrics(self, graph: CSR,
                weights: np.ndarray | None = None) -> dict[str, float | int | list[int]]:
        """Edge cut, load imbalance, halo cells and neighbours per part.

        ``graph`` is the cell graph in the *old* numbering (the one partitioned);
        ``weights``: each cell's work in that numbering (the imbalance is then the
        heaviest part's work over the mean; default: cells count one each).
        """
        new = np.empty_like(self.order)
        new[self.order] = np.arange(len(self.order))
        part = self.part_of()[new]
        rows = np.repeat(np.arange(graph.n), graph.degrees())
        cut = int(np.count_nonzero(part[rows] != part[graph.indices])) // 2
        sizes = np.bincount(part, weights, minlength=self.n_parts)
        halo = [int(sum(len(self.receive(p, q)) for q in self.neighbours(p)))
                for p in range(self.n_parts)]
        return {"parts": self.n_parts, "edge_cut": cut,
                "imbalance": float(sizes.max() / sizes.mean()) if len(sizes) else 1.0,
                "halo_cells": halo,
                "neighbours": [len(self.neighbours(p)) for p in range(self.n_parts)]}


def partition_cells(graph: CSR, n_parts: int, cell_order: np.ndarray | None = None, *,
                    seed: int = 0, weights: np.ndarray | None = None) -> Partition:
    """Split the cells of ``graph`` into ``n_parts`` parts, interior cells first in each.

    Parameters
    ----------
    graph : CSR
        The cell graph.
    n_parts : int
        Number of parts (one per GPU).
    cell_order : numpy.ndarray, optional
        New -> old order of a cell ordering; inside each part and group its relative
        order is kept (default: the graph's own numbering).
    seed : int
        METIS's seed.
    weights : numpy.ndarray, optional
        Positive work of each cell: METIS balances the parts' sums of it (default: the
        parts' numbers of cells).

    Raises
    ------
    PartitionError
        If there are fewer cells than parts, or METIS leaves a part empty.

    Examples
    --------
    >>> path = CSR.from_pairs(np.arange(5), np.arange(1, 6), 6)
    >>> split = partition_cells(path, 2)
    >>> split.offsets.tolist(), split.n_interior.tolist(), split.halo(0).tolist()
    ([0, 3, 6], [2, 2], [4, 5])
    """
    n = graph.n
    if n_parts < 1 or n_parts > n:
        raise PartitionError(f"cannot split {n} cells into {n_parts} parts")
    part = (np.zeros(n, dtype=np.int64) if n_parts == 1
            else clusters(graph, n_parts, seed, weights).astype(np.int64))
    sizes = np.bincount(part, minlength=n_parts)
    if (sizes == 0).any():
        raise PartitionError(f"METIS left part {int(np.argmin(sizes))} of {n_parts} empty; "
                             "ask for fewer parts")
    rank = np.arange(n, dtype=np.int64)
    if cell_order is not None:
        rank[np.asarray(cell_order)] = np.arange(n)
    rows = np.repeat(np.arange(n), graph.degrees())
    across = part[rows] != part[graph.indices]
    boundary = np.bincount(rows[across], minlength=n) > 0
    order = np.lexsort((rank, boundary, part)).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_interior = np.bincount(part[~boundary], minlength=n_parts).astype(np.int64)
    new = np.empty(n, dtype=np.int64)
    new[order] = np.arange(n)
    # (receiving part, cell) of every halo cell, one layer of faces at a time
    halo = np.unique(np.stack([part[rows[across]], graph.indices[across]], axis=1), axis=0)
    for _ in range(HALO_LAYERS - 1):
        further = _across_faces(graph, halo)
        halo = np.unique(np.concatenate([halo, further[part[further[:, 1]] != further[:, 0]]]),
                         axis=0)
    # (sending part, receiving part, new cell), grouped by pair, cells increasing
    key = np.unique(np.stack([part[halo[:, 1]], halo[:, 0], new[halo[:, 1]]], axis=1), axis=0)
    pairs, starts = np.unique(key[:, :2], axis=0, return_index=True)
    ends = np.append(starts[1:], len(key))[:len(starts)]
    send = {(int(p), int(q)): key[a:b, 2].copy()
            for (p, q), a, b in zip(pairs, starts, ends, strict=True)}
    return Partition(order, offsets, n_interior, send)


def _across_faces(graph: CSR, pairs: np.ndarray) -> np.ndarray:
    """``(part, neighbour)`` for every ``(part, cell)`` row of ``pairs`` and every
    neighbour of the cell in ``graph``."""
    degrees = graph.degrees()[pairs[:, 1]]
    firsts = np.repeat(graph.indptr[pairs[:, 1]], degrees)
    step = np.arange(len(firsts)) - np.repeat(np.cumsum(degrees) - degrees, degrees)
    return np.stack([np.repeat(pairs[:, 0], degrees), graph.indices[firsts + step]], axis=1)
