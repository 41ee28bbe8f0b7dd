"""Exact solutions for validation: the Riemann problem and oblique shocks."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq


def _pressure_function(p, rho, pk, c, gamma):
    """Toro's ``f_K(p)``: velocity change across the left or right wave."""
    if p > pk:
        a = 2.0 / ((gamma + 1.0) * rho)
        b = (gamma - 1.0) / (gamma + 1.0) * pk
        return (p - pk) * math.sqrt(a / (p + b))
    return 2.0 * c / (gamma - 1.0) * ((p / pk) ** ((gamma - 1.0) / (2.0 * gamma)) - 1.0)


def riemann(left: tuple[float, float, float], right: tuple[float, float, float],
            xi: np.ndarray, gamma: float = 1.4) -> np.ndarray:
    """Exact solution of the 1D Riemann problem (Toro, ch. 4) at ``xi = x / t``.

    Parameters
    ----------
    left, right : tuple of float
        ``(rho, u, p)`` on each side.
    xi : numpy.ndarray
        Similarity coordinates.

    Returns
    -------
    numpy.ndarray
        ``(3, len(xi))``: density, velocity, pressure.

    Examples
    --------
    >>> w = riemann((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), np.array([0.0]))
    >>> round(float(w[2, 0]), 5)  # Sod's star pressure
    0.30313
    """
    rl, ul, pl = left
    rr, ur, pr = right
    cl, cr = math.sqrt(gamma * pl / rl), math.sqrt(gamma * pr / rr)

    def jump(p):
        return (_pressure_function(p, rl, pl, cl, gamma)
                + _pressure_function(p, rr, pr, cr, gamma) + ur - ul)

    p_star = brentq(jump, 1e-12, 100.0 * max(pl, pr))
    u_star = 0.5 * (ul + ur) + 0.5 * (_pressure_function(p_star, rr, pr, cr, gamma)
                                      - _pressure_function(p_star, rl, pl, cl, gamma))
    g1 = (gamma - 1.0) / (gamma + 1.0)
    out = np.empty((3, len(xi)))
    for k, s in enumerate(np.asarray(xi, dtype=float)):
        if s <= u_star:
            out[:, k] = _side(s, rl, ul, pl, cl, p_star, u_star, gamma, g1, 1.0)
        else:
            out[:, k] = _side(s, rr, ur, pr, cr, p_star, u_star, gamma, g1, -1.0)
    return out


def _side(s, rho, u, p, c, p_star, u_star, gamma, g1, sign):
    """State at ``s`` on one side of the contact (``sign`` +1 left, -1 right)."""
    if p_star > p:  # shock
        rho_star = rho * (p_star / p + g1) / (g1 * p_star / p + 1.0)
        speed = u - sign * c * math.sqrt((gamma + 1) / (2 * gamma) * p_star / p
                                         + (gamma - 1) / (2 * gamma))
        return (rho, u, p) if sign * (s - speed) < 0 else (rho_star, u_star, p_star)
    rho_star = rho * (p_star / p) ** (1.0 / gamma)
    c_star = c * (p_star / p) ** ((gamma - 1) / (2 * gamma))
    head, tail = u - sign * c, u_star - sign * c_star
    if sign * (s - head) < 0:
        return rho, u, p
    if sign * (s - tail) > 0:
        return rho_star, u_star, p_star
    velocity = 2.0 / (gamma + 1) * (sign * c + (gamma - 1) / 2 * u + s)
    sound = sign * (velocity - s)
    density = rho * (sound / c) ** (2.0 / (gamma - 1))
    return density, velocity, p * (sound / c) ** (2.0 * gamma / (gamma - 1))


def oblique_shock_angle(mach: float, deflection_deg: float, gamma: float = 1.4) -> float:
    """Weak oblique-shock angle (degrees) from the theta-beta-M relation.

    Examples
    --------
    >>> round(oblique_shock_angle(2.0, 10.0), 2)
    39.31
    """
    theta = math.radians(deflection_deg)

    def residual(beta):
        return (2.0 / math.tan(beta) * (mach**2 * math.sin(beta) ** 2 - 1)
                / (mach**2 * (gamma + math.cos(2 * beta)) + 2) - math.tan(theta))

    mu = math.asin(1.0 / mach)
    beta_max = brentq(lambda b: _derivative(residual, b), mu + 1e-6, math.pi / 2 - 1e-6)
    return math.degrees(brentq(residual, mu + 1e-9, beta_max))


def _derivative(function, x, h=1e-7):
    return (function(x + h) - function(x - h)) / (2 * h)
