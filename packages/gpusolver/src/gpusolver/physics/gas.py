"""Perfect gas: conserved/primitive conversions, free stream and Sutherland's law.

Variables are non-dimensional: free-stream density 1, free-stream sound speed 1
(so free-stream pressure ``1/gamma`` and temperature ``T = gamma p / rho = 1``),
reference length 1 (the chord), free-stream speed ``mach``.

Arrays are ``[variable, ...]``: conserved ``U = (rho, rho u_1..u_d, rho E)``,
primitive ``W = (rho, u_1..u_d, p)``. Every function works on NumPy and CuPy arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpusolver.backends import array_module

#: Sutherland's constant of air (K).
SUTHERLAND_K = 110.4
#: How the viscosity follows the temperature (:meth:`Gas.viscosity`).
VISCOSITY_LAWS = ("sutherland", "constant")


#: Turbulent Prandtl number of RANS heat fluxes.
PRANDTL_TURBULENT = 0.9

#: 3D lift axes: name -> (the side axis, the lift axis) with x, side, lift right-handed.
LIFT_AXES = {"z": (np.eye(3)[1], np.eye(3)[2]), "y": (-np.eye(3)[2], np.eye(3)[1])}


@dataclass(frozen=True)
class Gas:
    """Gas properties and the free stream.

    Attributes
    ----------
    dim : int
        2 or 3.
    mach : float
        Free-stream Mach number.
    aoa_deg : float
        Angle of attack: the free stream lies in the x-y plane in 2D and, in 3D, in the
        plane of x and ``lift_axis``.
    lift_axis : str
        3D: the axis lift points along at zero angle, ``z`` (a z-up mesh) or ``y`` (a
        y-up mesh, as CAD often exports); 2D: ``y``.
    sideslip_deg : float
        3D: angle of sideslip, from x towards the side axis (``y`` for a z-up mesh,
        ``-z`` for a y-up one: x, side and lift axes form a right-handed frame), as SU2's.
    gamma : float
        Ratio of specific heats.
    reynolds : float or None
        Reynolds number per unit length; None for inviscid flow.
    prandtl : float
    temperature_ref : float
        Free-stream temperature in K, for Sutherland's law.
    viscosity_law : str
        ``sutherland`` or ``constant`` (``mu = mu_ref`` at every temperature, as exact
        solutions such as compressible Couette flow assume).
    """

    dim: int
    mach: float
    aoa_deg: float = 0.0
    lift_axis: str | None = None
    sideslip_deg: float = 0.0
    gamma: float = 1.4
    reynolds: float | None = None
    prandtl: float = 0.72
    temperature_ref: float = 288.15
    viscosity_law: str = "sutherland"

    def __post_init__(self):
        if self.lift_axis is None:
            object.__setattr__(self, "lift_axis", "y" if self.dim == 2 else "z")
        if self.dim == 2 and (self.lift_axis != "y" or self.sideslip_deg != 0.0):
            raise ValueError("a 2D flow lifts along y and has no sideslip")
        if self.lift_axis not in LIFT_AXES:
            raise ValueError(f"unknown lift axis {self.lift_axis!r}; valid: "
                             f"{', '.join(LIFT_AXES)}")
        if self.viscosity_law not in VISCOSITY_LAWS:
            raise ValueError(f"unknown viscosity law {self.viscosity_law!r}; valid: "
                             f"{', '.join(VISCOSITY_LAWS)}")

    @property
    def n_vars(self) -> int:
        """Number of conserved variables, ``dim + 2``."""
        return self.dim + 2

    def _axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The unit x, side and lift axes (a right-handed frame in 3D)."""
        if self.dim == 2:
            return np.array([1.0, 0.0]), np.zeros(2), np.array([0.0, 1.0])
        return np.eye(3)[0], LIFT_AXES[self.lift_axis][0], LIFT_AXES[self.lift_axis][1]

    @property
    def flow_direction(self) -> np.ndarray:
        """Unit vector of the free stream.

        Examples
        --------
        >>> Gas(dim=3, mach=0.8, aoa_deg=90.0, lift_axis="y").flow_direction.round(12)
        array([0., 1., 0.])
        """
        a, b = math.radians(self.aoa_deg), math.radians(self.sideslip_deg)
        x, side, lift = self._axes()
        return math.cos(a) * math.cos(b) * x + math.sin(b) * side + math.sin(a) * math.cos(b) * lift

    @property
    def lift_direction(self) -> np.ndarray:
        """Unit vector normal to the free stream in the plane of x and the lift axis,
        pointing 'up' (with sideslip, lift stays in that plane, as SU2 reports it)."""
        a = math.radians(self.aoa_deg)
        x, _, lift = self._axes()
        return -math.sin(a) * x + math.cos(a) * lift

    @property
    def free_stream(self) -> np.ndarray:
        """Primitive free-stream state ``(rho, u, p)``."""
        return np.concatenate([[1.0], self.mach * self.flow_direction, [1.0 / self.gamma]])

    @property
    def dynamic_pressure(self) -> float:
        """``rho u^2 / 2`` of the free stream."""
        return 0.5 * self.mach**2

    @property
    def mu_ref(self) -> float:
        """Free-stream viscosity ``mach / reynolds`` (0 for inviscid flow)."""
        return 0.0 if self.reynolds is None else self.mach / self.reynolds

    def viscosity(self, temperature):
        """Sutherland's law (or a constant), non-dimensional: ``mu(T)`` with
        ``mu(1) = mu_ref``."""
        if self.viscosity_law == "constant":
            return self.mu_ref + 0.0 * temperature
        s = SUTHERLAND_K / self.temperature_ref
        return self.mu_ref * temperature**1.5 * (1.0 + s) / (temperature + s)

    def conductivity(self, mu):
        """Heat conductivity ``mu cp / Pr`` with ``cp = 1 / (gamma - 1)``."""
        return mu / ((self.gamma - 1.0) * self.prandtl)

    def viscous_flux(self, velocity, grad_u, grad_t, mu, normal, mu_t=None):
        """Viscous flux ``(0, tau . n, u . tau . n + k grad T . n)`` per unit area.

        ``velocity`` ``(dim, m)``; ``grad_u`` ``(dim, dim, m)``, ``[i, d]`` the derivative of
        velocity component ``i`` along ``d``; ``grad_t`` ``(dim, m)``; ``mu`` ``(m,)``;
        ``normal`` ``(dim, m)``. ``tau = (mu + mu_t) (grad u + grad u^T - 2/3 div u I)``,
        ``k = cp (mu / Pr + mu_t / Pr_t)`` (``mu_t``: the eddy viscosity, default 0).
        """
        heat_mu = mu
        if mu_t is not None:
            heat_mu = mu + mu_t * self.prandtl / PRANDTL_TURBULENT
            mu = mu + mu_t
        dim = len(velocity)
        divergence = sum(grad_u[i, i] for i in range(dim))
        stress_n = stack(normal, [(mu * ((grad_u[i] * normal).sum(axis=0)
                                         + (grad_u[:, i] * normal).sum(axis=0)
                                         - 2.0 / 3.0 * divergence * normal[i]))[None]
                                  for i in range(dim)])
        heat = self.conductivity(heat_mu) * (grad_t * normal).sum(axis=0)
        energy = (velocity * stress_n).sum(axis=0) + heat
        return stack(normal, [0.0 * energy[None], stress_n, energy[None]])

    def temperature(self, w):
        """``T = gamma p / rho`` of primitive states."""
        return self.gamma * w[-1] / w[0]

    def sound_speed(self, w):
        """``c = sqrt(gamma p / rho)`` of primitive states."""
        return (self.gamma * w[-1] / w[0]) ** 0.5

    def to_primitive(self, u):
        """Primitive states of conserved states ``u``."""
        rho = u[0]
        velocity = u[1:-1] / rho
        kinetic = 0.5 * rho * (velocity * velocity).sum(axis=0)
        pressure = (self.gamma - 1.0) * (u[-1] - kinetic)
        return stack(u, [rho[None], velocity, pressure[None]])

    def invalid(self, u):
        """Cells whose conserved state is non-finite or has non-positive density or
        pressure (a diverged or failed step)."""
        w = self.to_primitive(u)
        return ~array_module(u).isfinite(u).all(axis=0) | (w[0] <= 0) | (w[-1] <= 0)

    def to_conserved(self, w):
        """Conserved states of primitive states ``w``."""
        rho, velocity, p = w[0], w[1:-1], w[-1]
        energy = p / (self.gamma - 1.0) + 0.5 * rho * (velocity * velocity).sum(axis=0)
        return stack(w, [rho[None], rho * velocity, energy[None]])

    def total_enthalpy(self, w):
        """``H = (E + p) / rho`` of primitive states."""
        rho, velocity, p = w[0], w[1:-1], w[-1]
        return self.gamma / (self.gamma - 1.0) * p / rho + 0.5 * (velocity * velocity).sum(axis=0)

    def euler_flux(self, w, normal):
        """Physical flux ``F(W) . n`` (not scaled by area) of primitive states."""
        rho, velocity, p = w[0], w[1:-1], w[-1]
        un = (velocity * normal).sum(axis=0)
        return stack(w, [(rho * un)[None], rho * velocity * un + p * normal,
                               (rho * self.total_enthalpy(w) * un)[None]])

    def euler_flux_jvp(self, w, du, normal):
        """``(dF/dU . n) du``: the flux Jacobian at primitive states ``w`` times ``du``.

        ``du`` is a change of the conserved variables; the result is linear in it.

        Examples
        --------
        >>> gas = Gas(dim=2, mach=0.5)
        >>> w = gas.free_stream[:, None]
        >>> n = np.array([[0.6], [0.8]])
        >>> du = 1e-7 * np.array([[1.0], [0.5], [-0.2], [2.0]])
        >>> exact = gas.euler_flux_jvp(w, du, n)
        >>> after = gas.to_primitive(gas.to_conserved(w) + du)
        >>> change = gas.euler_flux(after, n) - gas.euler_flux(w, n)
        >>> bool(np.allclose(change, exact, rtol=1e-5, atol=1e-13))
        True
        """
        rho, velocity, p = w[0], w[1:-1], w[-1]
        d_rho, d_momentum, d_energy = du[0], du[1:-1], du[-1]
        un = (velocity * normal).sum(axis=0)
        q2 = (velocity * velocity).sum(axis=0)
        d_p = (self.gamma - 1.0) * (d_energy - (velocity * d_momentum).sum(axis=0)
                                    + 0.5 * q2 * d_rho)
        d_mn = (d_momentum * normal).sum(axis=0)
        rho_d_un = d_mn - un * d_rho  # rho times the change of u . n
        enthalpy = self.gamma / (self.gamma - 1.0) * p / rho + 0.5 * q2
        return stack(w, [d_mn[None], d_momentum * un + velocity * rho_d_un + d_p * normal,
                         ((d_energy + d_p) * un + enthalpy * rho_d_un)[None]])


def stack(like, parts):
    """Concatenate ``parts`` along axis 0 with the array module of ``like``."""
    return array_module(like).concatenate(parts, axis=0)
