"""The Jameson-Schmidt-Turkel (JST) central scheme, cell-centred (the NumPy reference).

The face flux is the mean of the two cells' physical fluxes minus a blended
artificial dissipation (Jameson, Schmidt and Turkel 1981, in the unstructured form
of SU2's ``CCentJST_Flow``)::

    F = (F(U_L) + F(U_R)) / 2 . n
        - lambda (eps2 (U_R - U_L) - eps4 (L_R - L_L))

with ``lambda = s (|u . n| + c)`` of the mean state, ``L`` each cell's undivided
Laplacian ``sum_nb (U_nb - U)`` and the pressure sensor
``nu = |sum_nb (p_nb - p)| / sum_nb (p_nb + p)``:
``eps2 = k2 (nu_L + nu_R) / 2 s2``, ``eps4 = max(0, k4 - eps2) s2^2 / 4``,
``s2 = 3 (n_L + n_R) / (n_L n_R)`` from the cells' face counts, and SU2's stretching
factor ``s = 4 phi_L phi_R / (phi_L + phi_R)``, ``phi = (Lambda / (4 lambda_f))^p``, with
``Lambda`` the sum of ``(|u . n| + c) A`` over the cell's faces and ``lambda_f`` the
face's (:data:`STRETCHING`: ``p``; ``[scheme] jst_stretching = false`` leaves ``s = 1``,
JST's dissipation as it was before 2026-11-29). The fourth
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

#: The exponent ``p`` of the stretching factor (SU2 takes 0.3). It raises the
#: dissipation across the small faces of stretched cells (and doubles it on a regular
#: tetrahedron, whose ``Lambda`` is four of its faces'). On a 66,643-cell wing with the
#: generator's five prism layers (2-core CPU, 2026-11-29): without it the pressure of
#: first-layer cells at the leading edge fell to zero by step 75 and the residual rose;
#: at 0.3 it stalled 1.3-1.9 orders down; at 0.5 it fell 2.85 orders by step 200 with no
#: cell relaxed, and on a 259,122-cell one (H200) six orders in 1,392 steps, where 5,000
#: without it did not converge. Normalised to 1 on regular cells (``Lambda / (n
#: lambda_f)``, the harmonic mean) it failed as without. The ONERA M6 of
#: ``cases/oneram6_euler.toml`` took 4.6% more steps, its CL 0.2% lower; on stretched
#: cells the answer moves more (the prism wing's lift 10% above Roe's, a 2-D C-grid's
#: 10% below: docs/validation.md).
STRETCHING = 0.5


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


def spectral_radii(gas: Gas, w_left, w_right, normal, area, accumulator: Accumulator):
    """``|u . n| + c`` of the mean state per face ``(n_faces,)`` and the sum of it times
    the face's area over each cell's faces ``(n_cells,)`` (``Lambda`` of
    :func:`stretching`), from the primitive states of each face's left cell and of what
    lies across it (cell or ghost state)."""
    mean = 0.5 * (w_left + w_right)
    speed = abs((mean[1:-1] * normal).sum(axis=0)) + gas.sound_speed(mean)
    face = speed * area
    return speed, accumulator.combine(face, face)


def stretching(cell_left, cell_right, face, power: float = STRETCHING):
    """SU2's stretching factor ``4 phi_L phi_R / (phi_L + phi_R)`` of faces whose cells'
    spectral radii sum to ``cell_left``, ``cell_right`` and whose own is ``face``;
    ``phi`` to the ``power`` (0: no factor, 1).

    >>> float(stretching(4.0, 4.0, 1.0))  # a regular tetrahedron's face: twice
    2.0
    >>> float(stretching(400.0, 400.0, 1.0)), float(stretching(400.0, 400.0, 1.0, 0.0))
    (20.0, 1.0)
    """
    if power == 0:
        return 1.0
    phi_left = (cell_left / (4.0 * face)) ** power
    phi_right = (cell_right / (4.0 * face)) ** power
    return 4.0 * phi_left * phi_right / (phi_left + phi_right)


def central_flux(gas: Gas, w_left, w_right, u_left, u_right, laplacian_left, laplacian_right,
                 sensor_left, sensor_right, neighbours_left, neighbours_right, normal,
                 speed, k2: float, k4: float):
    """The JST flux per unit area ``(n_vars, m)`` between two cells of ``m`` faces.

    ``w``: primitive states, ``u``: conserved ones, the Laplacians ``(n_vars, m)``,
    sensors and neighbour counts ``(m,)`` of both cells; ``normal`` ``(dim, m)``;
    ``speed`` ``(m,)`` the dissipation's spectral radius: ``|u . n| + c`` of the mean
    state (:func:`spectral_radii`) times the faces' :func:`stretching` factors.

    Examples
    --------
    A uniform state gives its physical flux, whatever the sensor:

    >>> gas = Gas(dim=2, mach=0.5)
    >>> w = np.array([[1.0], [0.3], [0.1], [0.7]])
    >>> u, zero, n = gas.to_conserved(w), np.zeros((4, 1)), np.array([[0.6], [0.8]])
    >>> flux = central_flux(gas, w, w, u, u, zero, zero, 1.0, 1.0, 3, 3, n, 1.0, 0.5, 0.02)
    >>> bool(np.allclose(flux, gas.euler_flux(w, n)))
    True
    """
    s2 = 3.0 * (neighbours_left + neighbours_right) / (neighbours_left * neighbours_right)
    eps2 = k2 * 0.5 * (sensor_left + sensor_right) * s2
    eps4 = (k4 - eps2) * (k4 > eps2) * (0.25 * s2 * s2)
    dissipation = eps2 * (u_right - u_left) - eps4 * (laplacian_right - laplacian_left)
    return 0.5 * (gas.euler_flux(w_left, normal) + gas.euler_flux(w_right, normal)) \
        - speed * dissipation
