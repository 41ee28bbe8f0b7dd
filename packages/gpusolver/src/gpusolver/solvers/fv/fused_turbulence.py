"""The turbulence models' implicit steps in kernels (``kernels/turbulence.cu``): the
array code of :class:`~gpusolver.solvers.fv.turbulence.SpalartAllmarasFV` and
:class:`~gpusolver.solvers.fv.turbulence.MenterSSTFV`, in a few kernels and one launch
per sweep level instead of about a hundred array operations a scalar; swept steps
(:meth:`~gpusolver.solvers.fv.turbulence.TurbulenceFV.use_sweeps`) entirely, exact steps
(:meth:`~gpusolver.solvers.fv.turbulence.TurbulenceFV.use_exact`) up to the matrix,
which the model's :class:`~gpusolver.solvers.fv.jacobian.ExactSolver` solves.

A step: once per step of the mean flow, its primitive gradients (the gradient kernel of
``kernels/residual.cu``, unlimited); then per cell the scalars' gradients and from them
the model's diffusivities, sources and damping (one kernel), per face the scalars' fluxes
and diffusion coefficients, per cell their residuals, squared rates' sums and implicit
diagonals (each of these one launch for all the model's scalars), and per scalar the
forward and backward sweeps level by level over the mean flow's LU-SGS sweep tables
(:class:`~gpusolver.solvers.fv.lusgs.SweepTables`) or the exact solve, and the update.
Each step of the mean flow also takes the faces' eddy viscosity from kernels, written
where the fused residual reads it: in a fused LU-SGS step between its gradients and its
fluxes (:meth:`FusedScalarSteps.eddy_pass`; SST's reads those gradients), otherwise before
the step. The same faces, slots and boundary states as the
mean flow's fused residual (:class:`~gpusolver.solvers.fv.fused.FusedResidual`), whose
discretisation the model shares.
"""

from __future__ import annotations

import itertools

import numpy as np

from gpusolver.backends.cuda import NULL, real_type
from gpusolver.physics import menter_sst as sst
from gpusolver.physics import spalart_allmaras as sa
from gpusolver.physics.gas import SUTHERLAND_K
from gpusolver.solvers.fv.fused import GRADIENT_CODES, SOURCE, UNLIMITED

#: Threads per block of every kernel here.
BLOCK = 256


def _blocks(n: int) -> tuple[int]:
    return (max(1, (n + BLOCK - 1) // BLOCK),)


class FusedScalarSteps:
    """What the models' steps in kernels share: the compiled kernels, the mean flow's
    gradients, per scalar its gradient, face fluxes, matrix, sweeps and update, and the
    faces' eddy viscosity.

    Parameters
    ----------
    model : TurbulenceFV
        Its discretisation runs the fused residual (``d.fused``), with Green-Gauss or
        least-squares gradients.
    tables : tuple of SweepTables or None
        The forward and backward sweeps' tables (the mean flow's LU-SGS level kernels');
        None: the model's exact solve (:meth:`TurbulenceFV.exact_change`) instead.
    cell_kernel : str
        The model's cell kernel (``sa_cell_kernel`` or ``sst_cell_kernel``), templated on
        the real type, the dimension and the gradient.
    other_kernels : dict
        The model's other per-cell kernels by role, each templated on the real type and
        the dimension.
    constants : tuple of float
        The model's constants in the kernel's order.
    sigmas : tuple of float
        Per scalar, the divisor of its diffusivity on the faces.
    """

    def __init__(self, model, tables: tuple, cell_kernel: str, other_kernels: dict,
                 constants, sigmas):
        d = model.d
        f = self.fused = d.fused
        backend, xp = d.backend, d.backend.xp
        self.xp, self.dtype, self.model = xp, d.dtype, model
        real, dim, n_scalars = real_type(self.dtype), f.dim, len(model.names)
        gradient = GRADIENT_CODES[d.scheme.gradient]
        names = {"cells": f"{cell_kernel}<{real}, {dim}, {gradient}>",
                 **{key: f"{name}<{real}, {dim}>" for key, name in other_kernels.items()},
                 "faces": f"scalar_face_kernel<{real}, {dim}, {n_scalars}>",
                 "matrix": f"scalar_matrix_kernel<{real}, {n_scalars}>",
                 "sweep": f"scalar_sweep_kernel<{real}>",
                 "update": f"scalar_update_kernel<{real}>",
                 "face_eddy": f"face_eddy_viscosity_kernel<{real}>"}
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
        #: The cell kernels' viscosity law and gamma, in their argument order.
        self.law = (real_of(gas.mu_ref), real_of(SUTHERLAND_K / gas.temperature_ref),
                    np.int32(gas.viscosity_law == "constant"), real_of(gas.gamma))
        self.constants = backend.asarray(np.array(constants), self.dtype)
        #: Per scalar: its free stream and its diffusivity's divisor, as the kernels read them.
        self.free_streams = backend.asarray(np.array(model.free_stream), self.dtype)
        self.sigmas = backend.asarray(np.array(sigmas), self.dtype)
        self.kind = backend.asarray(model.boundary_kind, np.int32)
        self.tangent = backend.asarray(d.tangent, self.dtype)
        self.inverse_length = backend.asarray(d.inverse_length, self.dtype)
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
        self.tables = tables
        #: Per scalar: each interior face's two implicit matrix entries (its left cell's row,
        #: then its right cell's: ``[f]``, ``[n_interior + f]``), for the sweeps.
        self.entries = None if tables is None else xp.empty((n_scalars, 2 * f.n_interior),
                                                            self.dtype)
        #: Per sweep: each upstream slot's index in a scalar's :attr:`entries`.
        self.entry = None if tables is None else tuple(self._entry_of(t) for t in tables)
        # per scalar the update kernel's ceiling (0: none)
        self._ceilings = tuple(self.dtype.type(c if np.isfinite(c) else 0)
                               for c in model.ceilings())
        #: Each cell's eddy viscosity (:meth:`cell_eddy_viscosity`).
        self.mu_t = xp.empty(n, self.dtype)
        #: What the next :meth:`mean_gradients` returns (None: taken anew), and those of
        #: the model's step (its sub-steps share them).
        self._given = self._step_gradients = None

    def face_eddy_viscosity(self, mu_t):
        """Each face's eddy viscosity from its cells' ``mu_t`` (the mean; a boundary
        face's cell's, 0 on no-slip walls), written into the fused residual's buffer,
        which it returns."""
        f = self.fused
        out = f.eddy_buffer()
        self._kernels["face_eddy"](_blocks(self.n_faces), (BLOCK,), (
            self.xp.ascontiguousarray(mu_t, dtype=self.dtype), *f.faces[:2],
            np.int32(self.n_faces), np.int32(self.n_interior), self.kind, out))
        return out

    def eddy_pass(self, u) -> None:
        """Each face's eddy viscosity at ``u`` into the fused residual's buffer, from the
        unlimited gradients its face pass has just taken of ``u`` (where a fused LU-SGS
        step calls it: :meth:`FusedResidual.face_pass
        <gpusolver.solvers.fv.fused.FusedResidual.face_pass>`), so that no pass of its
        own takes them."""
        self.face_eddy_viscosity(self.cell_eddy_viscosity(u, self.fused.raw_gradient))

    def mean_gradients(self, u):
        """The mean flow's unlimited primitive gradients at ``u`` (once per its step):
        those :meth:`take_residual_gradients` gave, or taken anew into
        :attr:`mean_gradient`."""
        given, self._given = self._given, None
        if given is not None:
            return given
        f, n = self.fused, self.n_cells
        self._mean_gradients(_blocks(n), (BLOCK,), (
            u, np.int32(n), *f.faces, f.slots, f.width, *self.coefficients, f.volume, NULL,
            NULL, self.mean_gradient, NULL, self.law[-1], np.int32(0), np.int32(n)))
        return self.mean_gradient

    def take_residual_gradients(self, keep: bool) -> None:
        """Let the next :meth:`mean_gradients` be the fused residual's unlimited gradients
        (the same kernel's), of the state its last residual took: call it right after the
        mean flow's LU-SGS step, whose residual is of the step's start, as the model's step
        is (a RANS residual is viscous, so its pass keeps them). ``keep``: copy them, for
        residuals that come before the model's step (multigrid's)."""
        f = self.fused
        if keep:
            self.mean_gradient[...] = f.raw_gradient.reshape(self.mean_gradient.shape)
        self._given = self.mean_gradient if keep else f.raw_gradient

    def cell_arguments(self, mass_flux, walls) -> tuple:
        """The cell kernel's first arguments: the scalars, their values on no-slip walls
        (``walls``: per scalar and boundary face, or None for 0), the face mass fluxes and
        the mesh's arrays of the scalars' gradients, which it writes into
        :attr:`gradient`."""
        f = self.fused
        left, right, normal, area = f.faces[:4]
        return (self.model.values, NULL if walls is None else walls, mass_flux,
                np.int32(self.n_cells), left, right, normal, area, np.int32(self.n_faces),
                np.int32(self.n_interior), self.kind, f.slots, f.width, *self.coefficients,
                f.volume, self.free_streams, self.gradient)

    def scalar_residuals(self, walls, mass_flux, dt, new_mean_flow: bool = False) -> None:
        """The scalars' face fluxes, residuals (:attr:`residual`) and implicit diagonals
        (:attr:`diagonal`) from the cell pass's gradients, diffusivities, sources and
        damping (``walls`` as :meth:`cell_arguments`); ``new_mean_flow``: add the sums of
        their own cells' ``(R / V)^2`` to the model's ``squares``."""
        f, k = self.fused, self._kernels
        n, nf, ni = self.n_cells, self.n_faces, self.n_interior
        left, right, normal, area = f.faces[:4]
        k["faces"](_blocks(nf), (BLOCK,), (
            self.model.values, self.gradient, self.diffusivity,
            NULL if walls is None else walls, mass_flux, left, right, normal, area,
            self.tangent, self.inverse_length, np.int32(n), np.int32(nf), np.int32(ni),
            self.kind, self.free_streams, self.sigmas, self.flux, self.coefficient,
            NULL if self.entries is None else self.entries))
        k["matrix"](_blocks(n), (BLOCK,), (
            self.flux, self.coefficient, mass_flux, np.int32(n), np.int32(nf), np.int32(ni),
            self.kind, f.slots, f.width, f.volume, dt, self.source, self.damping,
            self.density, self.residual, self.diagonal, np.int32(self.model.n_own),
            self.model.squares if new_mean_flow else NULL))

    def advance(self, i: int, mass_flux, new_mean_flow: bool = False) -> None:
        """Scalar ``i``'s implicit change from its :meth:`scalar_residuals`: both sweeps (or
        without :attr:`tables` the model's exact solve, its matrix factorised anew where
        ``new_mean_flow``) into :attr:`change` (not applied)."""
        if self.tables is None:
            model = self.model
            self.change[...] = model.exact_change(
                i, self.residual[i],
                lambda: (self.diagonal[i], *model.off_diagonal(mass_flux, self.coefficient[i])),
                factorise=new_mean_flow)
            return
        self.star.fill(0)
        self._sweep(0, i, self.residual[i], self.star)
        self.change[...] = self.star
        self._sweep(1, i, self.star, self.change)

    def update(self, i: int, max_fall: float = 0.0, max_change: float = 0.0) -> None:
        """Scalar ``i`` += :attr:`change`, falling by at most ``max_fall`` of its value
        and changing by at most ``max_change`` times its size plus its free stream's
        (each where positive); the own values it leaves non-finite or beyond the model's
        ceiling are counted in its ``tallies``."""
        real = self.dtype.type
        model = self.model
        self._kernels["update"](_blocks(self.n_cells), (BLOCK,), (
            model.values[i], self.change, np.int32(self.n_cells), real(max_fall),
            real(max_change), real(abs(model.free_stream[i])), self._ceilings[i],
            np.int32(model.n_own), model.tallies[-1:]))

    def cell_steps(self, dt):
        """``dt`` (per cell, or one) as the kernels read it: one contiguous value a cell."""
        xp = self.xp
        return xp.ascontiguousarray(xp.broadcast_to(xp.asarray(dt, self.dtype),
                                                    (self.n_cells,)))

    def _entry_of(self, tables):
        """Each slot of the sweep ``tables``: its face's entry in its cell's row, as an index
        in a scalar's :attr:`entries` (the face, or the face plus ``n_interior`` where the
        cell is the face's right; any where the slot has no upstream neighbour)."""
        xp, face = self.xp, tables.face
        right = self.fused.faces[0][face] != tables.cells[None, :]
        return xp.ascontiguousarray(face + right * np.int32(self.n_interior), dtype=np.int32)

    def _sweep(self, which: int, i: int, rhs, x) -> None:
        """The forward (``which`` 0: ``x = (rhs - L x) / D``) or backward (1:
        ``x = rhs - U x / D``) sweep of scalar ``i``, one launch per level."""
        t = self.tables[which]
        rows, width = t.upstream.shape[1], t.upstream.shape[0]
        arguments = (np.int32(rows), np.int32(width), t.cells, t.upstream, self.entry[which],
                     self.entries[i], self.diagonal[i], rhs, x, np.int32(which == 0))
        for first, last in itertools.pairwise(t.offsets):
            if last > first:
                self._kernels["sweep"](_blocks(last - first), (BLOCK,),
                                       (np.int32(first), np.int32(last), *arguments))


class FusedSpalartAllmaras(FusedScalarSteps):
    """SA-neg's steps of ``nu_tilde`` in kernels (see :class:`FusedScalarSteps`); each
    changes it by at most ``model.MAX_CHANGE`` times its size plus its free stream's."""

    def __init__(self, model, tables: tuple):
        super().__init__(model, tables, "sa_cell_kernel",
                         {"cell_eddy": "sa_eddy_viscosity_kernel"},
                         sa.KERNEL_CONSTANTS, (sa.SIGMA,))

    def cell_eddy_viscosity(self, u, gradients=None):
        """Each cell's ``mu_t`` at the mean flow ``u`` (:attr:`mu_t`, overwritten by the
        next call); ``gradients``: unused (SA's ``mu_t`` takes none)."""
        self._kernels["cell_eddy"](_blocks(self.n_cells), (BLOCK,), (
            self.fused.backend.asarray(u), self.model.values[0], np.int32(self.n_cells),
            self.constants, *self.law, self.mu_t))
        return self.mu_t

    def evaluate_residual(self, u, mass_flux, dt, new_mean_flow: bool = True) -> None:
        """``nu_tilde``'s residual and implicit diagonal (:attr:`residual`,
        :attr:`diagonal`) at the mean flow ``u`` (its face mass fluxes ``mass_flux``)
        with the time steps ``dt`` (per cell, as :meth:`cell_steps` gives them);
        ``new_mean_flow``: ``u`` changed since the last step (its gradients are taken
        anew and the residual's squares summed into the model's ``squares``)."""
        if new_mean_flow:
            self._step_gradients = self.mean_gradients(u)
            self.model.tallies.fill(0)
        self._kernels["cells"](_blocks(self.n_cells), (BLOCK,), (
            *self.cell_arguments(mass_flux, None), u, self._step_gradients,
            self.model.distance, self.constants, *self.law, self.diffusivity[0],
            self.source[0], self.damping[0], self.density))
        self.scalar_residuals(None, mass_flux, dt, new_mean_flow=new_mean_flow)

    def step(self, u, mass_flux, dt, new_mean_flow: bool = True) -> None:
        """``nu_tilde`` advanced in place by one implicit step at the mean flow ``u`` (its
        face mass fluxes ``mass_flux``) with the time steps ``dt`` (per cell, or one);
        ``new_mean_flow`` as :meth:`evaluate_residual`."""
        self.evaluate_residual(self.fused.backend.asarray(u), mass_flux,
                               self.cell_steps(dt), new_mean_flow)
        self.advance(0, mass_flux, new_mean_flow=new_mean_flow)
        self.update(0, max_change=self.model.MAX_CHANGE)


class FusedMenterSST(FusedScalarSteps):
    """SST's steps of ``k`` and ``omega`` in kernels (see :class:`FusedScalarSteps`); each
    falls by at most ``model.MAX_FALL`` of its value."""

    def __init__(self, model, tables: tuple):
        super().__init__(model, tables, "sst_cell_kernel",
                         {"cell_eddy": "sst_eddy_viscosity_kernel",
                          "wall_omega": "sst_wall_omega_kernel"},
                         sst.KERNEL_CONSTANTS, (1.0, 1.0))  # its sigmas: in the diffusivities
        #: ``k``'s (0) and ``omega``'s values on no-slip walls, per boundary face.
        self.walls = self.xp.zeros((2, self.n_faces - self.n_interior), self.dtype)

    def cell_eddy_viscosity(self, u, gradients=None):
        """Each cell's ``mu_t`` at the mean flow ``u`` (:attr:`mu_t`, overwritten by the
        next call), from the mean flow's unlimited primitive ``gradients`` at ``u``
        (default: taken anew)."""
        u = self.fused.backend.asarray(u)
        model = self.model
        gradients = self.mean_gradients(u) if gradients is None else gradients
        self._kernels["cell_eddy"](_blocks(self.n_cells), (BLOCK,), (
            u, model.values[0], model.values[1], gradients, model.distance,
            np.int32(self.n_cells), self.constants, *self.law, self.mu_t))
        return self.mu_t

    def evaluate_residual(self, u, mass_flux, dt, new_mean_flow: bool = True) -> None:
        """``k``'s and ``omega``'s residuals and implicit diagonals, both from the sources
        at the mean flow ``u``; the arguments as
        :meth:`FusedSpalartAllmaras.evaluate_residual` (``new_mean_flow``: the walls'
        ``omega`` taken anew too)."""
        model = self.model
        if new_mean_flow:
            self._step_gradients = self.mean_gradients(u)
            self._kernels["wall_omega"](_blocks(self.n_faces - self.n_interior), (BLOCK,), (
                u, self.fused.faces[0], model.distance, np.int32(self.n_cells),
                np.int32(self.n_faces), np.int32(self.n_interior), self.constants, *self.law,
                self.dtype.type(sst.WALL_OMEGA), self.walls))
            model.tallies.fill(0)
        self._kernels["cells"](_blocks(self.n_cells), (BLOCK,), (
            *self.cell_arguments(mass_flux, self.walls), u, self._step_gradients,
            model.distance, self.constants, *self.law, self.diffusivity[0], self.diffusivity[1],
            self.source[0], self.source[1], self.damping[0], self.damping[1], self.density))
        self.scalar_residuals(self.walls, mass_flux, dt, new_mean_flow=new_mean_flow)

    def step(self, u, mass_flux, dt, new_mean_flow: bool = True) -> None:
        """``k`` and ``omega`` advanced in place by one implicit step each at the mean flow
        ``u`` (its face mass fluxes ``mass_flux``) with the time steps ``dt``, both from
        the sources of the step's start; ``new_mean_flow`` as :meth:`evaluate_residual`."""
        self.evaluate_residual(self.fused.backend.asarray(u), mass_flux,
                               self.cell_steps(dt), new_mean_flow)
        for i in range(2):
            self.advance(i, mass_flux, new_mean_flow=new_mean_flow)
            self.update(i, max_fall=self.model.MAX_FALL)
