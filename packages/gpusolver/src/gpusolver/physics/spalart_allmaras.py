"""The Spalart-Allmaras turbulence model, negative form (SA-neg), as NASA's Turbulence
Modeling Resource defines it (https://turbmodels.larc.nasa.gov/spalart.html: the standard
model with its ft2 term, Allmaras, Johnson and Spalart's 2012 negative branch and S-tilde
clipping), in the non-dimensional units of :class:`gpusolver.physics.gas.Gas`.

The working variable ``nu_t~`` (``nt`` below) obeys, per unit volume::

    D(rho nt)/Dt = rho (P - D) + 1/sigma [div(rho (nu + nt fn) grad nt) + cb2 rho |grad nt|^2]
                   - 1/sigma (nu + nt) grad rho . grad nt

(TMR's compressible form); the eddy viscosity is ``mu_t = rho nt fv1`` where ``nt >= 0``
and 0 where it is negative. These functions are array code for NumPy or CuPy arrays.
"""

from __future__ import annotations

from gpusolver.backends import array_module

CB1 = 0.1355
SIGMA = 2.0 / 3.0
CB2 = 0.622
KAPPA = 0.41
CW2 = 0.3
CW3 = 2.0
CV1 = 7.1
CT3 = 1.2
CT4 = 0.5
CW1 = CB1 / KAPPA**2 + (1.0 + CB2) / SIGMA
# S-tilde clipping (note 1(c) of the TMR page) and the negative branch's diffusion
CV2 = 0.7
CV3 = 0.9
CN1 = 16.0
#: Free-stream (and inflow) ``nt / nu``: TMR's 3.
FREE_STREAM_RATIO = 3.0
#: ``r`` is capped at this.
R_MAX = 10.0
#: The constants as the kernels read them (``SAConstants`` of
#: ``solvers/fv/kernels/turbulence.cu``), in this order.
KERNEL_CONSTANTS = (CB1, SIGMA, CB2, KAPPA, CW1, CW2, CW3, CV1, CT3, CT4, CV2, CV3, CN1, R_MAX)


def fv1(chi):
    """``chi^3 / (chi^3 + cv1^3)``."""
    chi3 = chi**3
    return chi3 / (chi3 + CV1**3)


def eddy_viscosity(rho, nt, nu):
    """``mu_t = rho nt fv1(nt / nu)`` where ``nt >= 0``, else 0.

    Examples
    --------
    >>> import numpy as np
    >>> eddy_viscosity(np.array([1.0, 1.0]), np.array([3e-6, -1e-6]), 1e-6).round(9).tolist()
    [2.1e-07, 0.0]
    """
    xp = array_module(nt)
    positive = xp.maximum(nt, 0.0)
    return rho * positive * fv1(positive / nu)


def diffusivity(nu, nt):
    """``nu + nt fn``: the diffusion coefficient of ``nt`` (``fn = 1`` where ``nt >= 0``)."""
    xp = array_module(nt)
    chi3 = (nt / nu) ** 3
    fn = xp.where(nt >= 0, 1.0, (CN1 + chi3) / (CN1 - chi3))
    return nu + nt * fn


def source(nt, nu, vorticity, distance):
    """Production minus destruction per unit mass, ``P - D``, and its derivative with
    respect to ``nt`` (its negative part is what an implicit step takes).

    The derivative is all of it: production's dependence on ``nt`` through ``S-tilde``
    (``fv2``, the clipping), ``ft2`` and ``fw`` (through ``r``) included, where ``S-tilde``
    and ``r`` are not at their bounds. With destruction's derivative alone (``fw`` and
    ``ft2`` frozen) the near-wall cells at the NACA 0012's leading edge (``chi`` 0.5 to 4,
    where ``fv2 < 0`` clips ``S-tilde`` and production falls as ``nt`` grows) took explicit
    steps through that fall and swung between two values every step: the residual held
    near 5e-4 (TMR's 225x65 grid, 10 degrees); with the whole derivative it falls ten
    orders (docs/validation.md).

    Parameters
    ----------
    nt, nu, vorticity, distance : array
        Per cell: the working variable, the laminar kinematic viscosity, the vorticity
        magnitude and the wall distance.

    Returns
    -------
    rate, derivative : array

    Examples
    --------
    In the log layer (``nt = kappa u_tau y``, vorticity ``u_tau / (kappa y)``) the source
    balances the diffusion terms, ``(1 + cb2) / sigma (kappa u_tau)^2``:

    >>> import numpy as np
    >>> y, u_tau, nu = 1e-2, 0.05, 1e-6
    >>> rate, _ = source(np.array([KAPPA * u_tau * y]), nu, np.array([u_tau / (KAPPA * y)]),
    ...                  np.array([y]))
    >>> diffusion = (1.0 + CB2) / SIGMA * (KAPPA * u_tau) ** 2
    >>> bool(abs(rate[0] + diffusion) < 2e-2 * diffusion)  # S-bar shifts it 1.7% here
    True
    """
    xp = array_module(nt)
    chi = nt / nu
    kd2 = (KAPPA * distance) ** 2
    chi3 = chi**3
    f_v1 = chi3 / (chi3 + CV1**3)
    d_fv1 = 3.0 * chi**2 * CV1**3 / (chi3 + CV1**3) ** 2  # per unit chi
    fv2 = 1.0 - chi / (1.0 + chi * f_v1)
    d_fv2 = -(1.0 - chi**2 * d_fv1) / (1.0 + chi * f_v1) ** 2
    s_bar = nt * fv2 / kd2
    d_s_bar = (fv2 + chi * d_fv2) / kd2  # per unit nt
    # S-tilde clipped as note 1(c) says: never below 0.3 S
    numerator = CV2**2 * vorticity + CV3 * s_bar
    denominator = xp.maximum((CV3 - 2.0 * CV2) * vorticity - s_bar, 1e-300)
    unclipped = s_bar >= -CV2 * vorticity
    s_tilde = xp.where(unclipped, vorticity + s_bar, vorticity + vorticity * numerator
                       / denominator)
    d_s_tilde = xp.where(unclipped, 1.0, vorticity * (CV3 * denominator + numerator)
                         / denominator**2) * d_s_bar
    d_s_tilde = xp.where(s_tilde > 1e-16, d_s_tilde, 0.0)
    s_tilde = xp.maximum(s_tilde, 1e-16)
    r = nt / (s_tilde * kd2)
    d_r = xp.where(r < R_MAX, 1.0 / (s_tilde * kd2) - r * d_s_tilde / s_tilde, 0.0)
    r = xp.minimum(r, R_MAX)
    g = r + CW2 * (r**6 - r)
    d_g = (1.0 + CW2 * (6.0 * r**5 - 1.0)) * d_r
    cw3_6 = CW3**6
    root = ((1.0 + cw3_6) / (g**6 + cw3_6)) ** (1.0 / 6.0)
    fw = g * root
    d_fw = root * cw3_6 / (g**6 + cw3_6) * d_g
    ft2 = CT3 * xp.exp(-CT4 * chi**2)
    d_ft2 = -2.0 * CT4 * chi * ft2 / nu
    ratio = nt / distance
    destruction = CW1 * fw - CB1 / KAPPA**2 * ft2
    d_destruction = CW1 * d_fw - CB1 / KAPPA**2 * d_ft2
    positive = CB1 * (1.0 - ft2) * s_tilde * nt - destruction * ratio**2
    d_positive = (CB1 * ((1.0 - ft2) * (s_tilde + nt * d_s_tilde) - d_ft2 * s_tilde * nt)
                  - d_destruction * ratio**2 - 2.0 * destruction * ratio / distance)
    negative = CB1 * (1.0 - CT3) * vorticity * nt + CW1 * ratio**2
    d_negative = CB1 * (1.0 - CT3) * vorticity + 2.0 * CW1 * ratio / distance
    return (xp.where(nt >= 0, positive, negative),
            xp.where(nt >= 0, d_positive, d_negative))
