"""The DG right-hand side in the kernels of ``kernels/dg.cu`` (CUDA on CuPy; compiled as
C++ on NumPy, where CI checks them against :meth:`DGDiscretisation.rate`).

Per evaluation: one launch for the inside and ghost states at the boundary Gauss points
(array code fills in only exact and periodic boundaries), for Navier-Stokes one launch for
the BR2 liftings, one volume launch per element shape, one face launch, and a mass-matrix
launch only where some element's mass matrix is not its Jacobian times the identity
(:attr:`DGLayout.scalar_mass`): the others are scaled by their inverse Jacobian in the
volume and face kernels. :class:`FusedDGSteps` holds one part's buffers and update kernel
per Runge-Kutta stage, which :class:`~gpusolver.solvers.dg.fused_parts.FusedDGPartsSteps`
runs for every part and records as one CUDA graph per kind of step.

A part of a partitioned mesh (:mod:`gpusolver.solvers.dg.solver`) computes its rows in
two pieces (:meth:`FusedDG.split_at_halo`): what reads no halo state while the halo is in
flight, the rest once it is in; its volume and face launches are then split by range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpusolver.backends import Backend
from gpusolver.backends.cuda import NULL, grid, real_type
from gpusolver.backends.graphs import StepGraphs, alternate
from gpusolver.physics.fluxes import FLUX_CODES
from gpusolver.physics.gas import SUTHERLAND_K
from gpusolver.solvers.dg.layout import shape_functions
from gpusolver.solvers.dg.reference import basis, element_rule, quadrature_strength

if TYPE_CHECKING:
    from gpusolver.solvers.dg.discretisation import DGDiscretisation

#: Threads per block (``__launch_bounds__(128)`` in the kernels).
BLOCK = 128


@dataclass(frozen=True)
class HaloSplit:
    """Which elements and faces of a part's mesh (own elements first, then the halo's)
    its right-hand side reaches before the halo is in (:meth:`FusedDG.split_at_halo`).

    Attributes
    ----------
    n_own : int
        Elements ``[0, n_own)`` are the part's own, the rest its halo.
    deep : numpy.ndarray
        Per own element, True if its volume term reads no halo state: every own element
        in Euler; in Navier-Stokes those with no face on a halo element (the others'
        liftings read the halo).
    deep_faces, own_faces, interface_end : int
        Interior faces ``[0, deep_faces)`` join two deep elements, ``[0, own_faces)``
        two own ones, ``[own_faces, interface_end)`` an own and a halo element; the rest
        join two halo elements and are left out.
    """

    n_own: int
    deep: np.ndarray
    deep_faces: int
    own_faces: int
    interface_end: int


class FusedDG:
    """:meth:`DGDiscretisation.rate` of one discretisation's layout in kernels, on
    ``backend``.

    Parameters
    ----------
    discretisation : DGDiscretisation
        Its layout, gas, boundary conditions and numerical flux.
    backend : Backend
        ``cupy`` (CUDA) or ``numpy`` (the kernels compiled for the CPU).
    dtype : numpy dtype
        float64 or float32.
    optimised : bool
        On numpy, compile the kernels at full optimisation (a CPU peer for benchmarks).
    """

    def __init__(self, discretisation: DGDiscretisation, backend: Backend, dtype=np.float64,
                 optimised: bool = False):
        solver = self.discretisation = discretisation
        lay = self.layout = solver.layout
        self.backend, self.xp = backend, backend.xp
        self.dtype = np.dtype(dtype)
        real, m, nqf = real_type(self.dtype), lay.n_modes, len(lay.face_weights)
        strength = quadrature_strength(lay.degree)

        def device(array, kind=None):
            return backend.asarray(np.ascontiguousarray(array), kind or self.dtype)

        self.viscous = solver.viscous is not None
        viscous = "true" if self.viscous else "false"
        #: Per element group: its volume kernel, reference tables and shape functions.
        self._group_kernels = []
        names = {}
        for g in lay.groups:
            rule = element_rule(g.shape, strength)
            k = g.nodes.shape[1]
            name = f"volume_kernel<{real}, {k}, {m}, {len(rule.weights)}, {viscous}>"
            names[g.shape, k] = name
            self._group_kernels.append(
                (name, device(g.values), device(basis(g.shape, lay.degree).gradients(
                    rule.points)), device(rule.weights),
                 device(shape_functions(g.shape, rule.points, k)[1])))
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
        self.stage_name = f"stage_kernel<{real}>"
        self.time_step_name = f"time_step_kernel<{real}, {m}, {viscous}>"
        expressions = (*names.values(), self.face_name, self.trace_name, self.mass_name,
                       self.stage_name, self.time_step_name,
                       *([self.lifting_name] if self.viscous else []))
        self.kernels = backend.kernels("gpusolver.solvers.dg", "kernels/dg.cu", expressions,
                                       optimised)
        ni = lay.n_interior
        side_scale = np.zeros((2, len(lay.left)))  # each face's elements' scales
        side_scale[0] = scale[lay.left]
        side_scale[1, :ni] = scale[lay.right[:ni]]
        curved = lay.curved_faces
        curved_index = np.full(len(lay.left), -1)
        curved_index[curved] = np.arange(len(curved))
        curved_table = np.concatenate([lay.point_normals[:, :, curved],
                                       lay.line_jacobian[None, :, curved]])
        #: Where the faces are: normals, lengths, and the curved faces' points' own.
        self.face_geometry = (device(lay.normal), device(lay.area),
                              device(curved_index, np.int32),
                              device(np.append(curved_table, 0.0)), np.int32(len(curved)))
        self.faces = (device(lay.left, np.int32), device(np.append(lay.right[:ni], 0), np.int32),
                      device(lay.trace_left, np.int32),
                      device(np.append(lay.trace_right, 0), np.int32), device(lay.trace_table),
                      device(side_scale), device(lay.face_weights))
        code, value, self.array_markers = solver.kernel_conditions()
        self.n_boundary = len(lay.left) - ni
        #: The inside and ghost primitive states at the boundary faces' Gauss points.
        self.traces = (self.xp.empty((4, nqf, self.n_boundary), self.dtype),
                       self.xp.empty((4, nqf, self.n_boundary), self.dtype))
        self.conditions = (device(code, np.int32), device(value),
                           device(lay.point_normals[:, :, ni:]))
        gas = solver.gas
        self.gamma = self.dtype.type(gas.gamma)
        self.transport = (self.dtype.type(gas.mu_ref),
                          self.dtype.type(SUTHERLAND_K / gas.temperature_ref),
                          self.dtype.type(gas.prandtl), np.int32(gas.viscosity_law == "constant"))
        #: What the volume and face kernels read of the BR2 terms (null pointers for Euler).
        self.volume_viscous, self.face_viscous = (NULL,), (NULL, NULL, NULL, NULL)
        if self.viscous:
            self._lay_out_viscous(device, listed, solver.viscous)
        real_of = self.dtype.type
        #: What the time-step kernel reads (DGDiscretisation.local_time_steps' terms).
        self.time_step_arrays = (device(lay.mean_weights), device(lay.size),
                                 device(lay.diffusion_size))
        order, diffusion = solver.time_step_factors()
        self.time_step_scalars = (real_of(solver.cfl), real_of(order), self.gamma,
                                  real_of(diffusion))
        self.boundary_flux = None
        n, ni = lay.n_elements, lay.n_interior
        self.split_at_halo(HaloSplit(n, np.ones(n, dtype=bool), ni, ni, ni))  # no halo

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
        self.face_lifting = self.xp.empty((2 * 4 * 2 * len(lay.face_weights), nf), self.dtype)
        self.volume_viscous = (self.lifting,)
        self.face_viscous = (device(lay.left_trace_gradients), device(lay.right_trace_gradients),
                             self.face_lifting, self.conditions[0])

    def split_at_halo(self, split: HaloSplit) -> None:
        """Compute a part's right-hand side in two pieces, :meth:`rate_before` (what reads
        no halo state: it may run while the halo is in flight) and :meth:`rate_after`;
        only the own elements' rows are computed, the halo's are zero."""
        lay = self.layout
        ni, nf, n = lay.n_interior, len(lay.left), lay.n_elements
        deep = np.zeros(n, dtype=bool)
        deep[:split.n_own] = split.deep
        near = np.zeros(n, dtype=bool)
        near[:split.n_own] = ~split.deep
        boundary, interface = (ni, nf), (split.deep_faces, split.interface_end)
        # a face's flux follows the volume terms of its elements (which write their rows):
        # boundary faces wait for the near elements' (each of their sides is own or unread)
        if near.any():
            faces = [(0, split.deep_faces)], [interface, boundary]
        else:
            faces = [(0, split.deep_faces), boundary], [interface]
        self._faces = tuple(_ranges(piece) for piece in faces)
        # an own element's liftings, all before its volume term: of its faces
        self._liftings = (_ranges([(0, split.own_faces), boundary]),
                          _ranges([(split.own_faces, split.interface_end)]))
        self._volumes = (self._volume_launches(deep), self._volume_launches(near))
        self.n_own = split.n_own

    def _volume_launches(self, chosen: np.ndarray) -> list[tuple]:
        """The volume kernels' arguments over the elements where ``chosen`` (per element)
        is True: per element group with any, its kernel, elements, nodes and tables."""
        launches = []
        for g, (name, *tables) in zip(self.layout.groups, self._group_kernels, strict=True):
            inside = chosen[g.elements]
            if inside.any():
                nodes = g.nodes[inside].transpose(1, 2, 0).reshape(2 * g.nodes.shape[1], -1)
                launches.append((name, self.backend.asarray(g.elements[inside], np.int32),
                                 self.backend.asarray(np.ascontiguousarray(nodes), self.dtype),
                                 *tables))
        return launches

    def rate(self, u):
        """``dU/dt`` of modal coefficients ``u`` ``(n_vars, n_modes, n_elements)``; sets
        :attr:`boundary_flux` (each boundary face's flux, integrated) as the NumPy rate
        does."""
        u = self.backend.asarray(u, self.dtype)
        rhs = self.xp.empty_like(u)
        self.boundary_flux = self.new_boundary_flux()
        self.rate_into(u, rhs, self.boundary_flux)
        return rhs

    def new_boundary_flux(self):
        """An array for the boundary faces' integrated fluxes ``(n_vars, n_boundary)``."""
        return self.xp.empty((4, self.n_boundary), self.dtype)

    def local_time_steps_into(self, u, dt) -> None:
        """Each element's stable step at the CFL number, as
        :meth:`DGDiscretisation.local_time_steps`, into ``dt`` (no allocation)."""
        n = self.layout.n_elements
        mean_weights, size, diffusion_size = self.time_step_arrays
        self.kernels[self.time_step_name](grid(n, BLOCK), (BLOCK,),
                                          (np.int32(n), mean_weights, u, size, diffusion_size,
                                           *self.time_step_scalars, *self.transport, dt))

    def rate_into(self, u, rhs, boundary_flux) -> None:
        """Launch the kernels of :meth:`rate` into given buffers, allocating nothing (no
        array code either unless some boundary is exact or periodic: what a CUDA graph
        records)."""
        self.rate_before(u, rhs, boundary_flux)
        self.rate_after(u, rhs, boundary_flux)

    def rate_before(self, u, rhs, boundary_flux) -> None:
        """The first piece of :meth:`rate_into`: the boundary states, and the liftings,
        volume terms and face fluxes that read no halo state (the whole right-hand side
        but the mass matrices unless :meth:`split_at_halo` was called)."""
        lay = self.layout
        n, nf, ni = lay.n_elements, len(lay.left), lay.n_interior
        i32 = np.int32
        left, trace_left, tables = self.faces[0], self.faces[2], self.faces[4]
        inside, ghost = self.traces
        self.kernels[self.trace_name](grid(nf - ni, BLOCK), (BLOCK,),
                                      (i32(nf), i32(ni), i32(n), left, trace_left, tables,
                                       *self.conditions, u, inside, ghost, self.gamma))
        for name in self.array_markers:
            self.discretisation.marker_ghost_states(inside, ghost, name)
        if self.viscous:
            self.lifting.fill(0)
        self._launch(u, rhs, boundary_flux, 0)

    def rate_after(self, u, rhs, boundary_flux) -> None:
        """The second piece of :meth:`rate_into` (after :meth:`rate_before`, the halo
        current): the rest of the liftings, volume terms and face fluxes, the mass
        matrices, and zero rows for the halo."""
        self._launch(u, rhs, boundary_flux, 1)
        listed, inverse_mass = self.full_mass
        n = self.layout.n_elements
        if len(listed):
            self.kernels[self.mass_name](grid(len(listed), BLOCK), (BLOCK,),
                                         (np.int32(len(listed)), np.int32(n), listed,
                                          inverse_mass, rhs))
        if self.n_own < n:
            rhs[..., self.n_own:] = 0

    def _launch(self, u, rhs, boundary_flux, piece: int) -> None:
        """The liftings, volume terms and face fluxes of piece 0 (before) or 1 (after)."""
        lay = self.layout
        n, nf, ni = lay.n_elements, len(lay.left), lay.n_interior
        i32 = np.int32
        left, right, trace_left, trace_right, tables, side_scale, face_weights = self.faces
        listed, inverse_mass = self.full_mass
        ghost = self.traces[1]
        if self.viscous:
            penalty, mass_index = self.lifting_arrays
            for first, end in self._liftings[piece]:
                self.kernels[self.lifting_name](
                    grid(end - first, BLOCK), (BLOCK,),
                    (i32(first), i32(end), i32(nf), i32(ni), i32(n), left, right, trace_left,
                     trace_right, tables, *self.face_geometry, face_weights, penalty,
                     mass_index, self.scale, i32(len(listed)), inverse_mass, u, ghost,
                     self.lifting, self.face_lifting, self.gamma))
        for name, elements, nodes, values, gradients, weights, shapes in self._volumes[piece]:
            self.kernels[name](grid(len(elements), BLOCK), (BLOCK,),
                               (i32(len(elements)), i32(n), elements, nodes, values,
                                gradients, weights, shapes, self.scale, u, rhs, self.gamma,
                                *self.volume_viscous, *self.transport))
        for first, end in self._faces[piece]:
            self.kernels[self.face_name](grid(end - first, BLOCK), (BLOCK,),
                                         (i32(first), i32(end), i32(nf), i32(ni), i32(n), left,
                                          right, trace_left, trace_right, tables,
                                          *self.face_geometry, side_scale, face_weights, u,
                                          ghost, rhs, boundary_flux, self.gamma,
                                          *self.face_viscous, *self.transport))


def _ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``ranges`` (in order) without the empty ones, touching ones merged."""
    merged: list[tuple[int, int]] = []
    for first, end in ranges:
        if end <= first:
            continue
        if merged and merged[-1][1] == first:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((first, end))
    return tuple(merged)


class FusedDGSteps:
    """The buffers (made once) and the update kernel of one :class:`FusedDG`'s explicit
    Runge-Kutta stages.

    Parameters
    ----------
    fused : FusedDG
    stages : tuple of Stage
        The method (:data:`gpusolver.integrators.explicit.TABLEAUX`).
    graphs : bool
        Record graphs on its stream (GPU only; never where a boundary's ghost states are
        array code); the parts' steps record their own.
    """

    def __init__(self, fused: FusedDG, stages, graphs: bool = True):
        self.fused, self.stages, xp = fused, stages, fused.xp
        lay, dtype = fused.layout, fused.dtype
        shape = (4, lay.n_modes, lay.n_elements)
        self.states = (xp.empty(shape, dtype), xp.empty(shape, dtype))
        self.stage_state, self.total = xp.empty(shape, dtype), xp.empty(shape, dtype)
        #: The rate of the step's first stage (at its start), then of the others.
        self.first_rate, self.later_rate = xp.empty(shape, dtype), xp.empty(shape, dtype)
        #: Each element's time step.
        self.dt = xp.empty(lay.n_elements, dtype)
        #: The boundary faces' fluxes of the first stage (wall forces), then the others'.
        self.wall_flux = xp.empty((4, fused.n_boundary), dtype)
        self._other_flux = xp.empty_like(self.wall_flux)
        self.kernel = fused.kernels[fused.stage_name]
        self.graphs = StepGraphs(fused.backend, graphs and not fused.array_markers)
        self._dt_value = None

    def begin(self, u, dt) -> tuple:
        """Start a step from ``u`` with time step ``dt`` (a float, each element's on the
        backend, or None: each element's local step, computed in the step's kernels): its
        start and output buffers (:func:`alternate`)."""
        u0, out = alternate(self.states, u)
        local = dt is None
        with self.graphs.stream:
            if not local and (np.ndim(dt) or dt != self._dt_value):
                self.dt[...] = dt
            self._dt_value = None if local or np.ndim(dt) else dt
        return u0, out

    def stage_buffers(self, i: int) -> tuple:
        """Stage ``i``'s rate and boundary flux buffers; sets the discretisation's stage time
        (exact boundaries, array code that no graph records, read it)."""
        first = i == 0
        self.fused.discretisation.stage_offset = (0.0 if self._dt_value is None
                                          else self.stages[i].time * self._dt_value)
        return ((self.first_rate, self.wall_flux) if first
                else (self.later_rate, self._other_flux))

    def update(self, i: int, u0, current, out):
        """Stage ``i``'s update from its rate (:meth:`stage_buffers`); returns the buffer
        it wrote (``out`` after the last stage)."""
        stage, first, last = self.stages[i], i == 0, i == len(self.stages) - 1
        f, i32, real = self.fused, np.int32, self.fused.dtype.type
        rate = self.first_rate if first else self.later_rate
        target = out if last else self.stage_state
        self.kernel(grid(out.size, BLOCK), (BLOCK,),
                    (i32(out.size), i32(f.layout.n_elements), u0, current, rate, self.total,
                     target, self.dt, real(stage.base), real(stage.current),
                     real(stage.rate), real(stage.sum_weight), real(stage.from_sum),
                     i32(first)))
        if last:
            f.discretisation.stage_offset = 0.0
        return target
