"""Diffusive velocities of the viscous vortex domains method, away from bodies.

Viscosity moves vorticity as if it were carried by the diffusive velocity
``W = -nu grad(Omega) / Omega``. The method of viscous vortex domains (Dynnikova) smooths
the vorticity of the elements around each element ``i`` with the kernel
``exp(-|r - r_j| / eps_i)`` and differentiates the smoothed field:

    W_i = nu I2_i / (eps_i I1_i),
    I1_i = sum_j Gamma_j exp(-|r_i - r_j| / eps_i),
    I2_i = sum_{j != i} Gamma_j (r_i - r_j) / |r_i - r_j| exp(-|r_i - r_j| / eps_i),

``eps_i`` the element's own smoothing radius, set from the distances to its nearest
neighbours (:func:`smoothing_radii`), so that the sums stay local. The terms of a nearby
body's surface (which keep vorticity from diffusing into the body) are not part of this
module yet.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from gpusolver.errors import ConfigError

#: Neighbours whose mean distance is an element's smoothing radius.
NEIGHBOURS = 3
#: Targets per chunk of the sums (bounds their temporaries).
CHUNK = 1024


def smoothing_radii(positions: np.ndarray, neighbours: int = NEIGHBOURS,
                    smallest: float = 0.0) -> np.ndarray:
    """Each element's mean distance to its ``neighbours`` nearest other elements, at least
    ``smallest``.

    Examples
    --------
    >>> lattice = np.stack(np.meshgrid(np.arange(5.0), np.arange(5.0)), -1).reshape(-1, 2)
    >>> float(smoothing_radii(lattice)[12])  # the centre: its four neighbours at distance 1
    1.0
    """
    positions = np.asarray(positions, dtype=np.float64)
    if len(positions) <= neighbours:
        raise ConfigError(f"smoothing radii need more than {neighbours} elements, got "
                          f"{len(positions)}")
    distances, _ = cKDTree(positions).query(positions, k=neighbours + 1)
    return np.maximum(distances[:, 1:].mean(axis=1), smallest)


def diffusive_velocity(positions: np.ndarray, gammas: np.ndarray, nu: float,
                       radii: np.ndarray) -> np.ndarray:
    """``(N, 2)`` diffusive velocities of the elements, away from bodies (see the module
    docstring); elements whose smoothed vorticity vanishes get none.

    Every pair is summed (the NumPy reference); neighbours beyond a few radii add nothing
    measurable.
    """
    positions = np.asarray(positions, dtype=np.float64)
    gammas = np.asarray(gammas, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    if not nu > 0:
        raise ConfigError(f"the kinematic viscosity must be positive, got {nu!r}")
    if gammas.shape != (len(positions),) or radii.shape != (len(positions),):
        raise ConfigError("positions, gammas and radii must describe the same elements")
    if not np.all(radii > 0):
        raise ConfigError("every smoothing radius must be positive")
    out = np.zeros_like(positions)
    for first in range(0, len(positions), CHUNK):
        rows = slice(first, first + CHUNK)
        d = positions[rows, None, :] - positions[None, :, :]  # (chunk, N, 2)
        distance = np.hypot(d[..., 0], d[..., 1])
        weight = gammas[None, :] * np.exp(-distance / radii[rows, None])
        i1 = weight.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            unit = np.where(distance[..., None] > 0, d / distance[..., None], 0.0)
        i2 = (weight[..., None] * unit).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            w = nu * i2 / (radii[rows, None] * i1[:, None])
        out[rows] = np.where(np.isfinite(w), w, 0.0)
    return out
