"""SA-neg's implicit steps of ``nu_tilde`` in kernels (``kernels/turbulence.cu``): the
array code of :class:`~gpusolver.solvers.fv.turbulence.SpalartAllmarasFV` with swept
steps (:meth:`~gpusolver.solvers.fv.turbulence.TurbulenceFV.use_sweeps`), in five
kernels and one launch per sweep level instead of about a hundred array operations.

A step: the mean flow's primitive gradients (the gradient kernel of
``kernels/residual.cu``, unlimited), then per cell ``grad nt`` and the diffusivity, per
face the flux and the diffusion coefficient, per cell the residual and the implicit
diagonal, and the forward and backward sweeps level by level. The same faces, slots and
boundary states as the mean flow's fused residual (:class:`FusedResidual`), whose
discretisation the model shares.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends.cuda import NULL, real_type
from gpusolver.physics import spalart_allmaras as sa
from gpusolver.physics.gas import SUTHERLAND_K
from gpusolver.solvers.fv.fused import GRADIENT_CODES, SOURCE, UNLIMITED
from meshorder.hyperplanes import Levels

#: Threads per block of every kernel here.
BLOCK = 256


def _blocks(n: int) -> tuple[int]:
    return (max(1, (n + BLOCK - 1) // BLOCK),)


class FusedSpalartAllmaras:
    """The kernels and buffers of SA-neg's swept implicit steps on one discretisation.

    Parameters
    ----------
    model : SpalartAllmarasFV
        Its discretisation runs the fused residual (``d.fused``), with Green-Gauss or
        least-squares gradients.
    levels : tuple of Levels
        The forward and backward sweeps' levels (the mean flow's LU-SGS levels).
    """

    def __init__(self, model, levels: tuple[Levels, Levels]):
        d = model.d
        f = self.fused = d.fused
        backend, xp = d.backend, d.backend.xp
        self.xp, self.dtype = xp, d.dtype
        real, dim = real_type(self.dtype), f.dim
        gradient = GRADIENT_CODES[d.scheme.gradient]
        names = {"cell_pass": f"nt_cell_pass_kernel<{real}, {dim}, {gradient}>",
                 "faces": f"nt_face_kernel<{real}, {dim}>",
                 "cells": f"nt_cell_kernel<{real}, {dim}>",
                 "sweep": f"nt_sweep_kernel<{real}>"}
        compiled = backend.kernels(__package__, "kernels/turbulence.cu",
                                   tuple(sorted(names.values())))
        self._kernels = {key: compiled[name] for key, name in names.items()}
        mean_flow = f"gradients_kernel<{real}, {dim}, {gradient}, {UNLIMITED}>"
        self._mean_gradients = backend.kernels(__package__, SOURCE, (mean_flow,))[mean_flow]
        self.n_cells, self.n_faces, self.n_interior = f.n_cells, f.n_faces, f.n_interior
        least_squares = d.scheme.gradient == "least-squares"
        self.coefficients = ((backend.asarray(d.gradient.coef_left, self.dtype),
                              backend.asarray(d.gradient.coef_right, self.dtype))
                             if least_squares else (NULL, NULL))
        gas, real_of = d.gas, self.dtype.type
        self.law = (real_of(gas.mu_ref), real_of(SUTHERLAND_K / gas.temperature_ref),
                    np.int32(gas.viscosity_law == "constant"), real_of(gas.gamma))
        self.constants = backend.asarray(np.array(sa.KERNEL_CONSTANTS), self.dtype)
        self.free_stream = real_of(model.free_stream[0])
        self.kind = backend.asarray(model.boundary_kind, np.int32)
        self.distance = model.distance
        self.tangent = backend.asarray(d.tangent, self.dtype)
        self.inverse_length = backend.asarray(d.inverse_length, self.dtype)
        n, nf = self.n_cells, self.n_faces
        self.mean_gradient = xp.empty((gas.n_vars * dim, n), self.dtype)
        self.gradient = xp.empty((dim, n), self.dtype)
        self.diffusivity = xp.empty(n, self.dtype)
        self.flux = xp.empty(nf, self.dtype)
        self.coefficient = xp.empty(nf, self.dtype)
        self.residual = xp.empty(n, self.dtype)
        self.diagonal = xp.empty(n, self.dtype)
        self.star = xp.zeros(n, self.dtype)
        self.change = xp.zeros(n, self.dtype)
        #: Per sweep: its level of every cell, and per level its cells.
        self.sweeps = [(backend.asarray(level.level, np.int32),
                        [backend.asarray(level.order[level.offsets[k]:level.offsets[k + 1]],
                                         np.int32) for k in range(level.n_levels)])
                       for level in levels]

    def step(self, u, nt, mass_flux, dt):
        """``nt`` advanced in place by one implicit step at the mean flow ``u`` (its face
        mass fluxes ``mass_flux``) with the time steps ``dt`` (per cell, or one); returns
        the residual ``R`` before it (a buffer of this object)."""
        f, k, xp = self.fused, self._kernels, self.xp
        n, nf, ni = self.n_cells, self.n_faces, self.n_interior
        left, right, normal, area = f.faces[:4]
        u = f.backend.asarray(u)
        dt = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(dt, self.dtype), (n,)))
        mu_ref, sutherland, constant_law, gamma = self.law
        self._mean_gradients(_blocks(n), (BLOCK,), (
            u, np.int32(n), *f.faces, f.slots, f.width, *self.coefficients, f.volume, NULL,
            NULL, self.mean_gradient, NULL, gamma, np.int32(0), np.int32(n)))
        k["cell_pass"](_blocks(n), (BLOCK,), (
            u, nt, mass_flux, np.int32(n), left, right, normal, area, np.int32(nf),
            np.int32(ni), self.kind, f.slots, f.width, *self.coefficients, f.volume,
            self.constants, self.free_stream, mu_ref, sutherland, constant_law, gamma,
            self.gradient, self.diffusivity))
        k["faces"](_blocks(nf), (BLOCK,), (
            nt, self.gradient, self.diffusivity, mass_flux, left, right, normal, area,
            self.tangent, self.inverse_length, np.int32(n), np.int32(nf), np.int32(ni),
            self.kind, self.free_stream, self.dtype.type(sa.SIGMA), self.flux,
            self.coefficient))
        k["cells"](_blocks(n), (BLOCK,), (
            u, nt, self.mean_gradient, self.gradient, self.flux, self.coefficient, mass_flux,
            np.int32(n), np.int32(nf), np.int32(ni), self.kind, f.slots, f.width, f.volume,
            self.distance, dt, self.constants, mu_ref, sutherland, constant_law, gamma,
            self.residual, self.diagonal))
        self.star.fill(0)
        self._sweep(0, mass_flux, self.residual, self.star)
        self.change[...] = self.star
        self._sweep(1, mass_flux, self.star, self.change)
        nt += self.change
        return self.residual

    def _sweep(self, which: int, mass_flux, rhs, x) -> None:
        """The forward (``which`` 0: ``x = (rhs - L x) / D``) or backward (1:
        ``x = rhs - U x / D``) sweep, one launch per level."""
        f = self.fused
        level, levels = self.sweeps[which]
        left, right = f.faces[:2]
        for cells in levels:
            self._kernels["sweep"](_blocks(len(cells)), (BLOCK,), (
                np.int32(len(cells)), cells, level, left, right, np.int32(self.n_cells),
                np.int32(self.n_faces), np.int32(self.n_interior), f.slots, f.width,
                mass_flux, self.coefficient, self.diagonal, rhs, x,
                np.int32(which == 0)))
