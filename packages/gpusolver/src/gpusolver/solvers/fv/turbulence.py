"""The Spalart-Allmaras (SA-neg) equation on one finite-volume discretisation, loosely
coupled to the mean flow.

Each step of the solver first advances the mean flow with the eddy viscosity of the
current ``nt`` frozen (:meth:`SpalartAllmarasFV.set_eddy_viscosity` hands each face's
``mu_t`` to the mean flow's viscous fluxes and wave speeds), then advances ``nt`` by one
implicit step with the mean flow of that step's start frozen: the loose coupling of
SU2 and most segregated RANS codes. Both reach the coupled steady state.

The discretisation of :mod:`gpusolver.physics.spalart_allmaras`'s equation, per cell:

- advection by the mean flow's numerical mass flux through each face, first-order
  upwind (TMR's reference solutions use first-order turbulence advection, and it keeps
  ``nt`` bounded where the mean flow's second-order reconstruction needs a limiter);
- diffusion ``1/sigma rho (nu + nt fn) grad nt . n`` on each face with the mean flow's
  face gradient (the cells' mean, corrected along the line between their centroids),
  ``cb2`` and density-gradient terms and the source from cell gradients (least squares
  or Green-Gauss, as the mean flow's);
- boundaries: ``nt = 0`` on no-slip walls (a ghost of ``-nt``), the free stream's
  ``3 nu`` flowing in through far fields and supersonic inflows, the cell's value
  elsewhere (outflows, symmetry planes, slip walls);
- the implicit step ``(rho V / dt + A) dnt = R``: ``A`` is the upwind advection and the
  two-point diffusion, plus the part of the source's derivative that damps (an M-matrix:
  no new extrema), solved by a sparse direct factorisation (SciPy) on the host.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from gpusolver.physics import spalart_allmaras as sa


class SpalartAllmarasFV:
    """SA-neg on one discretisation (see the module docstring).

    Parameters
    ----------
    discretisation : Discretisation
        The mean flow's, Navier-Stokes.
    distance : numpy.ndarray
        ``(n_cells,)`` wall distance of each cell (plan order).
    """

    def __init__(self, discretisation, distance: np.ndarray):
        d = self.d = discretisation
        backend, g, ni = d.backend, d.geometry, d.n_interior
        self.xp = backend.xp
        self.distance = backend.asarray(np.maximum(distance, 1e-300), d.dtype)
        gas = d.gas
        #: The free stream's ``nt`` (``rho = 1``: ``nu = mu``).
        self.free_stream = sa.FREE_STREAM_RATIO * gas.mu_ref
        #: Per boundary face: 0 the cell's value, 1 a no-slip wall (``-nt``), 2 the free
        #: stream where the mass flux enters.
        kind = np.zeros(g.n_faces - ni, dtype=np.int64)
        for faces, spec, _, _ in d.boundaries:
            local = slice(faces.start - ni, faces.stop - ni)
            if spec.condition.viscous_wall:
                kind[local] = 1
            elif spec.condition.name in ("farfield", "supersonic-inflow"):
                kind[local] = 2
        self.boundary_kind = backend.asarray(kind)
        self._host_kind = kind
        self._left = backend.to_host(g.left)
        self._right = backend.to_host(g.right[:ni])
        self.nt = self.xp.full(g.volume.shape, self.free_stream, dtype=d.dtype)
        #: RMS of the last step's ``R / V``.
        self.residual_norm = 0.0

    # ------------------------------------------------------------------ coupling
    def laminar_viscosity(self, w):
        """``mu`` of primitive states ``w``."""
        gas = self.d.gas
        return gas.viscosity(gas.temperature(w))

    def set_eddy_viscosity(self, u) -> None:
        """Each face's ``mu_t`` (the mean of its cells'; 0 on no-slip walls) for the
        mean flow's next residuals."""
        d, xp = self.d, self.xp
        g, ni = d.geometry, d.n_interior
        mu_t = self.cell_eddy_viscosity(u)
        face = mu_t[g.left]
        face[:ni] = 0.5 * (face[:ni] + mu_t[g.right[:ni]])
        face[ni:] = xp.where(self.boundary_kind == 1, 0.0, face[ni:])
        d.eddy_viscosity = face

    def cell_eddy_viscosity(self, u):
        """``mu_t`` of every cell."""
        w = self.d.gas.to_primitive(u)
        return sa.eddy_viscosity(w[0], self.nt, self.laminar_viscosity(w) / w[0])

    # ------------------------------------------------------------------ the equation
    def _ghost(self, nt_left, mass_flux):
        """``nt`` outside each boundary face (see the module docstring)."""
        xp, kind = self.xp, self.boundary_kind
        inflow = (kind == 2) & (mass_flux < 0)
        return xp.where(kind == 1, -nt_left, xp.where(inflow, self.free_stream, nt_left))

    def residual(self, u, mass_flux):
        """``R`` ``(n_cells,)``: the rate of ``rho nt`` times the volume at the state
        ``u`` and the mean flow's face mass fluxes (times area) ``mass_flux``; also the
        faces' diffusion coefficients and the source's damping derivative (for the
        implicit step)."""
        d, xp = self.d, self.xp
        g, ni, gas = d.geometry, d.n_interior, d.gas
        w = gas.to_primitive(u)
        nt = self.nt
        nt_left = nt[g.left]
        nt_right = xp.concatenate([nt[g.right[:ni]], self._ghost(nt_left[ni:], mass_flux[ni:])])
        # gradients of nt and of the mean flow (cells), with the boundary faces' means
        neighbour = nt_right.copy()
        neighbour[ni:] = 0.5 * (nt_left[ni:] + nt_right[ni:])
        grad_nt = d.gradient(nt_left[None], neighbour[None])[0]  # (dim, n_cells)
        w_left = w[:, g.left]
        # the boundary faces' values, as the mean flow's gradients take them (the wall's
        # velocity on a no-slip wall: the vorticity of the cells beside it)
        boundary = 0.5 * (w_left[:, ni:] + d.ghost_states(w_left))
        grad_w = d.gradient(w_left, xp.concatenate([w[:, g.right[:ni]], boundary], axis=1))
        # advection: first-order upwind of the mass flux
        convective = (xp.maximum(mass_flux, 0.0) * nt_left
                      + xp.minimum(mass_flux, 0.0) * nt_right)
        # diffusion: rho (nu + nt fn) / sigma at the face, its corrected normal gradient
        mu = self.laminar_viscosity(w)
        nu = mu / w[0]
        rho_diff = w[0] * sa.diffusivity(nu, nt)
        face_diff = rho_diff[g.left]
        face_diff[:ni] = 0.5 * (face_diff[:ni] + rho_diff[g.right[:ni]])
        coefficient = face_diff / sa.SIGMA * g.area
        grad_left = grad_nt[:, g.left]
        grad_right = grad_left.copy()
        grad_right[:, :ni] = grad_nt[:, g.right[:ni]]
        mean = 0.5 * (grad_left + grad_right)
        along = (mean * d.tangent).sum(axis=0)
        normal_gradient = ((mean + ((nt_right - nt_left) * d.inverse_length - along)
                            * d.tangent) * g.normal).sum(axis=0)
        flux = convective - coefficient * normal_gradient
        residual = d.accumulator.combine(-flux, flux)
        # sources: production - destruction, cb2, and the density-gradient term
        vorticity = _vorticity(grad_w[1:1 + g.dim])
        rate, derivative = sa.source(nt, nu, vorticity, self.distance)
        grad_nt2 = (grad_nt * grad_nt).sum(axis=0)
        cross = (grad_w[0] * grad_nt).sum(axis=0)
        volume_rate = (w[0] * rate + sa.CB2 / sa.SIGMA * w[0] * grad_nt2
                       - (nu + nt) / sa.SIGMA * cross)
        residual = residual + volume_rate * g.volume
        damping = xp.maximum(-derivative, 0.0) * w[0] * g.volume
        return residual, coefficient * d.inverse_length, damping, w[0]

    def step(self, u, mass_flux, dt) -> float:
        """One implicit step of ``nt`` at the mean flow ``u`` (its face mass fluxes
        ``mass_flux``) with local time steps ``dt`` (per cell, or one); returns the RMS
        of ``R / V`` before it."""
        d = self.d
        g, ni, backend = d.geometry, d.n_interior, d.backend
        residual, coefficient, damping, rho = self.residual(u, mass_flux)
        to_host = backend.to_host
        m, c = to_host(mass_flux).astype(np.float64), to_host(coefficient).astype(np.float64)
        volume = to_host(g.volume).astype(np.float64)
        n = len(volume)
        left, right = self._left, self._right
        diagonal = (to_host(rho * g.volume / dt).astype(np.float64) * np.ones(n)
                    + to_host(damping).astype(np.float64))
        out, inward = np.maximum(m, 0.0), np.minimum(m, 0.0)
        # interior faces: the left cell loses out + c, gains from the right -(inward - c)
        np.add.at(diagonal, left[:ni], out[:ni] + c[:ni])
        np.add.at(diagonal, right, -inward[:ni] + c[:ni])
        # boundary faces: the ghost's dependence on the cell
        kind = self._host_kind
        bl = left[ni:]
        boundary = out[ni:] + np.where(kind == 1, 2.0 * c[ni:] - inward[ni:],
                                       np.where((kind == 2) & (m[ni:] < 0), c[ni:], 0.0))
        np.add.at(diagonal, bl, boundary)
        rows = np.concatenate([np.arange(n), left[:ni], right])
        cols = np.concatenate([np.arange(n), right, left[:ni]])
        values = np.concatenate([diagonal, inward[:ni] - c[:ni], -out[:ni] - c[:ni]])
        matrix = sp.csc_matrix((values, (rows, cols)), shape=(n, n))
        change = spla.spsolve(matrix, to_host(residual).astype(np.float64))
        self.nt = self.nt + backend.asarray(change, d.dtype)
        rate = to_host(residual).astype(np.float64) / volume
        self.residual_norm = float(np.sqrt((rate * rate).mean()))
        return self.residual_norm


def _vorticity(grad_velocity):
    """Vorticity magnitude from velocity gradients ``(dim, dim, n)`` (``[i, j]``:
    ``du_i/dx_j``)."""
    if len(grad_velocity) == 2:
        return abs(grad_velocity[1, 0] - grad_velocity[0, 1])
    x = grad_velocity[2, 1] - grad_velocity[1, 2]
    y = grad_velocity[0, 2] - grad_velocity[2, 0]
    z = grad_velocity[1, 0] - grad_velocity[0, 1]
    return (x * x + y * y + z * z) ** 0.5
