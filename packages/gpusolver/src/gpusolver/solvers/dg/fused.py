"""The DG right-hand side in the kernels of ``kernels/dg.cu`` (CUDA on CuPy; compiled as
C++ on NumPy, where CI checks them against :meth:`DGSolver.rate`).

Per evaluation: one launch for the inside and ghost states at the boundary Gauss points
(array code fills in only exact and periodic boundaries), for Navier-Stokes one launch for
the BR2 liftings, one volume launch per element shape, one face launch, and a mass-matrix
launch only where some element's mass matrix is not its Jacobian times the identity
(:attr:`DGLayout.scalar_mass`): the others are scaled by their inverse Jacobian in the
volume and face kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpusolver.backends import Backend
from gpusolver.backends.cuda import grid, real_type
from gpusolver.physics.fluxes import FLUX_CODES
from gpusolver.physics.gas import SUTHERLAND_K
from gpusolver.solvers.dg.layout import shape_functions
from gpusolver.solvers.dg.reference import CORNERS, basis, element_rule, quadrature_strength

if TYPE_CHECKING:
    from gpusolver.solvers.dg.solver import DGSolver

#: Threads per block (``__launch_bounds__(128)`` in the kernels).
BLOCK = 128


class FusedDG:
    """:meth:`DGSolver.rate` of one solver's layout in kernels, on ``backend``.

    Parameters
    ----------
    solver : DGSolver
        Its layout, gas, boundary conditions and numerical flux.
    backend : Backend
        ``cupy`` (CUDA) or ``numpy`` (the kernels compiled for the CPU).
    dtype : numpy dtype
        float64 or float32.
    optimised : bool
        On numpy, compile the kernels at full optimisation (a CPU peer for benchmarks).
    """

    def __init__(self, solver: DGSolver, backend: Backend, dtype=np.float64,
                 optimised: bool = False):
        lay = self.layout = solver.layout
        self.solver, self.backend, self.xp = solver, backend, backend.xp
        self.dtype = np.dtype(dtype)
        real, m, nqf = real_type(self.dtype), lay.n_modes, len(lay.face_weights)
        strength = quadrature_strength(lay.degree)

        def device(array, kind=None):
            return backend.asarray(np.ascontiguousarray(array), kind or self.dtype)

        self.viscous = solver.viscous is not None
        viscous = "true" if self.viscous else "false"
        self.groups = []
        names = {}
        for g in lay.groups:
            rule = element_rule(g.shape, strength)
            k = len(CORNERS[g.shape])
            name = f"volume_kernel<{real}, {k}, {m}, {len(rule.weights)}, {viscous}>"
            names[g.shape] = name
            self.groups.append((name, device(g.elements, np.int32),
                                device(g.corners.transpose(1, 2, 0).reshape(2 * k, -1)),
                                device(g.values), device(basis(g.shape, lay.degree).gradients(
                                    rule.points)), device(rule.weights),
                                device(shape_functions(g.shape, rule.points)[1])))
        scale = np.where(lay.scalar_mass, lay.inverse_mass[:, 0, 0], 1.0)
        self.scale = device(scale)
        listed = np.flatnonzero(~lay.scalar_mass)
        self.full_mass = (device(listed, np.int32),
                          device(lay.inverse_mass[listed].transpose(1, 2, 0)))
        flux = FLUX_CODES[solver.flux_name]
        self.face_name = f"face_kernel<{real}, {m}, {nqf}, {flux}, {viscous}>"
        self.trace_name = f"boundary_trace_kernel<{real}, {m}, {nqf}>"
        self.mass_name = f"mass_kernel<{real}, {m}>"
        self.lifting_name = f"lifting_kernel<{real}, {m}, {nqf}>"
        expressions = (*names.values(), self.face_name, self.trace_name, self.mass_name,
                       *([self.lifting_name] if self.viscous else []))
        self.kernels = backend.kernels("gpusolver.solvers.dg", "kernels/dg.cu", expressions,
                                       optimised)
        ni = lay.n_interior
        side_scale = np.zeros((2, len(lay.left)))  # each face's length times its elements'
        side_scale[0] = lay.area * scale[lay.left]  # scales, left then right
        side_scale[1, :ni] = lay.area[:ni] * scale[lay.right[:ni]]
        self.faces = (device(lay.left, np.int32), device(np.append(lay.right[:ni], 0), np.int32),
                      device(lay.trace_left, np.int32),
                      device(np.append(lay.trace_right, 0), np.int32), device(lay.trace_table),
                      device(lay.normal), device(lay.area), device(side_scale),
                      device(lay.face_weights))
        code, value, self.array_markers = solver.kernel_conditions()
        self.conditions = (device(code, np.int32), device(value),
                           device(lay.point_normals[:, :, ni:]))
        gas = solver.gas
        self.gamma = self.dtype.type(gas.gamma)
        self.transport = (self.dtype.type(gas.mu_ref),
                          self.dtype.type(SUTHERLAND_K / gas.temperature_ref),
                          self.dtype.type(gas.prandtl), np.int32(gas.viscosity_law == "constant"))
        null = np.uint64(0)
        #: What the volume and face kernels read of the BR2 terms (null pointers for Euler).
        self.volume_viscous, self.face_viscous = (null,), (null, null, null)
        if self.viscous:
            self._lay_out_viscous(device, listed, solver.viscous)
        self.boundary_flux = None

    def _lay_out_viscous(self, device, listed: np.ndarray, viscous) -> None:
        """The arrays of the BR2 terms: penalties, mass matrix indices, the modes'
        gradients at the face points, and room for the liftings."""
        lay, n, nf = self.layout, self.layout.n_elements, len(self.layout.left)
        penalty = np.zeros((2, nf))
        penalty[0], penalty[1, :lay.n_interior] = viscous.eta_left, viscous.eta_right
        mass_index = np.full(n, -1)
        mass_index[listed] = np.arange(len(listed))
        self.lifting_arrays = (device(penalty), device(mass_index, np.int32))
        self.lifting = self.xp.empty((4 * 2 * lay.n_modes, n), self.dtype)
        self.face_lifting = self.xp.empty((2 * 4 * len(lay.face_weights), nf), self.dtype)
        self.volume_viscous = (self.lifting,)
        self.face_viscous = (device(lay.left_trace_gradients), device(lay.right_trace_gradients),
                             self.face_lifting)

    def rate(self, u):
        """``dU/dt`` of modal coefficients ``u`` ``(n_vars, n_modes, n_elements)``; sets
        :attr:`boundary_flux` (each boundary face's flux, integrated) as the NumPy rate
        does."""
        lay, xp = self.layout, self.xp
        u = self.backend.asarray(u, self.dtype)
        n, nf, ni, nqf = lay.n_elements, len(lay.left), lay.n_interior, len(lay.face_weights)
        i32 = np.int32
        rhs = xp.empty_like(u)
        (left, right, trace_left, trace_right, tables, normal, area, side_scale,
         face_weights) = self.faces
        inside = xp.empty((u.shape[0], nqf, nf - ni), self.dtype)
        ghost = xp.empty_like(inside)
        self.kernels[self.trace_name](grid(nf - ni, BLOCK), (BLOCK,),
                                      (i32(nf), i32(ni), i32(n), left, trace_left, tables,
                                       *self.conditions, u, inside, ghost, self.gamma))
        for name in self.array_markers:
            self.solver.marker_ghost_states(inside, ghost, name)
        listed, inverse_mass = self.full_mass
        if self.viscous:
            self.lifting.fill(0)
            penalty, mass_index = self.lifting_arrays
            self.kernels[self.lifting_name](
                grid(nf, BLOCK), (BLOCK,),
                (i32(nf), i32(ni), i32(n), left, right, trace_left, trace_right, tables,
                 normal, area, face_weights, penalty, mass_index, self.scale, i32(len(listed)),
                 inverse_mass, u, ghost, self.lifting, self.face_lifting, self.gamma))
        for name, elements, corners, values, gradients, weights, shapes in self.groups:
            self.kernels[name](grid(len(elements), BLOCK), (BLOCK,),
                               (i32(len(elements)), i32(n), elements, corners, values,
                                gradients, weights, shapes, self.scale, u, rhs, self.gamma,
                                *self.volume_viscous, *self.transport))
        boundary_flux = xp.empty((u.shape[0], nf - ni), self.dtype)
        self.kernels[self.face_name](grid(nf, BLOCK), (BLOCK,),
                                     (i32(nf), i32(ni), i32(n), left, right, trace_left,
                                      trace_right, tables, normal, area, side_scale,
                                      face_weights, u, ghost, rhs, boundary_flux, self.gamma,
                                      *self.face_viscous, *self.transport))
        self.boundary_flux = boundary_flux
        if len(listed):
            self.kernels[self.mass_name](grid(len(listed), BLOCK), (BLOCK,),
                                         (i32(len(listed)), i32(n), listed, inverse_mass, rhs))
        return rhs
