"""One part of a partitioned mesh as its own finite-volume geometry, with a two-layer halo.

A part computes the residual of its *own* cells (the plan's part range). With the
states of two layers of neighbouring cells (the halo: cells adjacent to the own cells,
then cells adjacent to those), every quantity an own cell's residual reads is exact:
the gradients and limiter of the first halo layer see all their neighbours. So one
exchange of states per residual evaluation suffices, and the part reuses the
single-mesh discretisation unchanged. Faces between two second-layer cells, and
faces from the second layer outwards, are left out (they touch no own cell).

Local cells: the *deep* own cells (no neighbour in the halo) first, then the own cells
next to the halo, then the first halo layer, then the second. The gradients of the
deep cells and the fluxes of faces between two deep cells read no halo state: they are
computed while the halo is in flight.

A rank builds its part from the part's own mesh in the plan (:func:`layout_of_part`:
its cells and halo, :class:`meshorder.part_mesh.PartMesh`), never from the whole mesh.
What any discretisation's part needs for the exchange and the global sums (its cells'
numbers, own cells, boundary faces) is :class:`PartCells`; the DG solver's parts
(:mod:`gpusolver.solvers.dg.solver`) use it too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from gpusolver.layout.geometry import FVGeometry, native_geometry
from meshorder import Topology
from meshorder.faceorder import get_face_order
from meshorder.part_mesh import PartMesh
from meshorder.pipeline import DEFAULT_FACES
from meshorder.plan import PlanPart


@dataclass(frozen=True)
class PartCells:
    """The cells of one part in its local numbering (own cells first, then the halo), and
    its boundary faces: what the exchange, the global sums and the loads of a part need,
    whatever its discretisation.

    Attributes
    ----------
    geometry : FVGeometry or gpusolver.solvers.dg.layout.DGLayout
        The local cells' faces: interior first, then boundary faces grouped by marker
        (``markers``, ``normal``, ``area``, ``face_centre``, ``boundary_nodes``).
    cells : numpy.ndarray
        Global (plan) number of every local cell.
    file_cells : numpy.ndarray
        Number in the mesh file of every local cell.
    mesh_cells : numpy.ndarray
        Number in the part's mesh of every local cell (a whole mesh: in the mesh).
    n_own : int
        Local cells ``[0, n_own)`` are the part's own.
    facets : numpy.ndarray
        For each local boundary face, the number in the mesh file of its facet (-1: none).
    own_boundary : numpy.ndarray
        Positions, among the local boundary faces, of those of own cells: the residual's
        boundary fluxes of these faces are the part's share of the forces.
    """

    geometry: object
    cells: np.ndarray
    file_cells: np.ndarray
    mesh_cells: np.ndarray
    n_own: int
    facets: np.ndarray
    own_boundary: np.ndarray

    def local_of(self, cells: np.ndarray) -> np.ndarray:
        """Local positions of some of the part's cells, given by global number.

        Raises
        ------
        ValueError
            If one of ``cells`` is not the part's.
        """
        order = self._by_number
        positions = order[np.minimum(np.searchsorted(self.cells, cells, sorter=order),
                                     len(order) - 1)]
        if not np.array_equal(self.cells[positions], cells):
            raise ValueError("cells outside the part")
        return positions

    @cached_property
    def _by_number(self) -> np.ndarray:
        """The permutation that sorts :attr:`cells` (one sort for every :meth:`local_of`)."""
        return np.argsort(self.cells)


@dataclass(frozen=True)
class PartLayout(PartCells):
    """The cells and faces of one part for the finite-volume solver (see
    :class:`PartCells`; its ``geometry`` an :class:`FVGeometry` whose ``cell_order`` is
    ``file_cells``).

    Attributes
    ----------
    n_deep : int
        Local cells ``[0, n_deep)`` are own cells with no neighbour in the halo.
    n_near : int
        Local cells ``[0, n_near)`` are the own cells and the first halo layer: the
        cells whose gradients an own cell's residual reads.
    face_ranges : dict of str to (int, int)
        The local interior faces in four contiguous ranges: ``deep`` (two deep cells:
        computable while the halo is in flight), ``own`` (the other faces between two
        own cells), ``interface`` (an own cell and a halo cell: one contiguous range)
        and ``halo`` (two halo cells, only for the first layer's gradients); boundary
        faces follow, by marker.
    """

    n_deep: int
    n_near: int
    face_ranges: dict[str, tuple[int, int]]


def file_facets(part: PartMesh, face_facet: np.ndarray) -> np.ndarray:
    """The number in the mesh file of the facet of each of some boundary faces of a
    part's mesh, given their facets in that mesh (``face_facet``; -1: none, kept)."""
    facets = np.full(len(face_facet), -1, dtype=np.int64)
    facets[face_facet >= 0] = part.facet_ids[face_facet[face_facet >= 0]]
    return facets


def _neighbours(left: np.ndarray, right: np.ndarray, n_interior: int, cells: np.ndarray,
                n_cells: int) -> np.ndarray:
    """Cells across an interior face from ``cells``, not in ``cells``."""
    inside = np.zeros(n_cells, dtype=bool)
    inside[cells] = True
    l, r = left[:n_interior], right[:n_interior]
    across = np.concatenate([r[inside[l] & ~inside[r]], l[inside[r] & ~inside[l]]])
    return np.unique(across)


def layout_of_part(part: PlanPart, faces: str = DEFAULT_FACES, backend=None) -> PartLayout:
    """The layout of the rank's part, from its mesh in the plan alone; its faces of each
    kind (:class:`PartLayout`) in meshorder's face order ``faces`` over the part's cells
    in the plan's order (:func:`_plan_ranks`); its geometry computed with ``backend``'s
    array module (default NumPy; the same bits on the GPU)."""
    mesh = part.mesh
    topology = mesh.topology if mesh.topology is not None else Topology(mesh.mesh)
    face_order = get_face_order(faces)(topology, _plan_ranks(mesh.cells))
    host = native_geometry(mesh.mesh, topology, face_order, backend)
    facets = file_facets(mesh, topology.face_facet[face_order[host.n_interior:]])
    layout = part_layout(host, part.own(), facets)
    file_cells = mesh.file_cells[layout.cells]
    return replace(layout, cells=mesh.cells[layout.cells], file_cells=file_cells,
                   geometry=replace(layout.geometry, cell_order=file_cells))


def _plan_ranks(plan_cells: np.ndarray) -> np.ndarray:
    """Each part-mesh cell's place in the plan's order among the part's cells: the order
    its faces follow. A part as planned lists its cells in that order already; a part
    refined on its rank lists them child by child (the first child of every coarse cell,
    then the second...), where faces in that order would read cells a coarse part apart.

    >>> _plan_ranks(np.array([16, 24, 17, 25])).tolist()
    [0, 2, 1, 3]
    """
    n = len(plan_cells)
    if np.all(plan_cells[1:] > plan_cells[:-1]):
        return np.arange(n)
    ranks = np.empty(n, dtype=np.int64)
    ranks[np.argsort(plan_cells)] = np.arange(n)
    return ranks


def whole_mesh_layout(host: FVGeometry, facets: np.ndarray) -> PartLayout:
    """The whole mesh as one part: every cell its own and deep, no halo, every interior
    face deep; ``facets``: the mesh file's facet of each boundary face (-1: none)."""
    n, ni = host.n_cells, host.n_interior
    empty = (ni, ni)
    return PartLayout(geometry=host, cells=np.arange(n), file_cells=host.cell_order,
                      mesh_cells=np.arange(n), n_own=n,
                      facets=np.asarray(facets, dtype=np.int64),
                      own_boundary=np.arange(host.n_faces - ni), n_deep=n, n_near=n,
                      face_ranges={"deep": (0, ni), "own": empty, "interface": empty,
                                   "halo": empty})


def part_layout(host: FVGeometry, own: np.ndarray, facets: np.ndarray) -> PartLayout:
    """The layout of the part owning cells ``own`` of ``host`` (kept in that order), whose
    boundary faces are ``facets`` in the mesh file; ``cells`` in ``host``'s numbering."""
    n, ni = host.n_cells, host.n_interior
    layer1 = _neighbours(host.left, host.right, ni, own, n)
    layer2 = _neighbours(host.left, host.right, ni, np.concatenate([own, layer1]), n)
    next_to_halo = np.zeros(n, dtype=bool)
    next_to_halo[_neighbours(host.left, host.right, ni, layer1, n)] = True
    next_to_halo = next_to_halo[own]
    own = np.concatenate([own[~next_to_halo], own[next_to_halo]])  # deep cells first
    cells = np.concatenate([own, layer1, layer2])
    local = np.full(n, -1, dtype=np.int64)
    local[cells] = np.arange(len(cells))
    near = np.zeros(n, dtype=bool)  # own and first-layer cells
    near[own] = near[layer1] = True
    left, right = local[host.left], np.where(host.right >= 0, local[np.maximum(host.right, 0)], -1)
    interior = np.arange(ni)
    keep_interior = interior[(left[:ni] >= 0) & (right[:ni] >= 0)
                             & (near[host.left[:ni]] | near[host.right[:ni]])]
    own_cells = np.zeros(n, dtype=bool)
    own_cells[own] = True
    deep_cells = own_cells.copy()
    deep_cells[own[len(own) - int(next_to_halo.sum()):]] = False
    # deep faces, other own-own faces, interface (own-halo), then halo-halo; host order
    # inside each
    l, r = host.left[keep_interior], host.right[keep_interior]
    kind = own_cells[l].astype(np.int8) + own_cells[r] + (deep_cells[l] & deep_cells[r])
    keep_interior = keep_interior[np.argsort(3 - kind, kind="stable")]  # small keys: radix
    counts = np.bincount(kind, minlength=4)[::-1]
    edges = np.concatenate([[0], np.cumsum(counts)])
    face_ranges = {name: (int(edges[k]), int(edges[k + 1]))
                   for k, name in enumerate(("deep", "own", "interface", "halo"))}
    boundary = np.arange(ni, host.n_faces)
    keep_boundary = boundary[near[host.left[ni:]]]
    faces = np.concatenate([keep_interior, keep_boundary])
    # boundary faces keep the host's grouping by marker: each marker's kept faces are
    # one run of them
    start = len(keep_interior)
    markers = {}
    for name, (a, b) in host.markers.items():
        first_kept, end_kept = np.searchsorted(keep_boundary, [a, b])
        if end_kept > first_kept:
            markers[name] = (start + int(first_kept), start + int(end_kept))
    geometry = replace(
        host, volume=host.volume[cells], centroid=host.centroid[:, cells],
        left=left[faces], right=np.where(np.arange(len(faces)) < len(keep_interior),
                                         right[faces], -1),
        normal=host.normal[:, faces], area=host.area[faces],
        face_centre=host.face_centre[:, faces], n_interior=len(keep_interior), markers=markers,
        cell_order=host.cell_order[cells],
        interior_colours=np.array([0, len(keep_interior)], dtype=np.int64),
        boundary_nodes=host.boundary_nodes[keep_boundary - ni])
    own_boundary = np.flatnonzero(own_cells[host.left[keep_boundary]])
    return PartLayout(geometry=geometry, cells=cells, file_cells=geometry.cell_order,
                      mesh_cells=cells, n_own=len(own), facets=facets[keep_boundary - ni],
                      own_boundary=own_boundary, n_deep=len(own) - int(next_to_halo.sum()),
                      n_near=len(own) + len(layer1), face_ranges=face_ranges)
