"""Point-vortex correction of the 2-D far field (Thomas & Salas 1986; Blazek, sec. 8.4).

A lifting airfoil leaves a circulation ``Gamma`` whose velocity decays only like
``1/r``: a far field 20 chords away that imposes the plain free stream misses it and
under-predicts the lift by a few per cent. The correction imposes instead the free
stream plus the compressible (Prandtl-Glauert) field of a point vortex of the
current circulation at a reference point (the quarter chord),

    u = U cos(alpha) + Gamma beta sin(theta) / (2 pi r (1 - M^2 sin^2(theta - alpha)))
    v = U sin(alpha) - Gamma beta cos(theta) / (2 pi r (1 - M^2 sin^2(theta - alpha)))

with ``beta = sqrt(1 - M^2)``, and density and pressure from the free stream's total
enthalpy and entropy. ``Gamma`` comes from the lift by Kutta-Joukowski,
``L' = rho U Gamma``, so it needs no chord. Gas units: ``rho = 1``, ``c = 1`` and
``U = M`` in the free stream.
"""

from __future__ import annotations

import math

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.physics.gas import Gas

#: Default vortex position: the quarter chord of a unit chord with its nose at 0.
DEFAULT_CENTRE = (0.25, 0.0)


class PointVortexFarField:
    """Far-field states of the free stream plus a point vortex, at fixed points.

    Parameters
    ----------
    gas : Gas
        Two-dimensional, subsonic free stream.
    points : numpy.ndarray
        ``(2, m)`` points (far-field face centres).
    centre : sequence of float
        Vortex position.
    backend : Backend
    dtype : numpy dtype
    """

    def __init__(self, gas: Gas, points: np.ndarray, centre=DEFAULT_CENTRE, *, backend,
                 dtype):
        if gas.dim != 2:
            raise ConfigError("the far-field vortex correction is two-dimensional only")
        if not gas.mach < 1.0:
            raise ConfigError(f"the far-field vortex correction needs a subsonic free stream, "
                              f"not Mach {gas.mach}")
        self.gas, self.backend, self.dtype = gas, backend, np.dtype(dtype)
        dx = points[0] - centre[0]
        dy = points[1] - centre[1]
        r = np.hypot(dx, dy)
        theta = np.arctan2(dy, dx)
        alpha = math.radians(gas.aoa_deg)
        beta = math.sqrt(1.0 - gas.mach**2)
        shape = beta / (2.0 * math.pi * r * (1.0 - gas.mach**2 * np.sin(theta - alpha) ** 2))
        # velocity per unit circulation
        self.unit_velocity = backend.asarray(np.stack([shape * np.sin(theta),
                                                       -shape * np.cos(theta)]), dtype)
        self.free_velocity = backend.asarray(gas.mach * gas.flow_direction[:, None], dtype)

    def primitive(self, circulation: float):
        """``(4, m)`` primitive states (rho, u, v, p) for a clockwise ``circulation``."""
        xp, g = self.backend.xp, self.gas.gamma
        velocity = self.free_velocity + self.dtype.type(circulation) * self.unit_velocity
        speed2 = (velocity * velocity).sum(axis=0)
        sound2 = 1.0 + 0.5 * (g - 1.0) * (self.gas.mach**2 - speed2)  # constant enthalpy
        rho = sound2 ** (1.0 / (g - 1.0))  # constant entropy
        return xp.concatenate([rho[None], velocity, (rho * sound2 / g)[None]])


def circulation_of_lift(gas: Gas, lift_per_span: float) -> float:
    """Kutta-Joukowski: ``Gamma = L' / (rho U)`` in gas units (``rho = 1``, ``U = M``)."""
    return lift_per_span / gas.mach
