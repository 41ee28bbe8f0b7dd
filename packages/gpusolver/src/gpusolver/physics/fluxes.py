"""Numerical fluxes of the Euler equations, registered by name.

Each flux maps left and right primitive states ``(n_vars, m)`` and unit normals
``(dim, m)`` (pointing from left to right) to the numerical flux ``(n_vars, m)``
per unit area. All are consistent (``F(W, W, n) = F(W) . n``) and conservative
(``F(a, b, n) = -F(b, a, -n)``). They run unchanged on NumPy and CuPy arrays.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusolver.backends import array_module
from gpusolver.backends.ids import CONSTANTS, Flux
from gpusolver.physics.gas import Gas, stack
from meshorder.registry import Registry

#: Flux name -> function ``(gas, w_left, w_right, normal) -> flux``.
FLUXES: Registry = Registry("flux")

#: Harten's entropy fix: eigenvalues below this fraction of the sound speed are smoothed.
ENTROPY_FIX = CONSTANTS["ENTROPY_FIX"]
#: LMRoe's fix of its entropy and shear waves (see :func:`lmroe`).
ENTROPY_FIX_LOW_MACH_LINEAR = CONSTANTS["ENTROPY_FIX_LOW_MACH_LINEAR"]


def _where(condition, a, b):
    return array_module(condition).where(condition, a, b)


@FLUXES.register("rusanov")
def rusanov(gas: Gas, wl, wr, normal):
    """Local Lax-Friedrichs: central flux plus the largest wave speed times the jump."""
    speed_l = abs((wl[1:-1] * normal).sum(axis=0)) + gas.sound_speed(wl)
    speed_r = abs((wr[1:-1] * normal).sum(axis=0)) + gas.sound_speed(wr)
    smax = speed_l + (speed_r - speed_l) * (speed_r > speed_l)
    jump = gas.to_conserved(wr) - gas.to_conserved(wl)
    return 0.5 * (gas.euler_flux(wl, normal) + gas.euler_flux(wr, normal) - smax * jump)


#: Local Lax-Friedrichs, the DG literature's name for Rusanov's flux.
FLUXES["llf"] = rusanov

#: Flux name -> its code in the kernels (``enum Flux`` of ``physics/kernels/euler.cuh``;
#: ``jst``: the finite-volume central scheme of :mod:`gpusolver.solvers.fv.jst`).
FLUX_CODES = {"roe": Flux.ROE, "rusanov": Flux.RUSANOV, "llf": Flux.RUSANOV,
              "ausmpw+": Flux.AUSMPW_PLUS, "jst": Flux.JST, "lmroe": Flux.LMROE}


def _harten(eigenvalue, delta):
    """``|lambda|``, smoothed to a parabola below ``delta`` (Harten's entropy fix)."""
    magnitude = abs(eigenvalue)
    small = magnitude < delta
    return _where(small, (magnitude * magnitude + delta * delta) / (2 * delta), magnitude)


@FLUXES.register("roe")
def roe(gas: Gas, wl, wr, normal):
    """Roe's approximate Riemann solver with Harten's entropy fix (Blazek, sec. 4.3.3)."""
    return _roe(gas, wl, wr, normal, low_mach=False)


@FLUXES.register("lmroe")
def lmroe(gas: Gas, wl, wr, normal):
    """Roe's flux with Rieper's low-Mach fix (LMRoe, J. Comput. Phys. 230, 2011): the normal
    velocity jump in the acoustic waves scaled by ``min(1, |u| / c)``, so that the pressure
    dissipation no longer grows as ``1 / M`` in low-speed flow (the spurious pressure drag
    of Roe's flux on stretched grids at M 0.15-0.2); and Harten's entropy fix of the
    entropy and shear waves a tenth of the acoustic waves' (:data:`ENTROPY_FIX_LOW_MACH_LINEAR`):
    the full fix dissipates ``0.05 c`` where a boundary layer's faces carry no normal
    velocity, none at all leaves ``|u_n|`` kinked there, which stalled Newton's method on
    TMR's flat plate near 9.4 orders."""
    return _roe(gas, wl, wr, normal, low_mach=True)


def _roe(gas: Gas, wl, wr, normal, low_mach: bool):
    """Roe's flux; ``low_mach``: with Rieper's fix (see :func:`lmroe`)."""
    g = gas.gamma
    sl, sr = wl[0] ** 0.5, wr[0] ** 0.5
    weight_l, weight_r = sl / (sl + sr), sr / (sl + sr)
    rho = sl * sr
    velocity = weight_l * wl[1:-1] + weight_r * wr[1:-1]
    enthalpy = weight_l * gas.total_enthalpy(wl) + weight_r * gas.total_enthalpy(wr)
    q2 = (velocity * velocity).sum(axis=0)
    c = ((g - 1.0) * (enthalpy - 0.5 * q2)) ** 0.5
    un = (velocity * normal).sum(axis=0)

    d_rho = wr[0] - wl[0]
    d_p = wr[-1] - wl[-1]
    d_velocity = wr[1:-1] - wl[1:-1]
    d_un = (d_velocity * normal).sum(axis=0)

    delta = ENTROPY_FIX * c
    lam_minus = _harten(un - c, delta)
    lam_mid = _harten(un, ENTROPY_FIX_LOW_MACH_LINEAR * c if low_mach else delta)
    lam_plus = _harten(un + c, delta)

    d_acoustic = array_module(c).minimum(1.0, q2**0.5 / c) * d_un if low_mach else d_un
    a_minus = lam_minus * (d_p - rho * c * d_acoustic) / (2 * c * c)
    a_plus = lam_plus * (d_p + rho * c * d_acoustic) / (2 * c * c)
    a_entropy = lam_mid * (d_rho - d_p / (c * c))
    a_shear = lam_mid * rho
    shear_velocity = d_velocity - d_un * normal

    dissipation = stack(wl, [
        (a_minus + a_entropy + a_plus)[None],
        a_minus * (velocity - c * normal) + a_entropy * velocity
        + a_plus * (velocity + c * normal) + a_shear * shear_velocity,
        (a_minus * (enthalpy - un * c) + a_entropy * 0.5 * q2 + a_plus * (enthalpy + un * c)
         + a_shear * ((velocity * d_velocity).sum(axis=0) - un * d_un))[None],
    ])
    return 0.5 * (gas.euler_flux(wl, normal) + gas.euler_flux(wr, normal) - dissipation)


def _split_mach(m, sign):
    """Van Leer's split Mach number ``M+-`` (``sign`` +1 or -1)."""
    subsonic = abs(m) <= 1.0
    return _where(subsonic, sign * 0.25 * (m + sign) ** 2, 0.5 * (m + sign * abs(m)))


def _split_pressure(m, sign):
    """Split pressure ``P+-``: the cubic inside ``|M| <= 1``, a step outside."""
    subsonic = abs(m) <= 1.0
    positive = (m > 0).astype(m.dtype)  # a bool times a float would promote fp32 to fp64
    step = 0.5 * (1.0 + sign * (positive * 2.0 - 1.0))
    return _where(subsonic, 0.25 * (m + sign) ** 2 * (2.0 - sign * m), step)


@FLUXES.register("ausmpw+")
def ausmpw_plus(gas: Gas, wl, wr, normal):
    """AUSMPW+ of Kim, Kim and Rho (J. Comput. Phys. 174, 2001), eqs. (21)-(29).

    The pressure-based weight ``f`` uses its one-dimensional form (the factor from
    the transverse neighbours' pressures is taken as 1), as is usual on unstructured
    meshes.
    """
    g = gas.gamma
    unl = (wl[1:-1] * normal).sum(axis=0)
    unr = (wr[1:-1] * normal).sum(axis=0)
    hl, hr = gas.total_enthalpy(wl), gas.total_enthalpy(wr)
    tangential_l = (wl[1:-1] * wl[1:-1]).sum(axis=0) - unl * unl
    tangential_r = (wr[1:-1] * wr[1:-1]).sum(axis=0) - unr * unr
    h_normal = 0.5 * (hl - 0.5 * tangential_l + hr - 0.5 * tangential_r)
    cs = (2.0 * (g - 1.0) / (g + 1.0) * h_normal) ** 0.5
    mean_positive = (unl + unr) > 0
    upwind_speed = _where(mean_positive, abs(unl), abs(unr))
    c = cs * cs / _where(upwind_speed > cs, upwind_speed, cs)

    ml, mr = unl / c, unr / c
    m_plus, m_minus = _split_mach(ml, 1.0), _split_mach(mr, -1.0)
    p_plus, p_minus = _split_pressure(ml, 1.0), _split_pressure(mr, -1.0)
    pl, pr = wl[-1], wr[-1]
    ps = p_plus * pl + p_minus * pr
    ratio = _where(pl < pr, pl / pr, pr / pl)
    w = 1.0 - ratio**3
    # f = p / ps - 1, and 0 where ps = 0 (both sides supersonic away from the face)
    split = ps != 0
    safe = _where(split, ps, 1.0)
    fl = _where(split, pl / safe - 1.0, 0.0)
    fr = _where(split, pr / safe - 1.0, 0.0)
    m_half = m_plus + m_minus
    positive = m_half >= 0
    mbar_l = _where(positive, m_plus + m_minus * ((1 - w) * (1 + fr) - fl),
                    m_plus * w * (1 + fl))
    mbar_r = _where(positive, m_minus * w * (1 + fr),
                    m_minus + m_plus * ((1 - w) * (1 + fl) - fr))

    def carried(wside, h):
        return stack(wside, [wside[0][None], wside[0] * wside[1:-1], (wside[0] * h)[None]])

    pressure = stack(wl, [0.0 * ps[None], ps * normal, 0.0 * ps[None]])
    return mbar_l * c * carried(wl, hl) + mbar_r * c * carried(wr, hr) + pressure


def get_flux(name: str) -> Callable:
    """The flux function called ``name`` (error lists the valid names)."""
    return FLUXES.lookup(name)
