"""Small meshes and solvers shared by the finite-volume tests."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from meshorder.testing import grid_mesh

FARFIELD_SQUARE = {side: "farfield" for side in ("left", "right", "bottom", "top")}

#: The shipped meshes, and the markers of the airfoil ones.
DATA = Path(__file__).resolve().parents[2] / "data"
AIRFOIL = {"airfoil": "slip-wall", "farfield": "farfield"}


def wedge_mesh(nx: int, ny: int, deflection_deg: float, corner: float = 0.25):
    """Quads over a ramp of ``deflection_deg`` starting at ``x = corner``; 1.5 x 1.2 box."""
    mesh = grid_mesh(nx, ny)
    p = mesh.points.copy()
    x = 1.5 * p[:, 0]
    floor = np.where(x > corner, (x - corner) * math.tan(math.radians(deflection_deg)), 0.0)
    p[:, 0], p[:, 1] = x, floor + p[:, 1] * (1.2 - floor)
    return dataclasses.replace(mesh, points=p)


def stretched_grid(nx: int, ny: int, kind: str = "quad"):
    """:func:`~meshorder.testing.grid_mesh` squeezed towards its bottom side (``y**3``,
    0.2 high): cells up to ~1,000 times wider than high there, as in a boundary layer."""
    mesh = grid_mesh(nx, ny, kind)
    mesh.points[:, 1] = 0.2 * mesh.points[:, 1] ** 3
    return mesh


def perturbed_solver(mesh, *, seed=0, amplitude=0.05, **kwargs) -> Solver:
    """A solver on ``mesh`` (far field everywhere unless given) with a random state."""
    kwargs.setdefault("backend", "numpy")
    boundaries = kwargs.pop("boundaries", {m: "farfield" for m in marker_names(mesh)})
    solver = Solver(mesh, kwargs.pop("gas", Gas(dim=mesh.dim, mach=0.4, aoa_deg=10.0)),
                    boundaries, **kwargs)
    rng = np.random.default_rng(seed)
    w = solver.primitive()
    w *= 1.0 + amplitude * rng.uniform(-1, 1, w.shape)
    solver.set_primitive(w)
    return solver


def steps_to_fall(solver, fall: float, most: int) -> int | None:
    """Steps until the density residual is ``fall`` times its first value; None if not
    within ``most``."""
    first = None
    for step in range(1, most + 1):
        density = solver.step()[0]
        first = first or density
        if density <= fall * first:
            return step
    return None


def marker_names(mesh) -> list[str]:
    """Names of the markers that label boundary faces of ``mesh``."""
    from meshorder import Topology
    topology = Topology(mesh)
    present = np.unique(topology.face_marker[topology.face_marker >= 0])
    return [topology.marker_names[int(m)] for m in present]


__all__ = ["AIRFOIL", "DATA", "FARFIELD_SQUARE", "Gas", "Scheme", "Solver", "Stepping",
           "marker_names", "perturbed_solver", "steps_to_fall", "wedge_mesh"]
