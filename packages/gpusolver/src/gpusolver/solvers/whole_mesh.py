"""What the solvers holding the whole mesh share for their outputs and checkpoints."""

from __future__ import annotations

import numpy as np

from gpusolver.monitors.forces import wall_edges


class WholeMesh:
    """Mixin of a solver with the whole ``mesh``; it names its faces' layout in plan order
    (:meth:`face_layout`)."""

    def face_layout(self):
        """The laid-out faces (boundary nodes and marker ranges) of the outputs."""
        raise NotImplementedError

    def wall_edges(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """2-D: the nodes ``(m, 2)`` of the faces of ``surface_pressure(marker)``, and the
        mesh's points they index."""
        return wall_edges(self.face_layout(), marker), self.mesh.points

    @property
    def mesh_digest(self) -> str:
        """:meth:`meshorder.Mesh.digest` of the mesh (checkpoints carry it)."""
        return self.mesh.digest()
