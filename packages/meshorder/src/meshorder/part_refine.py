"""Uniform refinement of one part of a partitioned plan, by its own rank.

A rank reads its part of a plan made for a coarse mesh (its own cells and their two-layer
halo, :class:`meshorder.part_mesh.PartMesh`), refines all of it and builds the fine
part's topology from the coarse one's without sorting the fine faces
(:func:`meshorder.refined_topology.refine_with_topology`); the rank's layout reuses it.
The rank computes with its own cells' children and the fine cells within two faces of
them; no process holds the fine mesh.

Every rank numbers the fine cells alike with no exchange: every coarse cell of a 3-D
mesh of tetrahedra, hexahedra and wedges splits into ``8^levels`` cells, so the child
``k`` of coarse cell ``c`` is fine cell ``c * 8^levels + k`` (``k`` from the split's
template, the same on every rank that holds ``c``: :class:`meshorder.refine.Refinement`).
The numbering holds for the plan's order (each part's fine cells one contiguous range,
the parent's children together) and for the file's: a fine cell's number in the file is
its coarse cell's times ``8^levels`` plus ``k``, and boundary facets likewise with
``4^levels``. The halo lists follow from the fine part alone: a part sends another the
own cells within two faces of that part's cells, which the two-layer coarse halo holds.

Pyramids (split into 6 pyramids and 4 tetrahedra) and 2-D meshes are refused: the first
breaks the uniform count, the second needs the new wall nodes numbered alike on every
rank for the ordered surface files.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from .errors import MeshorderError
from .part_mesh import PartMesh
from .plan import PlanPart
from .refined_topology import refine_with_topology
from .surface import body_surface

#: Children of one cell (facet) per level, 3-D.
CELL_CHILDREN, FACET_CHILDREN = 8, 4

#: The cell types whose children number :data:`CELL_CHILDREN`.
UNIFORM_TYPES = frozenset({"tetra", "hexahedron", "wedge"})


def refine_part(part: PlanPart, levels: int, surface: str | None = None) -> PlanPart:
    """``part`` with its mesh refined ``levels`` times: the fine part a rank computes
    (see the module docstring); ``levels`` 0 returns ``part``. With ``surface``, each
    level's new wall nodes move onto that body's true surface
    (:func:`meshorder.surface.body_surface`; every rank moves the nodes it shares with
    another alike, from the same coordinates).

    Raises
    ------
    MeshorderError
        For a 2-D mesh, a part with pyramids, ``levels`` below 0, or a ``surface`` that
        cannot take the part's new wall nodes (:func:`meshorder.surface.body_surface`).
    """
    if levels < 0:
        raise MeshorderError(f"refinement levels must be 0 or more, not {levels}")
    if levels == 0:
        return part
    coarse = part.mesh.mesh
    if coarse.dim != 3:
        raise MeshorderError(f"{coarse.source}: refining each rank's part takes 3-D meshes; "
                             "refine a 2-D mesh whole (`meshorder refine`) before planning")
    other = sorted({b.type for b in coarse.cells} - UNIFORM_TYPES)
    if other:
        raise MeshorderError(f"{coarse.source}: refining each rank's part takes tetrahedra, "
                             f"hexahedra and wedges, not {', '.join(other)}; refine the "
                             "mesh whole (`meshorder refine`) before planning")
    per_cell, per_facet = CELL_CHILDREN ** levels, FACET_CHILDREN ** levels
    with body_surface(surface) as place:
        refined, topology = refine_with_topology(coarse, levels, place)
    fine = refined.mesh
    plan_cells = part.mesh.cells[refined.cell_parent] * per_cell + refined.cell_child
    offsets = np.asarray(part.offsets, dtype=np.int64) * per_cell
    owner = np.searchsorted(offsets, plan_cells, side="right") - 1
    me = part.mesh.part
    left, right = topology.face_cells.T
    inner = right >= 0
    pairs = (left[inner], right[inner])
    own = owner == me
    halo = _within_two_faces(own, pairs) & ~own
    send = {}
    for q in np.unique(owner[halo]):
        near_q = _within_two_faces(owner == q, pairs)
        send[(me, int(q))] = np.sort(plan_cells[own & near_q])
        send[(int(q), me)] = np.sort(plan_cells[halo & (owner == q)])
    n_points = len(coarse.points)
    point_ids = np.concatenate([part.mesh.point_ids,
                                np.full(len(fine.points) - n_points, -1, np.int64)])
    facet_ids = (part.mesh.facet_ids[refined.facet_parent] * per_facet
                 + refined.facet_child)
    file_cells = part.mesh.file_cells[refined.cell_parent] * per_cell + refined.cell_child
    mesh = PartMesh(me, fine, plan_cells, file_cells, point_ids, facet_ids, topology)
    return dataclasses.replace(part, mesh_digest=refined_digest(part.mesh_digest, levels,
                                                                surface),
                               offsets=offsets, send=send, mesh=mesh,
                               children=part.children * per_cell)


def refined_digest(digest: str, levels: int, surface: str | None = None) -> str:
    """The digest that stands for the mesh of ``digest`` refined ``levels`` times (its new
    wall nodes on the true ``surface``, where given)."""
    onto = "" if surface is None else f" onto {surface}"
    return hashlib.sha256(f"{digest} refined {levels}{onto}".encode()).hexdigest()


def _within_two_faces(cells: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Mask of the cells within two faces of the masked ``cells`` (themselves included),
    across the interior faces ``pairs`` (left, right)."""
    reached = cells.copy()
    for _ in range(2):
        left, right = pairs
        step = reached.copy()
        step[right[reached[left]]] = True
        step[left[reached[right]]] = True
        reached = step
    return reached
