"""The DG right-hand side in the kernels of ``kernels/dg.cu`` (CUDA on CuPy; compiled as
C++ on NumPy, where CI checks them against :meth:`DGSolver.rate`).

Per evaluation: one volume launch per element shape, one launch for the inside and ghost
states at the boundary Gauss points (array code fills in only exact and periodic
boundaries), one face launch, and a mass-matrix launch only where some element's mass
matrix is not its Jacobian times the identity (:attr:`DGLayout.scalar_mass`): the others
are scaled by their inverse Jacobian in the volume and face kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpusolver.backends import Backend
from gpusolver.backends.cuda import grid, real_type
from gpusolver.physics.fluxes import FLUX_CODES
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

        self.groups = []
        names = {}
        for g in lay.groups:
            rule = element_rule(g.shape, strength)
            k = len(CORNERS[g.shape])
            name = f"volume_kernel<{real}, {k}, {m}, {len(rule.weights)}>"
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
        self.face_name = f"face_kernel<{real}, {m}, {nqf}, {flux}>"
        self.trace_name = f"boundary_trace_kernel<{real}, {m}, {nqf}>"
        self.mass_name = f"mass_kernel<{real}, {m}>"
        expressions = (*names.values(), self.face_name, self.trace_name, self.mass_name)
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
        self.gamma = self.dtype.type(solver.gas.gamma)
        self.boundary_flux = None

    def rate(self, u):
        """``dU/dt`` of modal coefficients ``u`` ``(n_vars, n_modes, n_elements)``; sets
        :attr:`boundary_flux` (each boundary face's flux, integrated) as the NumPy rate
        does."""
        lay, xp = self.layout, self.xp
        u = self.backend.asarray(u, self.dtype)
        n, nf, ni, nqf = lay.n_elements, len(lay.left), lay.n_interior, len(lay.face_weights)
        i32 = np.int32
        rhs = xp.empty_like(u)
        for name, elements, corners, values, gradients, weights, shapes in self.groups:
            self.kernels[name](grid(len(elements), BLOCK), (BLOCK,),
                               (i32(len(elements)), i32(n), elements, corners, values,
                                gradients, weights, shapes, self.scale, u, rhs, self.gamma))
        (left, right, trace_left, trace_right, tables, normal, area, side_scale,
         face_weights) = self.faces
        inside = xp.empty((u.shape[0], nqf, nf - ni), self.dtype)
        ghost = xp.empty_like(inside)
        self.kernels[self.trace_name](grid(nf - ni, BLOCK), (BLOCK,),
                                      (i32(nf), i32(ni), i32(n), left, trace_left, tables,
                                       *self.conditions, u, inside, ghost, self.gamma))
        for name in self.array_markers:
            self.solver.marker_ghost_states(inside, ghost, name)
        boundary_flux = xp.empty((u.shape[0], nf - ni), self.dtype)
        self.kernels[self.face_name](grid(nf, BLOCK), (BLOCK,),
                                     (i32(nf), i32(ni), i32(n), left, right, trace_left,
                                      trace_right, tables, normal, area, side_scale,
                                      face_weights, u, ghost, rhs, boundary_flux, self.gamma))
        self.boundary_flux = boundary_flux
        listed, inverse_mass = self.full_mass
        if len(listed):
            self.kernels[self.mass_name](grid(len(listed), BLOCK), (BLOCK,),
                                         (i32(len(listed)), i32(n), listed, inverse_mass, rhs))
        return rhs
