"""Viscous terms of the modal DG solver: the second scheme of Bassi and Rebay (BR2).

The Navier-Stokes right-hand side subtracts from the Euler one

    sum_q w |J| grad(phi) . F_v(U, grad U + R) - sum_faces sum_q w L phi F_v* . n,

with the viscous flux ``F_v`` of :meth:`gpusolver.physics.gas.Gas.viscous_flux` of the
state and its corrected gradient. The corrections are lifting operators: for each face
``f`` and each of its elements ``K``, ``r_f`` in the element's modal space solves

    int_K r_f . tau = int_f (U_hat - U_K) n_K . tau ds      for every tau,

``U_hat`` the mean of the two traces (on a boundary, of the trace and the boundary
condition's ghost state, so that on a no-slip wall it is the wall's velocity). The element
takes the sum ``R`` of its faces' liftings; each face's flux is the mean of the two sides'
``F_v(U, grad U + eta r_f) . n`` (on a boundary the ghost state with the inside's
gradient), ``eta`` the number of the element's faces plus one: the theory (Brezzi et al.;
Arnold, Brezzi, Cockburn and Marini 2002) proves the scheme stable for a penalty above the
number of faces, and the number itself sits on that bound. No heat is conducted through
an adiabatic wall's faces: the inside's temperature gradient there is not the wall's, and
conducting it drains or feeds the wall cells until their pressure falls below zero (a
cylinder at Re 100 did, after two convective times). The gradient is that of the
conserved variables, turned into velocity and temperature gradients at each point.
"""

from __future__ import annotations

import numpy as np

from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.layout import DGLayout
from gpusolver.solvers.dg.reference import CORNERS


class BR2:
    """The BR2 viscous terms on one layout (laid out with ``viscous=True``).

    Parameters
    ----------
    layout : DGLayout
    gas : Gas
        With a Reynolds number.
    adiabatic : numpy.ndarray, optional
        ``(n_boundary_faces,)`` True on the faces of adiabatic walls (default: none).
    """

    def __init__(self, layout: DGLayout, gas: Gas, adiabatic: np.ndarray | None = None):
        if layout.left_trace_gradients is None:
            raise ValueError("BR2 needs a layout built with viscous=True")
        self.layout, self.gas = layout, gas
        #: Per face, 1, or 0 where no heat is conducted (adiabatic walls).
        self.heat = np.ones(len(layout.left))
        if adiabatic is not None:
            self.heat[layout.n_interior:] = np.where(adiabatic, 0.0, 1.0)
        faces_of = np.empty(layout.n_elements)
        for group in layout.groups:
            faces_of[group.elements] = len(CORNERS[group.shape])
        #: The penalty of each face's left and right element: its number of faces plus one.
        self.eta_left = faces_of[layout.left] + 1
        self.eta_right = faces_of[layout.right[:layout.n_interior]] + 1
        #: Per element group, the modes' physical gradients at its quadrature points.
        self.gradients = [g.weighted_gradients / g.weights for g in layout.groups]

    def terms(self, u: np.ndarray, inside: np.ndarray, outside: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """The viscous volume term ``(n_vars, n_modes, n_elements)`` (to add to ``M dU/dt``)
        and the viscous normal flux ``(n_vars, n_qf, n_faces)`` per unit length at the
        faces' Gauss points (to subtract from the convective one).

        ``inside``, ``outside``: primitive states at the Gauss points of each face's left
        element and of its right element or ghost state, ``(n_vars, n_qf, n_faces)``.
        """
        lay, gas = self.layout, self.gas
        ni = lay.n_interior
        left_u = gas.to_conserved(inside)
        right_u = gas.to_conserved(outside)
        # (U_hat - U_left) n_left = (U_hat - U_right) n_right: one integrand for both
        jump = 0.5 * (right_u - left_u)
        weighted = jump * (lay.face_weights[:, None] * lay.line_jacobian)[None]
        moment = np.einsum("vqf,dqf->vdqf", weighted, lay.point_normals)
        lift_left = np.einsum("fmn,vdnf->vdmf", lay.inverse_mass[lay.left],
                              np.einsum("fnq,vdqf->vdnf", lay.left_trace, moment))
        right = lay.right[:ni]
        lift_right = np.einsum("fmn,vdnf->vdmf", lay.inverse_mass[right],
                               np.einsum("fnq,vdqf->vdnf", lay.right_trace[:ni],
                                         moment[..., :ni]))
        lifting = np.zeros((u.shape[0], 2, *u.shape[1:]))
        np.add.at(lifting.transpose(3, 0, 1, 2), lay.left, lift_left.transpose(3, 0, 1, 2))
        np.add.at(lifting.transpose(3, 0, 1, 2), right, lift_right.transpose(3, 0, 1, 2))

        volume = np.zeros_like(u)
        for g, mode_gradients in zip(lay.groups, self.gradients, strict=True):
            coefficients = u[:, :, g.elements]
            states = np.einsum("mq,vme->vqe", g.values, coefficients)
            gradients = (np.einsum("dmqe,vme->vdqe", mode_gradients, coefficients)
                         + np.einsum("mq,vdme->vdqe", g.values, lifting[:, :, :, g.elements]))
            flux = np.stack([self._flux(states, gradients, np.eye(2)[:, d, None, None])
                             for d in range(2)], axis=1)  # (n_vars, 2, q, e)
            volume[:, :, g.elements] = np.einsum("dmqe,vdqe->vme", g.weighted_gradients, flux)

        gradient_left = (np.einsum("dmqf,vmf->vdqf", lay.left_trace_gradients,
                                   u[:, :, lay.left])
                         + self.eta_left * np.einsum("fmq,vdmf->vdqf", lay.left_trace,
                                                     lift_left))
        face = self._flux(left_u, gradient_left, lay.point_normals, self.heat)
        gradient_right = (np.einsum("dmqf,vmf->vdqf", lay.right_trace_gradients, u[:, :, right])
                          + self.eta_right * np.einsum("fmq,vdmf->vdqf", lay.right_trace[:ni],
                                                       lift_right))
        other = np.concatenate([gradient_right, gradient_left[..., ni:]], axis=-1)
        face = 0.5 * (face + self._flux(right_u, other, lay.point_normals, self.heat))
        return volume, face

    def _flux(self, u: np.ndarray, gradient: np.ndarray, normal: np.ndarray,
              heat: np.ndarray | float = 1.0) -> np.ndarray:
        """``F_v . normal`` of conserved states ``u`` ``(n_vars, ...)`` with conserved
        gradients ``(n_vars, 2, ...)``; ``normal`` broadcasts to ``(2, ...)``; ``heat``
        (broadcast to ``u``'s last axis) scales the conduction."""
        gas = self.gas
        velocity, grad_u, grad_t, temperature = primitive_gradients(gas, u, gradient)
        grad_t = grad_t * heat
        normal = np.broadcast_to(normal, (2, *u.shape[1:]))
        flat = (velocity.reshape(2, -1), grad_u.reshape(2, 2, -1), grad_t.reshape(2, -1),
                gas.viscosity(temperature).reshape(-1), normal.reshape(2, -1))
        return gas.viscous_flux(*flat).reshape(u.shape)


def primitive_gradients(gas: Gas, u: np.ndarray, gradient: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Velocity ``(2, ...)``, its gradient ``(2, 2, ...)`` (``[i, d]``: ``d u_i / d x_d``),
    the temperature's gradient ``(2, ...)`` and the temperature ``(...)`` of conserved
    states ``u`` ``(4, ...)`` with conserved gradients ``(4, 2, ...)``.

    Examples
    --------
    A uniform flow has none:

    >>> gas = Gas(dim=2, mach=0.5, reynolds=100.0)
    >>> u = gas.to_conserved(np.array([[1.0], [0.5], [0.0], [1 / 1.4]]))
    >>> _, grad_u, grad_t, t = primitive_gradients(gas, u, np.zeros((4, 2, 1)))
    >>> float(np.abs(grad_u).max()), float(np.abs(grad_t).max()), round(float(t[0]), 12)
    (0.0, 0.0, 1.0)
    """
    rho, momentum, energy = u[0], u[1:3], u[3]
    grad_rho, grad_m, grad_e = gradient[0], gradient[1:3], gradient[3]
    velocity = momentum / rho
    grad_u = (grad_m - velocity[:, None] * grad_rho[None]) / rho
    pressure = (gas.gamma - 1.0) * (energy - 0.5 * rho * (velocity * velocity).sum(axis=0))
    grad_p = (gas.gamma - 1.0) * (grad_e - 0.5 * (velocity * velocity).sum(axis=0) * grad_rho
                                  - rho * (velocity[:, None] * grad_u).sum(axis=0))
    temperature = gas.gamma * pressure / rho
    grad_t = (gas.gamma * grad_p - temperature * grad_rho) / rho
    return velocity, grad_u, grad_t, temperature
