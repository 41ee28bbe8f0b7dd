"""Exact solutions for validation: the Riemann problem, oblique shocks, Couette flow."""

from __future__ import annotations

import math

import numpy as np


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

    from scipy.optimize import brentq
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
    from scipy.optimize import brentq
    beta_max = brentq(lambda b: _derivative(residual, b), mu + 1e-6, math.pi / 2 - 1e-6)
    return math.degrees(brentq(residual, mu + 1e-9, beta_max))


def _derivative(function, x, h=1e-7):
    return (function(x + h) - function(x - h)) / (2 * h)


def couette(gas, points: np.ndarray, lower_temperature: float = 0.80 / 0.85,
            height: float = 2.0) -> np.ndarray:
    """Compressible Couette flow between a wall at rest at ``y = 0`` and one moving at the
    free-stream speed (``gas.mach``, along x) at ``y = height``: conserved states at
    ``points`` ``(2, n)``.

    Constant viscosity and Prandtl number; pressure ``1 / gamma`` and the upper wall's
    temperature 1 (so its density is 1), the lower wall's ``lower_temperature`` (the
    default is the 0.80 / 0.85 of the RKDG paper's case). With ``eta = y / height``:

        u = U eta,  T = T_0 + eta (1 - T_0) + Pr U^2 / (2 c_p) eta (1 - eta),
        rho = gamma p / T,  c_p = 1 / (gamma - 1).

    Examples
    --------
    >>> from gpusolver.physics.gas import Gas
    >>> gas = Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="constant")
    >>> w = gas.to_primitive(couette(gas, np.array([[0.0, 0.0], [0.0, 2.0]])))
    >>> [round(float(v), 12) for v in w[:, 1]], round(float(w[0, 0]), 6)
    ([1.0, 0.1, 0.0, 0.714285714286], 1.0625)
    """
    eta = np.asarray(points)[1] / height
    heating = gas.prandtl * (gas.gamma - 1.0) * gas.mach**2 / 2.0
    temperature = lower_temperature + eta * (1.0 - lower_temperature) + heating * eta * (1 - eta)
    w = np.stack([1.0 / temperature, gas.mach * eta, 0.0 * eta, np.full_like(eta, 1 / gas.gamma)])
    return gas.to_conserved(w)


def isentropic_vortex(points: np.ndarray, t: float, centre=(-0.5, 0.0), velocity=(1.0, 0.0),
                      strength: float = 5.0, gamma: float = 1.4) -> np.ndarray:
    """Shu's isentropic vortex moving with the free stream ``velocity`` (density and
    pressure 1 far away): conserved states ``(4, n)`` at ``points`` ``(2, n)`` at time ``t``,
    an exact solution of the Euler equations.

    Examples
    --------
    >>> far = isentropic_vortex(np.array([[50.0], [0.0]]), 0.0)
    >>> [round(float(v), 12) for v in far[:, 0]]
    [1.0, 1.0, 0.0, 3.0]
    """
    x = points[0] - centre[0] - velocity[0] * t
    y = points[1] - centre[1] - velocity[1] * t
    r2 = x * x + y * y
    f = strength / (2 * np.pi) * np.exp(0.5 * (1 - r2))
    u, v = velocity[0] - f * y, velocity[1] + f * x
    temperature = 1 - (gamma - 1) * strength ** 2 / (8 * gamma * np.pi ** 2) * np.exp(1 - r2)
    rho = temperature ** (1 / (gamma - 1))
    p = rho ** gamma
    return np.stack([rho, rho * u, rho * v, p / (gamma - 1) + 0.5 * rho * (u * u + v * v)])
