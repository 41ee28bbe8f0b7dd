"""Mesh + plan -> Structure-of-Arrays face data in plan order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meshorder import Mesh, Topology
from meshorder.plan import Plan


def face_geometry(mesh: Mesh, topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Unit normals (pointing out of the left cell) and areas of the native faces.

    In 2D a face is an edge and its area is its length (per unit depth).

    Returns
    -------
    normal : numpy.ndarray
        ``(3, n_faces)`` unit normals.
    area : numpy.ndarray
        ``(n_faces,)`` face areas.
    """
    nodes = topology.face_nodes
    p = mesh.points
    if mesh.dim == 2:
        a, b = p[nodes[:, 0]], p[nodes[:, 1]]
        vector = np.column_stack([b[:, 1] - a[:, 1], a[:, 0] - b[:, 0], np.zeros(len(a))])
    else:
        quad = nodes[:, 3] >= 0
        a, b, c = p[nodes[:, 0]], p[nodes[:, 1]], p[nodes[:, 2]]
        d = p[np.where(quad, nodes[:, 3], nodes[:, 0])]
        vector = np.where(quad[:, None], 0.5 * np.cross(c - a, d - b),
                          0.5 * np.cross(b - a, c - a))
    area = np.linalg.norm(vector, axis=1)
    return (vector / area[:, None]).T.copy(), area


@dataclass(frozen=True)
class FaceLayout:
    """Face arrays of a plan, ready for a face kernel.

    Attributes
    ----------
    left, right : numpy.ndarray
        int32 cell indices (new numbering), ``right = -1`` on the boundary.
    normal : numpy.ndarray
        ``(3, n_faces)`` unit normals, left to right.
    area : numpy.ndarray
        Face areas.
    """

    left: np.ndarray
    right: np.ndarray
    normal: np.ndarray
    area: np.ndarray

    @property
    def n_faces(self) -> int:
        """Number of faces."""
        return len(self.left)

    @classmethod
    def from_plan(cls, mesh: Mesh, topology: Topology, plan: Plan,
                  dtype: type = np.float64) -> FaceLayout:
        """Lay out the faces of ``mesh`` in ``plan``'s face order, cells renumbered."""
        plan.check_mesh(mesh.digest(), mesh.source)
        normal, area = face_geometry(mesh, topology)
        order = plan.face_order
        return cls(
            left=np.ascontiguousarray(plan.face_cells[:, 0], dtype=np.int32),
            right=np.ascontiguousarray(plan.face_cells[:, 1], dtype=np.int32),
            normal=np.ascontiguousarray(normal[:, order], dtype=dtype),
            area=np.ascontiguousarray(area[order], dtype=dtype),
        )

    def permuted(self, order: np.ndarray) -> FaceLayout:
        """The same faces in the order ``order`` (new -> old)."""
        return FaceLayout(left=self.left[order], right=self.right[order],
                          normal=np.ascontiguousarray(self.normal[:, order]),
                          area=self.area[order])

    def minimum_bytes(self, n_cells: int, n_vars: int = 5) -> int:
        """Bytes a face-flux pass must move at least: each array element once.

        Face data (two int32 cells, normal, area) is read once; each cell's state
        is read once and its residual read and written once.
        """
        value = self.normal.dtype.itemsize
        return self.n_faces * (2 * 4 + 4 * value) + n_cells * n_vars * 3 * value
