"""Meshes and exact solutions shared by the DG tests."""

from __future__ import annotations

import dataclasses

import numpy as np

from meshorder.testing import grid_mesh

GAMMA, BETA = 1.4, 5.0


def vortex(points, t, centre=(-0.5, 0.0), velocity=(1.0, 0.0)):
    """Shu's isentropic vortex (strength 5) moving with the free stream ``velocity``."""
    x = points[0] - centre[0] - velocity[0] * t
    y = points[1] - centre[1] - velocity[1] * t
    r2 = x * x + y * y
    f = BETA / (2 * np.pi) * np.exp(0.5 * (1 - r2))
    u, v = velocity[0] - f * y, velocity[1] + f * x
    temperature = 1 - (GAMMA - 1) * BETA ** 2 / (8 * GAMMA * np.pi ** 2) * np.exp(1 - r2)
    rho = temperature ** (1 / (GAMMA - 1))
    p = rho ** GAMMA
    return np.stack([rho, rho * u, rho * v, p / (GAMMA - 1) + 0.5 * rho * (u * u + v * v)])


def mixed_mesh(rng):
    """Triangles and quadrilaterals (``grid_mesh(6, 5, "mixed")``), inner nodes moved."""
    mesh = grid_mesh(6, 5, "mixed")
    points = mesh.points.copy()
    inner = (points[:, 0] > 0) & (points[:, 0] < 1) & (points[:, 1] > 0) & (points[:, 1] < 1)
    points[inner, :2] += 0.02 * rng.uniform(-1, 1, (inner.sum(), 2))
    return dataclasses.replace(mesh, points=points)
