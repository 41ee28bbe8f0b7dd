"""The face-flux kernels' compact copy of a plan's face layout (int32 cells, 3-row normals)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusolver.layout.geometry import FVGeometry


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
    def from_geometry(cls, geometry: FVGeometry, dtype: type = np.float64) -> FaceLayout:
        """The kernels' compact copy of a plan's one face layout (:class:`FVGeometry`).

        Cells as int32, normals with three rows (``z = 0`` in 2D), floats as ``dtype``.
        """
        normal = np.zeros((3, geometry.n_faces))
        normal[:geometry.dim] = geometry.normal
        return cls(
            left=np.ascontiguousarray(geometry.left, dtype=np.int32),
            right=np.ascontiguousarray(geometry.right, dtype=np.int32),
            normal=np.ascontiguousarray(normal, dtype=dtype),
            area=np.ascontiguousarray(geometry.area, dtype=dtype),
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
