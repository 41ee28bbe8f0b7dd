"""METIS clusters, ordered by RCM on the cluster graph, RCM order inside each cluster."""

import numpy as np
import pymetis

from ..topology import CSR
from . import OrderingInput, register
from .rcm import reverse_cuthill_mckee


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
    options = pymetis.Options(seed=seed)
    adjacency = pymetis.CSRAdjacency(data.graph.indptr, data.graph.indices)
    _, parts = pymetis.part_graph(n_parts, adjacency=adjacency, options=options)
    parts = np.asarray(parts, dtype=np.int64)
    rows = np.repeat(np.arange(data.n), data.graph.degrees())
    a, b = parts[rows], parts[data.graph.indices]
    cut = a != b
    part_graph = CSR.from_pairs(a[cut], b[cut], n_parts)
    part_rank = np.empty(n_parts, dtype=np.int64)
    part_rank[reverse_cuthill_mckee(part_graph)] = np.arange(n_parts)
    return np.lexsort((rcm_rank, part_rank[parts])).astype(np.int64)
