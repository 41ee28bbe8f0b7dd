"""Pressure and friction along the body's surface from the wall's vorticity.

At a fixed no-slip wall the momentum equation reduces to ``dp/ds = rho nu dOmega/dn``
(``s`` counter-clockwise, ``n`` into the flow): the pressure falls along the wall by the
vorticity the wall puts into the flow, ``-nu dOmega/dn`` per unit length and time. The
vortex method puts it in as the circulation born on each panel less the circulation
absorbed there, so a step's pressure is the running sum of that along the contour. The
sum is known up to a constant: the front panel (its normal most against the free
stream) is given the steady stagnation value ``Cp = 1``, which holds for the time mean
of a flow whose unsteadiness and viscous terms vanish there, and only approximately at
low Reynolds numbers, where viscosity raises the stagnation pressure above the dynamic
head. Forces do not depend on the constant.

The friction is ``mu Omega_wall`` along the tangent; :func:`.diffusion.wall_vorticity`
gives the wall's vorticity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusolver.solvers.vortex.body import Body


@dataclass(frozen=True)
class SurfaceLoads:
    """Pressure and friction coefficients at the panels' midpoints (``(n_panels,)`` each):
    ``cp = (p - p_inf) / q`` and ``cf = tau / q``, ``tau`` the wall's shear stress on the
    body along the counter-clockwise tangent, ``q = rho |V_inf|^2 / 2``."""

    cp: np.ndarray
    cf: np.ndarray


def front_panel(body: Body, free_stream) -> int:
    """The panel whose normal points most against the free stream."""
    return int(np.argmin(body.normals @ np.asarray(free_stream, dtype=np.float64)))


def surface_loads(body: Body, generated: np.ndarray, wall_vorticity: np.ndarray, dt: float,
                  nu: float, free_stream) -> SurfaceLoads:
    """The coefficients of a step (or of means over steps) from ``generated``, the
    circulation each panel put into the flow in the step (born less absorbed), and
    ``wall_vorticity``, the wall's vorticity integrated along each panel (module
    docstring).

    Examples
    --------
    A sheet that puts circulation ``+g`` into the flow on the bottom half of a circle and
    ``-g`` on the top raises the pressure from the back to the front along both halves:

    >>> from gpusolver.solvers.vortex.body import circle
    >>> body = circle(8)
    >>> top = body.midpoints[:, 1] > 0
    >>> loads = surface_loads(body, np.where(top, -1.0, 1.0) * body.lengths, 0 * body.lengths,
    ...                       1.0, 0.01, (1.0, 0.0))
    >>> bool(loads.cp[front_panel(body, (1.0, 0.0))] == 1.0), bool(loads.cp.min() < 0)
    (True, True)
    """
    generated = np.asarray(generated, dtype=np.float64)
    lengths = body.lengths
    generated = generated - generated.sum() * lengths / lengths.sum()  # a closed contour
    flux = generated / dt
    # the running sum to each midpoint: the panels before it, and half its own
    drop = np.cumsum(flux) - 0.5 * flux
    pressure = -(drop - drop[front_panel(body, free_stream)])
    q = 0.5 * float(np.dot(free_stream, free_stream))
    return SurfaceLoads(cp=1.0 + pressure / q,
                        cf=nu * np.asarray(wall_vorticity, dtype=np.float64) / lengths / q)


def surface_forces(body: Body, loads: SurfaceLoads, centre) -> tuple[np.ndarray, float,
                                                                    np.ndarray, float]:
    """Pressure and friction force coefficients (per unit ``q``, not yet divided by a
    reference length) and their moments about ``centre``, by the midpoint rule:
    ``(pressure force, pressure moment, friction force, friction moment)``."""
    arm = body.midpoints - np.asarray(centre, dtype=np.float64)
    lengths = body.lengths[:, None]
    pressure = -(loads.cp[:, None] * body.normals * lengths)
    friction = loads.cf[:, None] * body.tangents * lengths

    def moment(force):
        return float((arm[:, 0] * force[:, 1] - arm[:, 1] * force[:, 0]).sum())

    return pressure.sum(axis=0), moment(pressure), friction.sum(axis=0), moment(friction)
