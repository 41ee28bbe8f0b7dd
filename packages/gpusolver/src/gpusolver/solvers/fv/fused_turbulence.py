"""The turbulence models' swept implicit steps in kernels (``kernels/turbulence.cu``): the
array code of :class:`~gpusolver.solvers.fv.turbulence.SpalartAllmarasFV` and
:class:`~gpusolver.solvers.fv.turbulence.MenterSSTFV` with swept steps
(:meth:`~gpusolver.solvers.fv.turbulence.TurbulenceFV.use_sweeps`), in a few kernels and
one launch per sweep level instead of about a hundred array operations a scalar.

A step: the mean flow's primitive gradients (the gradient kernel of
``kernels/residual.cu``, unlimited) and each scalar's gradient, then per cell the model's
diffusivities, sources and damping, and per scalar: per face the flux and the diffusion
coefficient, per cell the residual and the implicit diagonal, and the forward and
backward sweeps level by level. The same faces, slots and boundary states as the mean
flow's fused residual (:class:`~gpusolver.solvers.fv.fused.FusedResidual`), whose
discretisation the model shares.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends.cuda import NULL, real_type
from gpusolver.physics import menter_sst as sst
from gpusolver.physics import spalart_allmaras as sa
from gpusolver.physics.gas import SUTHERLAND_K
from gpusolver.solvers.fv.fused import GRADIENT_CODES, SOURCE, UNLIMITED
from meshorder.hyperplanes import Levels

#: Threads per block of every kernel here.
BLOCK = 256


def _blocks(n: int) -> tuple[int]:
    return (max(1, (n + BLOCK - 1) // BLOCK),)


class FusedScalarSteps:
    """What the models' steps in kernels share: the compiled kernels, the mean flow's
    gradients, and per scalar its gradient, face fluxes, matrix and sweeps.

    Parameters
    ----------
    model : TurbulenceFV
        Its discretisation runs the fused residual (``d.fused``), with Green-Gauss or
        least-squares gradients.
    levels : tuple of Levels
        The forward and backward sweeps' levels (the mean flow's LU-SGS levels).
    cell_kernel : str
        The model's per-cell kernel (``sa_cell_kernel`` or ``sst_cell_kernel``).
    constants : tuple of float
        The model's constants in the kernel's order.
    """

    def __init__(self, model, levels: tuple[Levels, Levels], cell_kernel: str, constants):
        d = model.d
        f = self.fused = d.fused
        backend, xp = d.backend, d.backend.xp
        self.xp, self.dtype, self.model = xp, d.dtype, model
        real, dim = real_type(self.dtype), f.dim
        gradient = GRADIENT_CODES[d.scheme.gradient]
        names = {"gradient": f"scalar_gradient_kernel<{real}, {dim}, {gradient}>",
                 "cells": f"{cell_kernel}<{real}, {dim}>",
                 "faces": f"scalar_face_kernel<{real}, {dim}>",
                 "matrix": f"scalar_matrix_kernel<{real}>",
                 "sweep": f"scalar_sweep_kernel<{real}>"}
        compiled = backend.kernels(__package__, "kernels/turbulence.cu",
                                   tuple(sorted(names.values())))
        self._kernels = {key: compiled[name] for key, name in names.items()}
        mean_flow = f"gradients_kernel<{real}, {dim}, {gradient}, {UNLIMITED}>"
        self._mean_gradients = backend.kernels(__package__, SOURCE, (mean_flow,))[mean_flow]
        n, nf = f.n_cells, f.n_faces
        self.n_cells, self.n_faces, self.n_interior = n, nf, f.n_interior
        self.coefficients = ((backend.asarray(d.gradient.coef_left, self.dtype),
                              backend.asarray(d.gradient.coef_right, self.dtype))
                             if d.scheme.gradient == "least-squares" else (NULL, NULL))
        gas, real_of = d.gas, self.dtype.type
        self.law = (real_of(gas.mu_ref), real_of(SUTHERLAND_K / gas.temperature_ref),
                    np.int32(gas.viscosity_law == "constant"), real_of(gas.gamma))
        self.constants = backend.asarray(np.array(constants), self.dtype)
        self.kind = backend.asarray(model.boundary_kind, np.int32)
        self.tangent = backend.asarray(d.tangent, self.dtype)
        self.inverse_length = backend.asarray(d.inverse_length, self.dtype)
        n_scalars = len(model.names)
        self.mean_gradient = xp.empty((gas.n_vars * dim, n), self.dtype)
        #: Per scalar: its gradient, the model's diffusivity, sources and damping (per
        #: cell), face fluxes and coefficients, residual and diagonal.
        self.gradient = xp.empty((n_scalars, dim, n), self.dtype)
        self.diffusivity, self.source, self.damping, self.residual, self.diagonal = (
            xp.empty((n_scalars, n), self.dtype) for _ in range(5))
        self.flux, self.coefficient = (xp.empty((n_scalars, nf), self.dtype) for _ in range(2))
        self.density = xp.empty(n, self.dtype)
        self.star = xp.zeros(n, self.dtype)
        self.change = xp.zeros(n, self.dtype)
        #: Per sweep: its level of every cell, and per level its cells.
        self.sweeps = [(backend.asarray(level.level, np.int32),
                        [backend.asarray(level.order[level.offsets[k]:level.offsets[k + 1]],
                                         np.int32) for k in range(level.n_levels)])
                       for level in levels]

    def gradients(self, u, mass_flux, walls: list) -> None:
        """The mean flow's primitive gradients and each scalar's (``walls``: per scalar
        its value on no-slip walls per boundary face, or None for 0)."""
        f, n, nf, ni = self.fused, self.n_cells, self.n_faces, self.n_interior
        left, right, normal, area = f.faces[:4]
        self._mean_gradients(_blocks(n), (BLOCK,), (
            u, np.int32(n), *f.faces, f.slots, f.width, *self.coefficients, f.volume, NULL,
            NULL, self.mean_gradient, NULL, self.law[-1], np.int32(0), np.int32(n)))
        for i, wall in enumerate(walls):
            self._kernels["gradient"](_blocks(n), (BLOCK,), (
                self.model.values[i], NULL if wall is None else wall, mass_flux, np.int32(n),
                left, right, normal, area, np.int32(nf), np.int32(ni), self.kind, f.slots,
                f.width, *self.coefficients, f.volume,
                self.dtype.type(self.model.free_stream[i]), self.gradient[i]))

    def advance(self, i: int, wall, mass_flux, dt, sigma: float = 1.0):
        """Scalar ``i``'s implicit step from the cell pass's diffusivity, sources and
        damping: its face fluxes, residual, diagonal and both sweeps into
        :attr:`change` (not applied); returns its residual."""
        f, k = self.fused, self._kernels
        n, nf, ni = self.n_cells, self.n_faces, self.n_interior
        left, right, normal, area = f.faces[:4]
        k["faces"](_blocks(nf), (BLOCK,), (
            self.model.values[i], self.gradient[i], self.diffusivity[i],
            NULL if wall is None else wall, mass_flux, left, right, normal, area,
            self.tangent, self.inverse_length, np.int32(n), np.int32(nf), np.int32(ni),
            self.kind, self.dtype.type(self.model.free_stream[i]), self.dtype.type(sigma),
            self.flux[i], self.coefficient[i]))
        k["matrix"](_blocks(n), (BLOCK,), (
            self.flux[i], self.coefficient[i], mass_flux, np.int32(n), np.int32(nf),
            np.int32(ni), self.kind, f.slots, f.width, f.volume, dt, self.source[i],
            self.damping[i], self.density, self.residual[i], self.diagonal[i]))
        self.star.fill(0)
        self._sweep(0, i, mass_flux, self.residual[i], self.star)
        self.change[...] = self.star
        self._sweep(1, i, mass_flux, self.star, self.change)
        return self.residual[i]

    def cell_steps(self, dt):
        """``dt`` (per cell, or one) as the kernels read it: one contiguous value a cell."""
        xp = self.xp
        return xp.ascontiguousarray(xp.broadcast_to(xp.asarray(dt, self.dtype),
                                                    (self.n_cells,)))

    def _sweep(self, which: int, i: int, mass_flux, rhs, x) -> None:
        """The forward (``which`` 0: ``x = (rhs - L x) / D``) or backward (1:
        ``x = rhs - U x / D``) sweep of scalar ``i``, one launch per level."""
        f = self.fused
        level, levels = self.sweeps[which]
        left, right = f.faces[:2]
        for cells in levels:
            self._kernels["sweep"](_blocks(len(cells)), (BLOCK,), (
                np.int32(len(cells)), cells, level, left, right, np.int32(self.n_cells),
                np.int32(self.n_faces), np.int32(self.n_interior), f.slots, f.width,
                mass_flux, self.coefficient[i], self.diagonal[i], rhs, x,
                np.int32(which == 0)))


class FusedSpalartAllmaras(FusedScalarSteps):
    """SA-neg's steps of ``nu_tilde`` in kernels (see :class:`FusedScalarSteps`)."""

    def __init__(self, model, levels: tuple[Levels, Levels]):
        super().__init__(model, levels, "sa_cell_kernel", sa.KERNEL_CONSTANTS)

    def step(self, u, mass_flux, dt):
        """``nu_tilde`` advanced in place by one implicit step at the mean flow ``u`` (its
        face mass fluxes ``mass_flux``) with the time steps ``dt``; returns the residual
        ``R`` before it (a buffer of this object)."""
        u = self.fused.backend.asarray(u)
        dt = self.cell_steps(dt)
        self.gradients(u, mass_flux, [None])
        n = self.n_cells
        mu_ref, sutherland, constant_law, gamma = self.law
        self._kernels["cells"](_blocks(n), (BLOCK,), (
            u, self.model.values[0], self.mean_gradient, self.gradient[0], self.fused.volume,
            self.model.distance, np.int32(n), self.constants, mu_ref, sutherland,
            constant_law, gamma, self.diffusivity[0], self.source[0], self.damping[0],
            self.density))
        residual = self.advance(0, None, mass_flux, dt, sa.SIGMA)
        self.model.values[0] += self.change
        return residual


class FusedMenterSST(FusedScalarSteps):
    """SST's steps of ``k`` and ``omega`` in kernels (see :class:`FusedScalarSteps`); each
    falls by at most ``model.MAX_FALL`` of its value."""

    def __init__(self, model, levels: tuple[Levels, Levels]):
        super().__init__(model, levels, "sst_cell_kernel", sst.KERNEL_CONSTANTS)

    def step(self, u, mass_flux, dt):
        """``k`` and ``omega`` advanced in place by one implicit step each at the mean flow
        ``u`` (its face mass fluxes ``mass_flux``) with the time steps ``dt``, both from
        the sources of the step's start; returns their residuals ``(2, n_cells)`` before
        it (a buffer of this object)."""
        model, xp = self.model, self.xp
        u = self.fused.backend.asarray(u)
        dt = self.cell_steps(dt)
        walls = [None, xp.ascontiguousarray(model.wall_omega(u), dtype=self.dtype)]
        self.gradients(u, mass_flux, walls)
        n = self.n_cells
        mu_ref, sutherland, constant_law, gamma = self.law
        self._kernels["cells"](_blocks(n), (BLOCK,), (
            u, model.values[0], model.values[1], self.mean_gradient, self.gradient[0],
            self.gradient[1], self.fused.volume, model.distance, np.int32(n), self.constants,
            mu_ref, sutherland, constant_law, gamma, self.diffusivity[0], self.diffusivity[1],
            self.source[0], self.source[1], self.damping[0], self.damping[1], self.density))
        for i, wall in enumerate(walls):
            self.advance(i, wall, mass_flux, dt)
            model.values[i] += xp.maximum(self.change, -model.MAX_FALL * model.values[i])
        return self.residual
