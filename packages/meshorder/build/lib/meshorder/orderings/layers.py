"""Multi-layer boundary-seeded ordering (Gao et al., RKDG reordering, section 2)."""

import numpy as np

from ..graph import cuthill_mckee
from . import OrderingInput, register
from .rcm import reverse_cuthill_mckee


@register("layers")
def layered_order(data: OrderingInput) -> np.ndarray:
    """Layer-by-layer order grown from the boundary.

    The first layer is the seed vertices (the vertices on the chosen boundary
    markers) in the boundary's natural order. Each following layer holds the
    unnumbered neighbours of the layer before, taking the order of their parents.
    Vertices the seeds cannot reach (other components) follow in RCM order.
    """
    visited = np.zeros(data.n, dtype=bool)
    order, _ = cuthill_mckee(data.graph, data.seeds, by_degree=False, visited=visited)
    if visited.all():
        return order
    rest = reverse_cuthill_mckee(data.graph)
    return np.concatenate([order, rest[~visited[rest]]])
