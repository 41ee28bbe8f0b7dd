"""The Jameson-Schmidt-Turkel (JST) central scheme, cell-centred (the NumPy reference).

The face flux is the mean of the two cells' physical fluxes minus a blended
artificial dissipation (Jameson, Schmidt and Turkel 1981, in the unstructured form
of SU2's ``CCentJST_Flow``)::

    F = (F(U_L) + F(U_R)) / 2 . n
        - lambda (eps2 (U_R - U_L) - eps4 (L_R - L_L))

with ``lambda = |u . n| + c`` of the mean state, ``L`` each cell's undivided
Laplacian ``sum_nb (U_nb - U)`` and the pressure sensor
``nu = |sum_nb (p_nb - p)| / sum_nb (p_nb + p)``:
``eps2 = k2 (nu_L + nu_R) / 2 s2``, ``eps4 = max(0, k4 - eps2) s2^2 / 4``,
``s2 = 3 (n_L + n_R) / (n_L n_R)`` from the cells' face counts. The fourth
difference gives second order in smooth flow without a limiter, the sensor switches
to first-order dissipation at shocks; neither takes a minimum over faces, so steady
residuals keep falling where a recomputed slope limiter chatters.

Differences are taken across every face of a cell: to the cell across an interior or
periodic face, to the ghost state of the cell on the other boundary faces (the mirror
image on walls). Leaving the boundary faces out would make a wall cell's Laplacian a
one-sided first difference, and the fourth-difference dissipation on its inner faces
anti-diffusive (``eps2 - 2 eps4 < 0`` in smooth flow; with it one of two 1M-cell
wings stalled at -2.7 orders). Boundary faces take the Roe flux of the cell and its ghost state.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusolver.layout.geometry import FVGeometry
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.accumulate import Accumulator

#: The scheme's name in ``[scheme] flux``.
JST = "jst"
#: The Riemann flux of the boundary faces (and of multigrid's coarse levels).
BOUNDARY_FLUX = "roe"


class Stencil(NamedTuple):
    """Which faces JST's central flux joins, on the device.

    Attributes
    ----------
    across : array
        ``(n_faces,)`` the cell across each face: the right cell of an interior
        face, the partner face's cell across a periodic boundary, the face's own
        (left) cell elsewhere (unused there).
    joined : array
        ``(n_faces,)`` 1 where ``across`` is another cell (central flux), 0 elsewhere
        (Roe flux with the ghost state).
    neighbours : array
        ``(n_cells,)`` how many faces each cell has.
    """

    across: object
    joined: object
    neighbours: object


def stencil(host: FVGeometry, partner: np.ndarray, accumulator: Accumulator, dtype) -> Stencil:
    """The :class:`Stencil` of ``host``; ``partner``: the periodic partner face of each
    boundary face, -1 where none (``Discretisation.partner_faces``)."""
    ni = host.n_interior
    across = host.left.copy()
    across[:ni] = host.right[:ni]
    periodic = np.flatnonzero(partner >= 0)
    across[ni + periodic] = host.left[partner[periodic]]
    joined = np.zeros(host.n_faces)
    joined[:ni] = 1.0
    joined[ni + periodic] = 1.0
    backend = accumulator.backend
    ones = backend.xp.ones(host.n_faces, dtype)
    return Stencil(backend.asarray(across), backend.asarray(joined, dtype),
                   accumulator.combine(ones, ones))


def differences(u_left, u_right, p_left, p_right, accumulator: Accumulator):
    """Undivided Laplacian ``(n_vars, n_cells)`` and pressure sensor ``(n_cells,)``.

    From the conserved states ``(n_vars, n_faces)`` and pressures ``(n_faces,)`` of
    each face's left cell and of what lies across it (cell or ghost state).
    """
    jump = u_right - u_left
    laplacian = accumulator.combine(jump, -jump)
    change = p_right - p_left
    total = p_right + p_left
    sensor = abs(accumulator.combine(change, -change)) / accumulator.combine(total, total)
    return laplacian, sensor


def central_flux(gas: Gas, w_left, w_right, u_left, u_right, laplacian_left, laplacian_right,
                 sensor_left, sensor_right, neighbours_left, neighbours_right, normal,
                 k2: float, k4: float):
    """The JST flux per unit area ``(n_vars, m)`` between two cells of ``m`` faces.

    ``w``: primitive states, ``u``: conserved ones, the Laplacians ``(n_vars, m)``,
    sensors and neighbour counts ``(m,)`` of both cells; ``normal`` ``(dim, m)``.

    Examples
    --------
    A uniform state gives its physical flux, whatever the sensor:

    >>> gas = Gas(dim=2, mach=0.5)
    >>> w = np.array([[1.0], [0.3], [0.1], [0.7]])
    >>> u, zero, n = gas.to_conserved(w), np.zeros((4, 1)), np.array([[0.6], [0.8]])
    >>> flux = central_flux(gas, w, w, u, u, zero, zero, 1.0, 1.0, 3, 3, n, 0.5, 0.02)
    >>> bool(np.allclose(flux, gas.euler_flux(w, n)))
    True
    """
    mean = 0.5 * (w_left + w_right)
    speed = abs((mean[1:-1] * normal).sum(axis=0)) + gas.sound_speed(mean)
    s2 = 3.0 * (neighbours_left + neighbours_right) / (neighbours_left * neighbours_right)
    eps2 = k2 * 0.5 * (sensor_left + sensor_right) * s2
    eps4 = (k4 - eps2) * (k4 > eps2) * (0.25 * s2 * s2)
    dissipation = eps2 * (u_right - u_left) - eps4 * (laplacian_right - laplacian_left)
    return 0.5 * (gas.euler_flux(w_left, normal) + gas.euler_flux(w_right, normal)) \
        - speed * dissipation
