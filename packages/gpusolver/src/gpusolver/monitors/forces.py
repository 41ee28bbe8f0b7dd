"""Loads on walls: force coefficients per marker and surface pressure coefficients.

Both are integrated on the host from the boundary face fluxes of one residual
(``flux``: ``(n_vars, n_boundary_faces)``, times area), whose momentum part on a wall
is the pressure force.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusolver.layout.geometry import FVGeometry
from gpusolver.physics.gas import Gas


@dataclass(frozen=True)
class Forces:
    """Integrated wall forces of one marker (or all walls).

    Attributes
    ----------
    force : numpy.ndarray
        Force on the body, non-dimensional (free-stream rho = 1, c = 1).
    lift, drag : float
        Coefficients over the reference area.
    """

    force: np.ndarray
    lift: float
    drag: float


def _coefficients(gas: Gas, force: np.ndarray, q_area: float) -> Forces:
    return Forces(force, float(force @ gas.lift_direction) / q_area,
                  float(force @ gas.flow_direction) / q_area)


def wall_forces(flux: np.ndarray, host: FVGeometry, gas: Gas, markers: list[str],
                reference_area: float) -> dict[str, Forces]:
    """Forces on every wall marker of ``markers``, and ``"total"``.

    The free-stream pressure is subtracted, so a closed body in uniform flow feels none.
    """
    ni = host.n_interior
    p_inf = 1.0 / gas.gamma
    q_area = gas.dynamic_pressure * reference_area
    result = {}
    total = np.zeros(gas.dim)
    for name in markers:
        first, end = host.markers[name]
        faces = slice(first - ni, end - ni)
        force = (flux[1:-1, faces] - p_inf * host.normal[:, first:end]
                 * host.area[first:end]).sum(axis=1)
        total += force
        result[name] = _coefficients(gas, force, q_area)
    result["total"] = _coefficients(gas, total, q_area)
    return result


def surface_pressure(flux: np.ndarray, host: FVGeometry, gas: Gas, marker: str
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Face centres ``(dim, m)`` and pressure coefficients of one wall marker."""
    first, end = host.markers[marker]
    ni = host.n_interior
    momentum = flux[1:-1, first - ni:end - ni]
    normal, area = host.normal[:, first:end], host.area[first:end]
    pressure = (momentum * normal).sum(axis=0) / area
    cp = (pressure - 1.0 / gas.gamma) / gas.dynamic_pressure
    return host.face_centre[:, first:end], cp
