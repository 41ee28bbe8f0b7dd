"""One part of a partitioned plan as a mesh of its own: what one rank of a parallel run reads.

A part's mesh holds its own cells and its halo (:meth:`meshorder.partition.Partition.halo`:
every cell of another part within two faces), the points they use and the original
boundary facets that bound them, and the mid-edge nodes of their second-order edges (the
curved walls of a high-order solver), so that a rank builds its topology and geometry
without reading the whole mesh. The faces on the outside of the halo's outer layer have
no facet: its topology gives them the ``unmarked`` marker, and no own cell touches them.

Cells come in the original mesh's block order (one block per cell type); inside a block,
the part's own cells first in plan order, then its halo cells in plan order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .errors import PlanError, TopologyError
from .mesh import Mesh
from .partition import Partition
from .topology import Topology

#: The arrays of a part, by name (as :meth:`PartMesh.arrays` returns them).
PART_ARRAYS = ("points", "point_ids", "cells", "file_cells")

#: The part's :attr:`meshorder.Mesh.mid_edge_nodes` (absent from plans of linear meshes
#: and from those written before it was stored).
MID_EDGE_ARRAY = "mid_edge_nodes"


@dataclass(frozen=True)
class PartMesh:
    """One part of a partitioned plan with its halo cells, as a mesh.

    Attributes
    ----------
    part : int
        The part's number.
    mesh : Mesh
        The part's own and halo cells, their points and bounding facets.
    cells : numpy.ndarray
        The plan (new) number of every cell of ``mesh``.
    file_cells : numpy.ndarray
        The number in the original mesh of every cell of ``mesh``.
    point_ids : numpy.ndarray
        The number in the original mesh of every point of ``mesh``.
    facet_ids : numpy.ndarray
        The number in the original mesh of every facet of ``mesh``.
    topology : Topology or None
        The topology of ``mesh`` where it was built already (a part refined on its rank),
        for the rank's layout to reuse; not stored.
    """

    part: int
    mesh: Mesh
    cells: np.ndarray
    file_cells: np.ndarray
    point_ids: np.ndarray
    facet_ids: np.ndarray
    topology: Topology | None = field(default=None, compare=False, repr=False)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything the part holds as named arrays (see :meth:`from_arrays`)."""
        arrays = {"points": self.mesh.points, "point_ids": self.point_ids,
                  "cells": self.cells, "file_cells": self.file_cells}
        for block in self.mesh.cells:
            arrays[f"cells_{block.type}"] = block.nodes
        if len(self.mesh.mid_edge_nodes):
            arrays[MID_EDGE_ARRAY] = self.mesh.mid_edge_nodes
        sizes = [len(block) for block in self.mesh.facets]  # none: a part inside the mesh
        facet_ids = np.split(self.facet_ids, np.cumsum(sizes)[:-1]) if sizes else []
        for block, markers, ids in zip(self.mesh.facets, self.mesh.facet_markers, facet_ids,
                                       strict=True):
            arrays |= {f"facets_{block.type}": block.nodes,
                       f"facet_markers_{block.type}": markers, f"facet_ids_{block.type}": ids}
        return arrays

    @classmethod
    def from_arrays(cls, part: int, arrays: dict[str, np.ndarray], cell_types: list[str],
                    facet_types: list[str], marker_names: dict[int, str],
                    source: str) -> PartMesh:
        """The part stored as :meth:`arrays` (blocks of ``cell_types`` and ``facet_types``,
        in that order).

        Raises
        ------
        meshorder.PlanError
            If an array is missing or the part's mesh is broken.
        """
        names = [*PART_ARRAYS, *(f"cells_{t}" for t in cell_types),
                 *(f"{kind}_{t}" for t in facet_types
                   for kind in ("facets", "facet_markers", "facet_ids"))]
        missing = [name for name in names if name not in arrays]
        if missing:
            raise PlanError(f"{source}: lacks {', '.join(missing)}")
        blocks = [(t, arrays[f"cells_{t}"], None) for t in cell_types]
        blocks += [(t, arrays[f"facets_{t}"], arrays[f"facet_markers_{t}"]) for t in facet_types]
        try:
            mesh = Mesh.from_blocks(arrays["points"], blocks, marker_names, source)
        except TopologyError as error:
            raise PlanError(str(error)) from None
        if MID_EDGE_ARRAY in arrays:
            mesh = replace(mesh, mid_edge_nodes=np.asarray(arrays[MID_EDGE_ARRAY], np.int64))
        cells = np.asarray(arrays["cells"], np.int64)
        if len(cells) != mesh.n_cells or len(arrays["file_cells"]) != mesh.n_cells:
            raise PlanError(f"{source}: {len(cells)} cell numbers for {mesh.n_cells} cells")
        facet_ids = np.concatenate([np.zeros(0, np.int64),
                                    *(np.asarray(arrays[f"facet_ids_{t}"], np.int64)
                                      for t in facet_types)])
        return cls(part, mesh, cells, np.asarray(arrays["file_cells"], np.int64),
                   np.asarray(arrays["point_ids"], np.int64), facet_ids)


def part_mesh(mesh: Mesh, topology: Topology, cell_order: np.ndarray, split: Partition,
              part: int) -> PartMesh:
    """The mesh of ``part`` of ``split`` (a partition in the plan's numbering, whose
    new -> old cell order is ``cell_order``)."""
    first, end = split.offsets[part], split.offsets[part + 1]
    plan_cells = np.concatenate([np.arange(first, end), split.halo(part)])
    file_cells = np.asarray(cell_order)[plan_cells]
    block_offsets = mesh.block_offsets()
    block = np.searchsorted(block_offsets, file_cells, side="right") - 1
    by_block = np.argsort(block, kind="stable")
    plan_cells, file_cells, block = plan_cells[by_block], file_cells[by_block], block[by_block]
    connectivity = [(mesh.cells[k].type, mesh.cells[k].nodes[file_cells[block == k]
                                                             - block_offsets[k]])
                    for k in range(len(mesh.cells)) if (block == k).any()]
    inside = np.zeros(mesh.n_cells, dtype=bool)
    inside[file_cells] = True
    left, right = topology.face_cells.T
    facets = np.sort(topology.face_facet[(right < 0) & inside[left] & (topology.face_facet >= 0)])
    facet_offsets = np.cumsum([0, *(len(b) for b in mesh.facets)])
    facet_block = np.searchsorted(facet_offsets, facets, side="right") - 1
    bounding = [(mesh.facets[k].type, mesh.facets[k].nodes[facets[facet_block == k]
                                                           - facet_offsets[k]],
                 mesh.facet_markers[k][facets[facet_block == k] - facet_offsets[k]])
                for k in range(len(mesh.facets)) if (facet_block == k).any()]
    corners = np.unique(np.concatenate([nodes.ravel() for _, nodes, *_ in
                                        connectivity + bounding]))
    mid_edges = mesh.mid_edge_nodes[np.isin(mesh.mid_edge_nodes[:, 0], corners)
                                    & np.isin(mesh.mid_edge_nodes[:, 1], corners)]
    point_ids = np.union1d(corners, mid_edges[:, 2])
    blocks = [(t, np.searchsorted(point_ids, nodes), None) for t, nodes in connectivity]
    blocks += [(t, np.searchsorted(point_ids, nodes), markers) for t, nodes, markers in bounding]
    sub = Mesh.from_blocks(mesh.points[point_ids], blocks, mesh.marker_names,
                           f"{mesh.source} (part {part})")
    if len(mid_edges):  # a < b stays: the renumbering keeps the order of the points
        sub = replace(sub, mid_edge_nodes=np.searchsorted(point_ids, mid_edges))
    return PartMesh(part, sub, plan_cells, file_cells, point_ids, facets)  # sorted: by block
