"""Orderings of graph vertices (cells or nodes), registered by name.

An ordering is a function ``(OrderingInput, **params) -> permutation`` with the
permutation stored new -> old. The same orderings apply to cells (cell graph,
centroids, boundary cells as seeds) and to nodes (node graph, coordinates,
boundary nodes as seeds). Adding one is a new module plus an import below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..registry import Registry
from ..topology import CSR


@dataclass(frozen=True)
class OrderingInput:
    """What an ordering may look at.

    Attributes
    ----------
    graph : CSR
        Adjacency of the vertices to order.
    coords : numpy.ndarray
        ``(n, 3)`` positions (cell centroids or node coordinates).
    seeds : numpy.ndarray
        Boundary vertices in the boundary's natural order, for seeded orderings.
    """

    graph: CSR
    coords: np.ndarray
    seeds: np.ndarray

    @property
    def n(self) -> int:
        """Number of vertices."""
        return self.graph.n


Ordering = Callable[..., np.ndarray]

#: Name -> ordering function.
ORDERINGS: Registry[Ordering] = Registry("ordering")
register = ORDERINGS.register
get_ordering = ORDERINGS.lookup


from . import basic, layers, metis, rcm, sfc  # noqa: E402,F401  (fill the registry)
