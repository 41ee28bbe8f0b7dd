"""METIS clusters, ordered by RCM on the cluster graph, RCM order inside each cluster."""

import numpy as np
import pymetis

from ..topology import CSR
from . import OrderingInput, register
from .rcm import reverse_cuthill_mckee

#: Above this many clusters, partition in two levels (METIS k-way degrades with huge k).
MAX_PARTS_PER_CALL = 1024


@register("metis")
def metis_order(data: OrderingInput, *, cluster_size: int = 256, seed: int = 0) -> np.ndarray:
    """Cluster order for cache and shared-memory locality (Chen et al., LU-SGS on GPU).

    pymetis splits the graph into parts of about ``cluster_size`` vertices; the
    parts are ordered by reverse Cuthill-McKee on the graph of parts, and the
    vertices inside a part keep their relative RCM order.
    """
    n_parts = max(1, round(data.n / cluster_size))
    rcm_rank = np.empty(data.n, dtype=np.int64)
    rcm_rank[reverse_cuthill_mckee(data.graph)] = np.arange(data.n)
    if n_parts == 1:
        return np.argsort(rcm_rank).astype(np.int64)
    parts = clusters(data.graph, n_parts, seed)
    n_parts = int(parts.max()) + 1
    rows = np.repeat(np.arange(data.n), data.graph.degrees())
    a, b = parts[rows], parts[data.graph.indices]
    cut = a != b
    part_graph = CSR.from_pairs(a[cut], b[cut], n_parts)
    part_rank = np.empty(n_parts, dtype=np.int64)
    part_rank[reverse_cuthill_mckee(part_graph)] = np.arange(n_parts)
    return np.lexsort((rcm_rank, part_rank[parts])).astype(np.int64)


#: METIS sums vertex weights in 32-bit integers: scaled weights stay below this total.
MAX_TOTAL_WEIGHT = 2**30

#: Scaled weights resolve the largest weight into this many steps.
WEIGHT_STEPS = 1000


def clusters(graph: CSR, n_parts: int, seed: int = 0,
             weights: np.ndarray | None = None) -> np.ndarray:
    """METIS part of every vertex, about ``graph.n / n_parts`` vertices each (or, with
    positive ``weights`` per vertex, about an equal share of their sum each).

    Up to :data:`MAX_PARTS_PER_CALL` parts come from one k-way call. Beyond that
    the graph is first cut into ``ceil(n_parts / MAX_PARTS_PER_CALL)`` regions,
    and each region into its share of parts: faster, and METIS stays within the
    range of part counts it handles well.
    """
    weights = None if weights is None else metis_weights(weights)
    if n_parts <= MAX_PARTS_PER_CALL:
        return _part_graph(graph, n_parts, seed, weights)
    n_regions = -(-n_parts // MAX_PARTS_PER_CALL)
    region = _part_graph(graph, n_regions, seed, weights)
    rows = np.repeat(np.arange(graph.n), graph.degrees())
    inside = region[rows] == region[graph.indices]
    local = np.empty(graph.n, dtype=np.int64)
    parts = np.empty(graph.n, dtype=np.int64)
    shares = _shares(np.bincount(region, weights, minlength=n_regions), n_parts)
    first_part = 0
    for r, share in enumerate(shares):
        members = np.flatnonzero(region == r)
        local[members] = np.arange(len(members))
        keep = inside & (region[rows] == r)
        sub = CSR.from_pairs(local[rows[keep]], local[graph.indices[keep]], len(members))
        parts[members] = first_part + _part_graph(sub, share, seed,
                                                  None if weights is None else weights[members])
        first_part += share
    return parts


def metis_weights(weights: np.ndarray) -> np.ndarray:
    """Positive vertex weights as the integers METIS takes: unchanged when they are
    integers of a small enough sum, else scaled so that the largest is
    :data:`WEIGHT_STEPS` (and the sum below :data:`MAX_TOTAL_WEIGHT`), each at least 1.

    Examples
    --------
    >>> metis_weights(np.array([4, 5, 6])).tolist()
    [4, 5, 6]
    >>> metis_weights(np.array([0.5, 1.0, 0.0001])).tolist()
    [500, 1000, 1]
    """
    weights = np.asarray(weights, dtype=np.float64)
    if np.array_equal(weights, np.rint(weights)) and weights.sum() < MAX_TOTAL_WEIGHT:
        return weights.astype(np.int64)
    scale = min(WEIGHT_STEPS / weights.max(), MAX_TOTAL_WEIGHT / weights.sum())
    return np.maximum(1, np.rint(weights * scale)).astype(np.int64)


def _shares(sizes: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` parts in proportion to ``sizes`` (largest remainders), at least 1 each."""
    exact = total * sizes / sizes.sum()
    shares = np.maximum(1, np.floor(exact).astype(np.int64))
    missing = total - int(shares.sum())
    if missing > 0:
        shares[np.argsort(shares - exact)[:missing]] += 1
    return shares


def _part_graph(graph: CSR, n_parts: int, seed: int,
                weights: np.ndarray | None = None) -> np.ndarray:
    if n_parts <= 1 or graph.n <= n_parts:
        return np.arange(graph.n, dtype=np.int64) * n_parts // max(graph.n, 1)
    adjacency = pymetis.CSRAdjacency(graph.indptr, graph.indices)
    _, parts = pymetis.part_graph(n_parts, adjacency=adjacency,
                                  vweights=weights,
                                  options=pymetis.Options(seed=seed))
    return np.asarray(parts, dtype=np.int64)


def nested_dissection(graph: CSR, seed: int = 0) -> np.ndarray:
    """METIS's fill-reducing nested-dissection order (new -> old) of a symmetric graph.

    The order in which a sparse direct solver should eliminate the graph's vertices
    (the cells of a finite-volume Jacobian, say) to keep the fill-in of its factors low.

    Examples
    --------
    >>> path = CSR.from_pairs(np.array([0, 1]), np.array([1, 2]), 3)
    >>> sorted(nested_dissection(path).tolist())
    [0, 1, 2]
    """
    if graph.n == 0:
        return np.zeros(0, dtype=np.int64)
    adjacency = pymetis.CSRAdjacency(graph.indptr, graph.indices)
    order, _ = pymetis.nested_dissection(adjacency=adjacency, options=pymetis.Options(seed=seed))
    return np.asarray(order, dtype=np.int64)
