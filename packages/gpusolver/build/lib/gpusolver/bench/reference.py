"""Rusanov face flux of the 3D Euler equations: the NumPy reference.

The CUDA kernel in ``solvers/fv/kernels/face_flux.cu`` computes the same residual; this
module is its oracle.
"""

from __future__ import annotations

import numpy as np

from gpusolver.layout.faces import FaceLayout

GAMMA = 1.4


def euler_normal_flux(q: np.ndarray, normal: np.ndarray,
                      gamma: float = GAMMA) -> tuple[np.ndarray, np.ndarray]:
    """Physical flux ``F(q) . n`` and the largest wave speed ``|u.n| + c``.

    Parameters
    ----------
    q : numpy.ndarray
        ``(5, m)`` conserved states (rho, rho u, rho v, rho w, rho E).
    normal : numpy.ndarray
        ``(3, m)`` unit normals.
    """
    rho = q[0]
    u, v, w = q[1] / rho, q[2] / rho, q[3] / rho
    p = (gamma - 1) * (q[4] - 0.5 * rho * (u * u + v * v + w * w))
    un = u * normal[0] + v * normal[1] + w * normal[2]
    flux = np.stack([rho * un, q[1] * un + p * normal[0], q[2] * un + p * normal[1],
                     q[3] * un + p * normal[2], (q[4] + p) * un])
    return flux, np.abs(un) + np.sqrt(gamma * p / rho)


def rusanov_residual(state: np.ndarray, faces: FaceLayout, gamma: float = GAMMA) -> np.ndarray:
    """Sum over faces of ``-flux * area`` into the left cell and ``+`` into the right.

    Boundary faces (``right = -1``) use the left state as the ghost state.

    Parameters
    ----------
    state : numpy.ndarray
        ``(5, n_cells)`` conserved variables.
    faces : FaceLayout

    Returns
    -------
    numpy.ndarray
        ``(5, n_cells)`` residual, in the dtype of ``state``.
    """
    n_cells = state.shape[1]
    left, right = faces.left.astype(np.int64), faces.right.astype(np.int64)
    ql = state[:, left]
    qr = np.where(right >= 0, state[:, np.maximum(right, 0)], ql)
    fl, sl = euler_normal_flux(ql, faces.normal, gamma)
    fr, sr = euler_normal_flux(qr, faces.normal, gamma)
    flux = faces.area * 0.5 * (fl + fr - np.maximum(sl, sr) * (qr - ql))
    residual = np.empty_like(state)
    interior = right >= 0
    for v in range(state.shape[0]):
        residual[v] = (np.bincount(right[interior], flux[v, interior], minlength=n_cells)
                       - np.bincount(left, flux[v], minlength=n_cells))
    return residual


def random_state(n_cells: int, rng: np.random.Generator, dtype: type = np.float64) -> np.ndarray:
    """Physically valid random states: density 0.5-1.5, speeds below 0.5, pressure 0.5-1.5."""
    rho = rng.uniform(0.5, 1.5, n_cells)
    velocity = rng.uniform(-0.5, 0.5, (3, n_cells))
    pressure = rng.uniform(0.5, 1.5, n_cells)
    energy = pressure / (GAMMA - 1) + 0.5 * rho * (velocity**2).sum(axis=0)
    return np.vstack([rho, rho * velocity, energy]).astype(dtype)
