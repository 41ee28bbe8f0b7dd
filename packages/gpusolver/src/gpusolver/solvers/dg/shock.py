"""Shock capturing for modal DG: Persson and Peraire's modal-decay sensor and a modal filter.

In each element the sensor compares the energy of the density's highest-degree modes
with its whole energy (the basis is orthonormal, so both are sums of squared
coefficients): ``s = log10(sum_{deg = p} c^2 / sum c^2)``. Smooth solutions decay like
``p^-4``, so elements with ``s`` above ``s0 = -4 log10(p) - 1`` hold a discontinuity. Their
modes are damped after every step by ``exp(-alpha eps (deg / p)^2)``, with ``eps`` rising
smoothly from 0 to 1 over ``s0 +- kappa``: at ``eps = 1`` little but the element mean
survives (first order at the shock), and smooth elements are untouched. Persson and
Peraire add artificial viscosity where the sensor fires; filtering the modes needs no
viscous operator and keeps the scheme explicit.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import array_module
from gpusolver.solvers.dg.reference import mode_degrees

#: Half-width of the sensor's ramp, in decades.
KAPPA = 0.5

#: Damping of the highest mode at full strength: exp(-36) is round-off.
ALPHA = 36.0


class ModalFilter:
    """Damp the high modes of elements where the modal-decay sensor fires.

    Parameters
    ----------
    degree : int
        The DG degree (>= 1; degree 0 has nothing to damp).
    """

    def __init__(self, degree: int):
        self.degree = degree
        self.degrees = mode_degrees(degree)
        self.threshold = -4.0 * np.log10(max(degree, 1)) - 1.0

    def strength(self, u) -> np.ndarray:
        """``eps`` in [0, 1] per element, from the density's modes ``u[0]`` ``(n_modes, n)``."""
        xp = array_module(u)
        squares = u[0] * u[0]
        top = squares[-(self.degree + 1):].sum(axis=0)  # the degree-p modes come last
        ratio = top / xp.maximum(squares.sum(axis=0), 1e-300)
        s = xp.log10(xp.maximum(ratio, 1e-300))
        ramp = 0.5 * (1.0 + xp.sin(0.5 * np.pi * (s - self.threshold) / KAPPA))
        return xp.where(s < self.threshold - KAPPA, 0.0,
                        xp.where(s > self.threshold + KAPPA, 1.0, ramp))

    def __call__(self, u):
        """``u`` ``(n_vars, n_modes, n_elements)`` with its troubled elements' modes damped."""
        if self.degree == 0:
            return u
        xp = array_module(u)
        eps = self.strength(u)
        shape = xp.asarray((self.degrees / self.degree) ** 2, dtype=u.dtype)
        return u * xp.exp(-ALPHA * shape[None, :, None] * eps[None, None, :])
