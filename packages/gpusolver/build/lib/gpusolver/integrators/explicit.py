"""Explicit Runge-Kutta time integrators, registered by name.

An integrator advances ``dU/dt = R(U) / V`` by one step with a per-cell time step
``dt`` (a scalar array for global stepping, one value per cell for local stepping).
"""

from __future__ import annotations

from collections.abc import Callable

from meshorder.registry import Registry

#: Name -> ``step(u, rate, dt) -> (u_new, rate_of_u)``, ``rate(u) = R(u) / V``.
INTEGRATORS: Registry = Registry("time integrator")


@INTEGRATORS.register("ssprk3")
def ssprk3(u, rate: Callable, dt):
    """Shu and Osher's three-stage strong-stability-preserving Runge-Kutta."""
    r0 = rate(u)
    u1 = u + dt * r0
    u2 = 0.75 * u + 0.25 * (u1 + dt * rate(u1))
    return u / 3.0 + 2.0 / 3.0 * (u2 + dt * rate(u2)), r0


@INTEGRATORS.register("rk4")
def rk4(u, rate: Callable, dt):
    """Classical fourth-order Runge-Kutta."""
    k1 = rate(u)
    k2 = rate(u + 0.5 * dt * k1)
    k3 = rate(u + 0.5 * dt * k2)
    k4 = rate(u + dt * k3)
    return u + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4), k1
