"""Menter's k-omega SST model, as NASA's Turbulence Modeling Resource defines its SST-V
form (https://turbmodels.larc.nasa.gov/sst.html: Menter 1994 with the vorticity in the
production term and in the eddy viscosity's limiter), in the non-dimensional units of
:class:`gpusolver.physics.gas.Gas`.

Per unit volume::

    D(rho k)/Dt = P - beta* rho omega k + div((mu + sigma_k mu_t) grad k)
    D(rho omega)/Dt = gamma rho / mu_t P - beta rho omega^2
                      + div((mu + sigma_w mu_t) grad omega)
                      + 2 (1 - F1) rho sigma_w2 / omega grad k . grad omega

with ``P = mu_t Omega^2`` (``Omega`` the vorticity magnitude) limited to
``20 beta* rho omega k``, every constant blended between the inner set (1) and the
outer set (2) by ``F1``, and ``mu_t = rho a1 k / max(a1 omega, Omega F2)``. The
``2/3 rho k`` part of the Reynolds stress is left out of the mean flow, as TMR allows.
These functions are array code for NumPy or CuPy arrays.
"""

from __future__ import annotations

from gpusolver.backends import array_module

SIGMA_K1, SIGMA_W1, BETA1 = 0.85, 0.5, 0.075
SIGMA_K2, SIGMA_W2, BETA2 = 1.0, 0.856, 0.0828
BETA_STAR = 0.09
KAPPA = 0.41
A1 = 0.31
GAMMA1 = BETA1 / BETA_STAR - SIGMA_W1 * KAPPA**2 / BETA_STAR**0.5
GAMMA2 = BETA2 / BETA_STAR - SIGMA_W2 * KAPPA**2 / BETA_STAR**0.5
#: Production is limited to this many times the destruction of ``k``.
PRODUCTION_LIMIT = 20.0
#: TMR's far field: ``k = 9e-9 a^2`` and ``omega = 1e-6 rho a^2 / mu`` (the speed of sound
#: is ``1 / M`` in these units), so that ``mu_t = 0.009 mu``.
FREE_STREAM_K = 9e-9
FREE_STREAM_OMEGA = 1e-6
#: Menter's wall value: ``omega = WALL_OMEGA nu / (beta1 d^2)`` at the wall, ``d`` the
#: distance of the first cell's centre.
WALL_OMEGA = 60.0
#: The constants as the kernels read them (``SSTConstants`` of
#: ``solvers/fv/kernels/turbulence.cu``), in this order.
KERNEL_CONSTANTS = (SIGMA_K1, SIGMA_W1, BETA1, SIGMA_K2, SIGMA_W2, BETA2, BETA_STAR, A1,
                    GAMMA1, GAMMA2, PRODUCTION_LIMIT)


def free_stream(mach: float, mu: float) -> tuple[float, float]:
    """``(k, omega)`` of the free stream (``rho = 1``, sound speed ``1 / mach``).

    Examples
    --------
    >>> k, omega = free_stream(0.2, 1e-6)
    >>> round(k / omega / 1e-6, 6)  # mu_t / mu
    0.009
    """
    a2 = 1.0 / mach**2
    return FREE_STREAM_K * a2, FREE_STREAM_OMEGA * a2 / mu


def blend(f1, inner: float, outer: float):
    """``F1 inner + (1 - F1) outer``."""
    return f1 * inner + (1.0 - f1) * outer


def blending(rho, k, omega, nu, distance, grad_k_dot_grad_omega):
    """``F1`` and ``F2`` per cell.

    Examples
    --------
    Near a wall (small distance) both are 1; far away both tend to 0:

    >>> import numpy as np
    >>> f1, f2 = blending(np.ones(2), np.full(2, 1e-4), np.full(2, 10.0), 1e-5,
    ...                   np.array([1e-4, 10.0]), np.zeros(2))
    >>> f1.round(5).tolist(), f2.round(5).tolist()
    ([1.0, 0.0], [1.0, 0.0])
    """
    xp = array_module(k)
    d2 = distance * distance
    root_k = xp.sqrt(xp.maximum(k, 0.0))
    viscous = 500.0 * nu / (d2 * omega)
    turbulent = root_k / (BETA_STAR * omega * distance)
    cross = xp.maximum(2.0 * rho * SIGMA_W2 / omega * grad_k_dot_grad_omega, 1e-20)
    arg1 = xp.minimum(xp.maximum(turbulent, viscous),
                      4.0 * rho * SIGMA_W2 * xp.maximum(k, 0.0) / (cross * d2))
    arg2 = xp.maximum(2.0 * turbulent, viscous)
    return xp.tanh(arg1**4), xp.tanh(arg2**2)


def eddy_viscosity(rho, k, omega, vorticity, f2):
    """``mu_t = rho a1 k / max(a1 omega, Omega F2)`` (0 where ``k <= 0``)."""
    xp = array_module(k)
    return rho * A1 * xp.maximum(k, 0.0) / xp.maximum(A1 * omega, vorticity * f2)


def sources(rho, k, omega, mu_t, vorticity, f1, grad_k_dot_grad_omega):
    """The sources of the ``k`` and ``omega`` equations per unit volume and their
    derivatives with respect to ``k`` and ``omega`` (the damping parts an implicit step
    takes: destruction's).

    Returns
    -------
    k_rate, omega_rate, k_derivative, omega_derivative : array

    Examples
    --------
    In the log layer (``k = u_tau^2 / sqrt(beta*)``, ``omega = u_tau / (sqrt(beta*)
    kappa y)``, inner constants) production and destruction of ``k`` balance:

    >>> import numpy as np
    >>> u_tau, y = 0.05, 1e-2
    >>> k = np.array([u_tau**2 / BETA_STAR**0.5])
    >>> omega = np.array([u_tau / (BETA_STAR**0.5 * KAPPA * y)])
    >>> vorticity = np.array([u_tau / (KAPPA * y)])
    >>> k_rate, *_ = sources(np.ones(1), k, omega, k / omega, vorticity, np.ones(1),
    ...                      np.zeros(1))
    >>> bool(abs(k_rate[0]) < 1e-12 * (k * omega)[0])
    True
    """
    xp = array_module(k)
    destruction_k = BETA_STAR * rho * omega * xp.maximum(k, 0.0)
    production = xp.minimum(mu_t * vorticity * vorticity, PRODUCTION_LIMIT * destruction_k)
    gamma, beta = blend(f1, GAMMA1, GAMMA2), blend(f1, BETA1, BETA2)
    cross = 2.0 * (1.0 - f1) * rho * SIGMA_W2 / omega * grad_k_dot_grad_omega
    k_rate = production - destruction_k
    omega_rate = (gamma * rho * vorticity * vorticity - beta * rho * omega * omega
                  + cross)
    return k_rate, omega_rate, -BETA_STAR * rho * omega, -2.0 * beta * rho * omega
