"""Orderings from the tools people already use, for benchmarking against ours.

``scipy-rcm`` is SciPy's ``reverse_cuthill_mckee`` as it ships; ``networkx-cm``
is networkx's ``cuthill_mckee_ordering`` (reversed, to compare with RCM);
``gmsh-rcmk``, ``gmsh-hilbert`` and ``gmsh-metis`` are gmsh's
``computeRenumbering`` of the nodes, carried to cells by sorting each cell by
its lowest, then mean, renumbered node.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .io.gmsh_model import gmsh_session
from .mesh import Mesh
from .topology import Topology

#: gmsh element type numbers of the linear cell types.
GMSH_TYPES = {"triangle": 2, "quad": 3, "tetra": 4, "hexahedron": 5, "wedge": 6, "pyramid": 7}

Peer = Callable[[Mesh, Topology], np.ndarray]


def scipy_rcm(mesh: Mesh, topology: Topology) -> np.ndarray:
    """SciPy's reverse Cuthill-McKee on the cell graph (new -> old)."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    graph = topology.cell_graph.to_scipy()
    return np.asarray(reverse_cuthill_mckee(graph, symmetric_mode=True), dtype=np.int64)


def networkx_rcm(mesh: Mesh, topology: Topology) -> np.ndarray:
    """networkx's Cuthill-McKee ordering of the cell graph, reversed (new -> old)."""
    import networkx as nx

    graph = nx.from_scipy_sparse_array(topology.cell_graph.to_scipy())
    order = np.fromiter(nx.utils.cuthill_mckee_ordering(graph), dtype=np.int64,
                        count=mesh.n_cells)
    return order[::-1].copy()


def gmsh_node_ranks(mesh: Mesh, method: str) -> np.ndarray:
    """New index of every node under gmsh's ``computeRenumbering(method)``."""
    with gmsh_session() as gmsh:
        gmsh.model.add("peer")
        entity = gmsh.model.addDiscreteEntity(mesh.dim)
        node_tags = np.arange(1, mesh.n_points + 1)
        gmsh.model.mesh.addNodes(mesh.dim, entity, node_tags, mesh.points.ravel())
        first = 1
        for block in mesh.cells:
            tags = np.arange(first, first + len(block))
            gmsh.model.mesh.addElementsByType(entity, GMSH_TYPES[block.type], tags,
                                              (block.nodes + 1).ravel())
            first += len(block)
        old, new = gmsh.model.mesh.computeRenumbering(method)
    rank = np.empty(mesh.n_points, dtype=np.int64)
    rank[np.asarray(old, np.int64) - 1] = np.asarray(new, np.int64) - 1
    return rank


def cells_from_node_ranks(mesh: Mesh, node_rank: np.ndarray) -> np.ndarray:
    """Cells sorted by their lowest, then mean, node rank (new -> old)."""
    offsets, nodes = mesh.cell_node_csr()
    ranks = node_rank[nodes]
    lowest = np.minimum.reduceat(ranks, offsets[:-1])
    mean = np.add.reduceat(ranks, offsets[:-1]) / np.diff(offsets)
    return np.lexsort((mean, lowest)).astype(np.int64)


def _gmsh_peer(method: str) -> Peer:
    def peer(mesh: Mesh, topology: Topology) -> np.ndarray:
        return cells_from_node_ranks(mesh, gmsh_node_ranks(mesh, method))

    peer.__doc__ = f"gmsh computeRenumbering('{method}') carried to cells."
    return peer


#: Peer name -> function returning a cell order (new -> old).
PEERS: dict[str, Peer] = {
    "scipy-rcm": scipy_rcm,
    "networkx-rcm": networkx_rcm,
    "gmsh-rcmk": _gmsh_peer("RCMK"),
    "gmsh-hilbert": _gmsh_peer("Hilbert"),
    "gmsh-metis": _gmsh_peer("Metis"),
}
