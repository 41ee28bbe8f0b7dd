"""The finite-volume residual and explicit Runge-Kutta steps as fused CUDA kernels.

Three kernels of ``kernels/residual.cu`` replace the array code of
:class:`~gpusolver.solvers.fv.discretisation.Discretisation` on the CuPy backend:
cell gradients with the limiter (one thread per cell, gathering its face slots), the
face flux (reconstruction, ghost states, Riemann flux, laminar viscous flux; one thread
per face) and the
cell update (the sum of a cell's face fluxes, and one Runge-Kutta stage with its local
time step, residual norms and divergence check). A whole explicit step can be
recorded once as a CUDA graph and replayed, so that small meshes are not bound by
launch overhead. The discretisation's array code stays the reference that the GPU
tests compare with.

Accumulation of face fluxes follows the solver's strategy: ``reduce`` stores the
fluxes per face and each cell gathers its own (deterministic), ``atomic`` adds them
into the cells with atomics, ``colour`` adds them one face colour at a time with
plain updates (boundary faces with atomics).

On the numpy backend the same kernels run compiled as C++ for the CPU
(:mod:`gpusolver.backends.host`): how CI tests them without a GPU.
"""

from __future__ import annotations

import itertools

import numpy as np

from gpusolver.backends.cuda import NULL, real_type
from gpusolver.backends.graphs import StepGraphs, alternate
from gpusolver.backends.ids import Accumulation, Gradient, Limiter
from gpusolver.layout.geometry import FVGeometry
from gpusolver.layout.slots import face_slots
from gpusolver.physics.boundary import CONDITION_CODES, kernel_condition
from gpusolver.physics.fluxes import FLUX_CODES
from gpusolver.physics.gas import PRANDTL_TURBULENT, SUTHERLAND_K

GRADIENT_CODES = {"least-squares": Gradient.LEAST_SQUARES, "green-gauss": Gradient.GREEN_GAUSS}
#: The gradient kernel's JST cell pass instead.
JST_DIFFERENCES = Gradient.JST_DIFFERENCES
UNLIMITED, VENKATAKRISHNAN, FROZEN, RATCHET = Limiter
STORE, ATOMIC, PLAIN = Accumulation
#: Solver strategy -> how the face kernel accumulates.
ACCUMULATION = {"reduce": STORE, "atomic": ATOMIC, "colour": PLAIN}

#: Threads per block of the residual's kernels unless :attr:`FusedResidual.block` says
#: otherwise (``[run] strategy = "auto"`` times others).
BLOCK = 256

SOURCE = "kernels/residual.cu"


def unsupported(discretisation) -> str | None:
    """Why the fused kernels cannot run ``discretisation`` (None: they can)."""
    d = discretisation
    if d.backend.name != "cupy":
        return "the fused kernels run on the cupy backend only"
    if d.accumulator_name not in ACCUMULATION:
        return f"strategy {d.accumulator_name!r} has no fused kernels"
    missing = [b.spec.condition.name for b in d.boundaries
               if b.spec.condition.name not in CONDITION_CODES]
    if missing:
        return f"boundary condition {missing[0]!r} has no fused kernel yet"
    return None


def limiter_input(discretisation) -> tuple[object, int]:
    """What the gradient kernel does with the limiter: ``(array, mode)``.

    ``FROZEN``: use the discretisation's frozen values; ``RATCHET``: cap the computed
    values by its ceiling and store them there; ``VENKATAKRISHNAN``: compute them
    (array None: into a buffer of the caller's).
    """
    d = discretisation
    if d.frozen_limiter is not None:
        return d.frozen_limiter, FROZEN
    if d.limiter_ceiling is not None:
        return d.limiter_ceiling, RATCHET
    return None, VENKATAKRISHNAN


def _boundary_values(d, host: FVGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Condition code, values ``(n_vars, n_boundary)`` and periodic partner per boundary face."""
    ni, nb = host.n_interior, host.n_faces - host.n_interior
    code = np.zeros(nb, dtype=np.int32)
    value = np.zeros((d.gas.n_vars, nb))
    for faces, spec, _, _ in d.boundaries:
        local = slice(faces.start - ni, faces.stop - ni)
        code[local], value[:, local] = kernel_condition(d.gas, spec)
    return code, value, d.partner_faces().astype(np.int32)


class FusedResidual:
    """The residual of one :class:`Discretisation` on the GPU in three kernels.

    Parameters
    ----------
    discretisation : Discretisation
        See :func:`unsupported`; on the numpy backend the kernels run on the
        CPU, compiled as C++.
    host : FVGeometry
        The same geometry as NumPy arrays.
    strategy : str
        ``reduce``, ``atomic`` or ``colour``.
    """

    def __init__(self, discretisation, host: FVGeometry, strategy: str):
        d = discretisation
        self.d, self.xp, self.backend = d, d.backend.xp, d.backend
        xp = self.xp
        self.dtype = d.dtype
        self.n_cells, self.n_faces, self.n_interior = host.n_cells, host.n_faces, host.n_interior
        self.n_vars, self.dim = d.gas.n_vars, host.dim
        #: The update kernel advances cells ``[0, n_active)`` (a part's own cells; the
        #: halo's states come from their owners) and sums their residual norms.
        self.n_active = host.n_cells
        self.gamma = self.dtype.type(d.gas.gamma)
        self.accumulation = ACCUMULATION[strategy]
        #: Threads per block of the gradients, flux and update kernels.
        self.block = BLOCK
        g = d.geometry
        code, value, partner = _boundary_values(d, host)
        self.bc_value = d.backend.asarray(value, dtype=self.dtype)
        self._vortex = [(slice(b.faces.start - host.n_interior, b.faces.stop - host.n_interior),
                         b.outside) for b in d.boundaries if b.outside is not None]
        asarray = d.backend.asarray  # C-contiguous: what the kernels index
        self.faces = (asarray(host.left, dtype=np.int32), asarray(host.right, dtype=np.int32),
                      asarray(g.normal), asarray(g.area), asarray(d.offset_left),
                      asarray(d.offset_right), asarray(code), self.bc_value, asarray(partner),
                      np.int32(self.n_faces), np.int32(self.n_interior))
        slots = face_slots(host.left, host.right, host.n_cells, host.n_interior, self.xp)
        self.width = np.int32(slots.shape[1])
        self.slots = asarray(slots.T, dtype=np.int32)
        self.volume = asarray(g.volume)
        self.epsilon2 = asarray(d.epsilon2)
        self.ranges = [(0, self.n_faces, self.accumulation)]
        if self.accumulation == PLAIN:
            self.ranges = [(int(a), int(b), PLAIN)
                           for a, b in itertools.pairwise(host.interior_colours)]
            self.ranges.append((self.n_interior, self.n_faces, ATOMIC))
        scheme = d.scheme
        self.order = scheme.order
        #: Venkatakrishnan's limiter is computed (second order only).
        self.limited = scheme.cell_limited
        #: Van Albada's limiter is applied per face in the face kernel.
        self.face_limited = scheme.limiter == "van-albada" and self.order == 2
        self.viscous = d.viscous
        #: The JST scheme: its cell pass (Laplacian, sensor, neighbour count, spectral
        #: radii's sum) fills :attr:`gradient` and the face kernel reads it.
        self.jst = scheme.jst
        #: The gradient kernel runs (gradients or the JST cell pass).
        self.cell_pass = d.needs_gradient or self.jst
        gradient_shape = (self.n_vars, self.dim, self.n_cells)
        least_squares = d.needs_gradient and scheme.gradient == "least-squares"
        self.coefficients = ((asarray(d.gradient.coef_left), asarray(d.gradient.coef_right))
                             if least_squares else (NULL, NULL))
        # limited gradients (reconstruction), or JST's cell pass; unlimited gradients
        # (viscous flux)
        self.gradient = xp.empty((self.n_vars + 3, self.n_cells) if self.jst
                                 else gradient_shape if self.order == 2 else 1, self.dtype)
        self.raw_gradient = xp.empty(gradient_shape, self.dtype) if self.viscous else NULL
        gas = d.gas
        self._viscous_arrays = ((self.raw_gradient, asarray(d.tangent),
                                 asarray(d.inverse_length)) if self.viscous
                                else (NULL, NULL, NULL))
        self._viscous_laws = tuple(self.dtype.type(x) for x in (
            gas.mu_ref, SUTHERLAND_K / gas.temperature_ref, gas.prandtl, PRANDTL_TURBULENT))
        #: Each face's eddy viscosity, the discretisation's copied in before a residual
        #: or a step (:meth:`load_eddy_viscosity`; None: laminar). One buffer for the whole
        #: run, so that recorded CUDA graphs read each step's values.
        self.eddy = None
        self.jst_coefficients = (self.dtype.type(scheme.jst_k2), self.dtype.type(scheme.jst_k4),
                                 self.dtype.type(scheme.stretching_power))
        #: Face wave speeds times area: convective, then (viscous flow) viscous.
        self.speed = xp.empty((2 if self.viscous else 1) * self.n_faces, self.dtype)
        #: The factor of the viscous speed in the local time step (0: inviscid).
        self.viscous_factor = self.dtype.type(d.viscous_factor if self.viscous else 0.0)
        # where face fluxes go: per face (gathered by the cell kernel), or per cell
        shape = (self.n_vars, self.n_faces if self.accumulation == STORE else self.n_cells)
        self.accumulated = xp.empty(shape, self.dtype)
        self._kernels = self._compile(scheme)
        self._jacobian_kernel = None  # compiled on the first :meth:`face_jacobians`

    # ------------------------------------------------------------------ kernels
    def _expressions(self, scheme) -> dict[str, str]:
        real, dim = real_type(self.dtype), self.dim
        names = {"update": f"update_kernel<{real}, {dim}, "
                           f"{STORE if self.accumulation == STORE else ATOMIC}>"}
        viscous = "true" if self.viscous else "false"
        face_limited = "true" if self.face_limited else "false"
        for accumulation in {a for *_, a in self.ranges}:
            names[f"flux{accumulation}"] = (f"flux_kernel<{real}, {dim}, "
                                            f"{FLUX_CODES[scheme.flux]}, {self.order}, "
                                            f"{accumulation}, {viscous}, {face_limited}>")
        if self.jst:
            names[f"gradients{UNLIMITED}"] = (f"gradients_kernel<{real}, {dim}, "
                                              f"{JST_DIFFERENCES}, {UNLIMITED}>")
        elif self.d.needs_gradient:
            gradient = GRADIENT_CODES[scheme.gradient]
            for limiter in ((VENKATAKRISHNAN, FROZEN, RATCHET) if self.limited
                            else (UNLIMITED,)):
                names[f"gradients{limiter}"] = (f"gradients_kernel<{real}, {dim}, {gradient}, "
                                                f"{limiter}>")
        return names

    def _compile(self, scheme) -> dict:
        names = self._expressions(scheme)
        compiled = self.backend.kernels(__package__, SOURCE, tuple(sorted(names.values())))
        return {key: compiled[expression] for key, expression in names.items()}

    def _blocks(self, n: int) -> tuple[int]:
        return (max(1, (n + self.block - 1) // self.block),)

    def update_far_field(self) -> None:
        """Refresh the outside states of vortex-corrected far fields (current circulation)."""
        for local, outside in self._vortex:
            self.bc_value[:, local] = outside.primitive(self.d.circulation)

    def eddy_buffer(self):
        """:attr:`eddy`, made on first use (where a turbulence model's kernels write)."""
        if self.eddy is None:
            self.eddy = self.xp.empty(self.n_faces, self.dtype)
        return self.eddy

    def load_eddy_viscosity(self, eddy=None) -> bool:
        """Copy the discretisation's eddy viscosity (``d.eddy_viscosity``, set by a
        turbulence model each step) into :attr:`eddy`, on the current stream, unless it
        is that buffer; False for laminar flow (nothing to copy). ``eddy``: the next face
        pass writes it there (see :meth:`face_pass`), which the discretisation then holds."""
        if eddy is not None:
            self.d.eddy_viscosity = self.eddy_buffer()
        if self.d.eddy_viscosity is None:
            return False
        if self.d.eddy_viscosity is not self.eddy_buffer():
            self.eddy[...] = self.d.eddy_viscosity
        return True

    @property
    def viscosity(self) -> tuple:
        """The flux kernel's viscous arguments: the unlimited gradients, the faces'
        centroid-to-centroid directions and inverse lengths, the eddy viscosity (NULL:
        laminar) and the laws' constants."""
        gradient, tangent, inverse_length = self._viscous_arrays
        return (gradient, tangent, inverse_length, NULL if self.eddy is None else self.eddy,
                *self._viscous_laws)

    def face_pass(self, u, phi, mode: int, boundary_flux, speed: bool, mass_flux=NULL,
                  eddy=None):
        """Gradients (order 2) and face fluxes of ``u``; returns where they accumulate.

        ``phi`` receives the limiter values, or holds the frozen ones or the ceiling of
        the new ones (``mode``: see :func:`limiter_input`); ``boundary_flux``
        ``(n_vars, n_boundary)`` receives the boundary faces' fluxes (or NULL); ``speed``:
        also store each face's wave speeds times area in :attr:`speed`; ``mass_flux``
        ``(n_faces,)`` receives each face's mass flux times area (or NULL); ``eddy``:
        called with ``u`` between the gradients and the fluxes, it writes each face's eddy
        viscosity into :attr:`eddy` (a turbulence model's
        :meth:`~gpusolver.solvers.fv.fused_turbulence.FusedScalarSteps.eddy_pass`, which
        reads the unlimited gradients just taken), or None.
        """
        self.gradients(u, phi, mode, 0, self.n_cells)
        if eddy is not None:
            eddy(u)
        self.clear()
        for first, last, accumulation in self.ranges:
            self.fluxes(u, boundary_flux, speed, first, last, accumulation, mass_flux)
        return self.accumulated

    def gradients(self, u, phi, mode: int, first: int, last: int) -> None:
        """The gradients (and limiter: see :meth:`face_pass`) of cells ``[first, last)``;
        nothing when the scheme needs none."""
        if not self.cell_pass or last <= first:
            return
        limiter = mode if self.limited else UNLIMITED
        # first order (viscous): only the unlimited gradients
        outputs = ((self.gradient, self.raw_gradient) if self.order == 2 or self.jst
                   else (self.raw_gradient, NULL))
        self._kernels[f"gradients{limiter}"](
            self._blocks(last - first), (self.block,),
            (u, np.int32(self.n_cells), *self.faces, self.slots, self.width,
             *self.coefficients, self.volume, self.epsilon2, phi, *outputs, self.gamma,
             np.int32(first), np.int32(last)))

    def clear(self) -> None:
        """Zero the cell sums that face fluxes are added into (a no-op when each face
        stores its own)."""
        if self.accumulation != STORE:
            self.accumulated.fill(0)

    def fluxes(self, u, boundary_flux, speed: bool, first: int, last: int,
               accumulation: int | None = None, mass_flux=NULL) -> None:
        """The fluxes of faces ``[first, last)`` into :attr:`accumulated` (see
        :meth:`face_pass`); ``accumulation``: by default the strategy's (plain updates
        need a range of one face colour)."""
        accumulation = self.accumulation if accumulation is None else accumulation
        if last <= first:
            return
        self._kernels[f"flux{accumulation}"](
            self._blocks(last - first), (self.block,),
            (u, self.gradient, self.epsilon2, np.int32(self.n_cells), *self.faces,
             *self.viscosity, np.int32(first), np.int32(last), self.accumulated,
             boundary_flux, mass_flux, self.speed if speed else NULL, self.gamma,
             *self.jst_coefficients))

    def update(self, source, residual_out=None, stage=None, implicit=None, **arrays) -> None:
        """Launch the cell kernel: residual into ``residual_out`` and/or one RK stage.

        ``stage``: ``(Stage, first, local_dt, dt_stride)``; ``implicit``: ``(diagonal,
        omega, viscous_factor)`` of the LU-SGS diagonal; ``arrays``: ``cfl`` (one float64
        on the device), ``dt``, ``u0``, ``u``, ``total``, ``u_out``, ``squares``,
        ``bad_cell`` (NULL when absent).
        """
        rk, first, local_dt, dt_stride = stage if stage is not None else (None, 0, 0, 0)
        coefficients = ((rk.base, rk.current, rk.rate, rk.sum_weight, rk.from_sum)
                        if rk is not None else (0.0,) * 5)
        scalars = ([np.float64(x) for x in coefficients]
                   + [np.int32(x) for x in (first, local_dt, dt_stride)])
        diagonal, omega, implicit_factor = implicit if implicit is not None else (NULL, 0, 0)
        pointers = [arrays.get(name, NULL) for name in ("dt", "u0", "u", "total", "u_out",
                                                        "squares", "bad_cell", "relaxed")]
        real = self.dtype.type
        self._kernels["update"](
            self._blocks(self.n_active), (self.block,),
            (np.int32(self.n_cells), np.int32(self.n_faces), self.slots, self.width, source,
             self.volume, NULL if residual_out is None else residual_out, *scalars,
             arrays.get("cfl", NULL), self.speed, self.viscous_factor, diagonal,
             real(omega), real(implicit_factor), *pointers, self.gamma,
             np.int32(self.n_active)))

    def minimum_bytes(self) -> int:
        """Bytes one residual must move if each kernel reads its inputs and writes its
        outputs once (neighbour states from cache): the bandwidth model of the benchmarks.
        """
        nv, dim, nc, nf, ni = self.n_vars, self.dim, self.n_cells, self.n_faces, self.n_interior
        real, index = self.dtype.itemsize, 4
        slots = index * int(self.width) * nc
        faces = 2 * index * nf + (dim + 1) * real * nf + 2 * dim * real * nf  # cells, n, A, offsets
        total = faces + nv * real * nc + nv * real * (nf - ni)  # face kernel: U, boundary flux
        if self.accumulation == STORE:
            total += 2 * nv * real * nf + slots  # stored fluxes, written and gathered
        else:
            total += 2 * nv * real * nc  # residual zeroed and accumulated
        total += nv * real * nc  # the residual written
        if self.order == 2:
            gradient = nv * dim * real * nc
            # gradient kernel: U, slots, cells, coefficients, offsets, epsilon; limited
            # gradient and limiter values written; the face kernel reads the gradient back
            total += (nv * real * nc + slots + 2 * index * nf + 4 * dim * real * nf
                      + 2 * nv * real * nc + 2 * gradient + nv * real * nc)
        if self.jst:
            # cell pass: U, slots, cells; Laplacian, sensor and count written and read back
            total += nv * real * nc + slots + 2 * index * nf + 2 * (nv + 2) * real * nc
        return total

    def face_jacobians(self, u):
        """``J_L, J_R`` ``(n_vars, n_vars, n_faces)``: the first-order flux's Jacobians
        times area, as :func:`~gpusolver.solvers.fv.jacobian.face_jacobians` takes them
        (the same one-sided differences) in one kernel (``J_R`` zero on the boundary)."""
        xp, d = self.xp, self.d
        if self._jacobian_kernel is None:
            name = (f"face_jacobian_kernel<{real_type(self.dtype)}, {self.dim}, "
                    f"{FLUX_CODES[d.scheme.flux]}>")
            self._jacobian_kernel = self.backend.kernels(__package__, SOURCE, (name,))[name]
        self.update_far_field()
        shape = (self.n_vars, self.n_vars, self.n_faces)
        jac_left, jac_right = xp.empty(shape, self.dtype), xp.zeros(shape, self.dtype)
        epsilon = self.dtype.type(np.sqrt(np.finfo(self.dtype).eps))
        self._jacobian_kernel(self._blocks(self.n_faces), (self.block,), (
            self.backend.asarray(u), np.int32(self.n_cells), *self.faces, self.gamma, epsilon,
            jac_left, jac_right))
        return jac_left, jac_right

    # ------------------------------------------------------------------ residual
    def residual(self, u, eddy=None):
        """``R(u)``: net flux into every cell, ``(n_vars, n_cells)``.

        Sets the discretisation's ``boundary_flux`` and ``limiter_values`` as its array
        code does (fresh arrays, so that callers may keep them); with a turbulence model's
        eddy viscosity (``d.eddy_viscosity``, or taken at ``u`` by ``eddy`` as
        :meth:`face_pass` takes it), reads it and sets ``mass_flux`` too.
        """
        xp, d = self.xp, self.d
        u = self.backend.asarray(u)  # kernels index C-ordered arrays
        self.update_far_field()
        phi, mode = limiter_input(d)
        phi = (xp.empty((self.n_vars, self.n_cells), self.dtype) if phi is None
               else self.backend.asarray(phi))
        boundary_flux = xp.empty((self.n_vars, self.n_faces - self.n_interior), self.dtype)
        turbulent = self.load_eddy_viscosity(eddy)
        mass_flux = xp.empty(self.n_faces, self.dtype) if turbulent else NULL
        source = self.face_pass(u, phi, mode, boundary_flux, speed=False, mass_flux=mass_flux,
                                eddy=eddy)
        out = xp.empty((self.n_vars, self.n_cells), self.dtype)
        self.update(source, residual_out=out)
        d.boundary_flux = boundary_flux
        if turbulent:
            d.mass_flux = mass_flux
        if self.limited:
            d.limiter_values = phi
        return out


#: ``bad_cell`` when every cell stayed valid.
NO_BAD_CELL = np.iinfo(np.int32).max


class FusedSteps:
    """What explicit and implicit steps in the fused kernels share: two state buffers
    that steps alternate between, the CFL number on the device, the residual norms and
    divergence check read back once per step, and the steps' CUDA graphs.

    Subclasses launch one step's kernels in :meth:`_launches`.

    Parameters
    ----------
    fused : FusedResidual
    graphs : bool
        Record each kind of step as a CUDA graph on its second use and replay it after
        (one launch per step); GPU only.
    """

    def __init__(self, fused: FusedResidual, graphs: bool = True):
        xp = self.xp = fused.xp
        self.fused = fused
        shape, dtype = (fused.n_vars, fused.n_cells), fused.dtype
        self.states = (xp.empty(shape, dtype), xp.empty(shape, dtype))
        self.dt = xp.empty(fused.n_cells, dtype)
        self.cfl = xp.empty(1, np.float64)
        self.phi = xp.ones(shape, dtype)
        # what a step reports, read back in one transfer (:meth:`report`): the sums of the
        # squared rates per variable, then (in the last eight bytes) the first bad cell
        # and the number of cells whose update was relaxed
        self._report = xp.zeros(fused.n_vars + 1, np.float64)
        self.squares = self._report[:fused.n_vars]
        self.bad_cell, self.relaxed = (self._report[fused.n_vars:].view(np.int32)[k:k + 1]
                                       for k in (0, 1))
        self.reset_report()
        self.boundary_flux = xp.empty((fused.n_vars, fused.n_faces - fused.n_interior), dtype)
        self.graphs = StepGraphs(fused.backend, graphs)
        #: Cells whose update the last step relaxed (explicit steps: in each stage).
        self.relaxed_cells = 0
        #: The CFL number of the last step (of its local time steps :attr:`dt`).
        self.step_cfl = 0.0

    def reset_report(self) -> None:
        """Zero the residual sums and the relaxed cells, and clear the bad cell (before a
        step's first kernel)."""
        self._report.fill(0)
        self.bad_cell.fill(NO_BAD_CELL)

    def report(self) -> tuple[np.ndarray, int, int]:
        """The last step's sums of the squared rates per variable, its first bad cell
        (:data:`NO_BAD_CELL`: none) and its number of relaxed cells, in
        one transfer on the current stream (call it on the stream that ran the step)."""
        report = self.fused.backend.to_host(self._report)
        bad, relaxed = report[-1:].view(np.int32)
        return report[:-1], int(bad), int(relaxed)

    def _launches(self, u0, out, local: bool, phi, mode: int) -> None:
        """Every kernel of one step from ``u0`` into ``out``; ``local``: local time steps;
        ``phi``, ``mode``: the limiter (:meth:`FusedResidual.face_pass`)."""
        raise NotImplementedError

    def _step(self, u, cfl: float, dt, limiter):
        """One step from ``u`` (not modified); ``limiter`` from :func:`limiter_input`
        (array None: into :attr:`phi`).

        Returns
        -------
        u_new : array
            The new state (one of two buffers that steps alternate between).
        norms : numpy.ndarray
            RMS of ``dU/dt`` per variable at ``u`` (over the updated cells).
        bad_cell : int or None
            First cell (plan order) whose new state is non-finite or has non-positive
            density or pressure.
        """
        f = self.fused
        f.update_far_field()
        u0, out = alternate(self.states, u)
        local = dt is None
        with self.graphs.stream:
            if not local:
                self.dt[:1] = dt
            self.cfl.fill(cfl)
        self.step_cfl = cfl
        phi, mode = limiter
        phi = self.phi if phi is None else phi
        key = (u0 is self.states[0], local, id(phi), mode)
        self.graphs.run(key, lambda: self._launches(u0, out, local, phi, mode))
        with self.graphs.stream:
            squares, bad, self.relaxed_cells = self.report()
        if f.limited and mode != FROZEN:
            f.d.limiter_values = phi
        f.d.boundary_flux = self.boundary_flux
        norms = np.sqrt(squares / f.n_active)
        return out, norms, None if bad == NO_BAD_CELL else bad


class FusedRungeKutta(FusedSteps):
    """The kernels of explicit Runge-Kutta steps of a :class:`FusedResidual`, three per
    stage, which :class:`~gpusolver.solvers.fv.fused_parts.FusedPartsRungeKutta` runs for
    each part.

    Parameters
    ----------
    fused : FusedResidual
    stages : tuple of Stage
        The method (:data:`gpusolver.integrators.explicit.TABLEAUX`).
    graphs : bool
        See :class:`FusedSteps`.
    """

    def __init__(self, fused: FusedResidual, stages, graphs: bool = True):
        super().__init__(fused, graphs)
        self.stages = stages
        shape, dtype = (fused.n_vars, fused.n_cells), fused.dtype
        self.stage_state = self.xp.empty(shape, dtype)
        self.total = self.xp.empty(shape, dtype)

    def begin(self) -> None:
        """Reset the step's residual sums and divergence check (before its first stage)."""
        self.reset_report()

    def stage_faces(self, i: int, current, local: bool, phi, mode: int,
                    cells: tuple[int, int], faces: tuple[int, int]) -> None:
        """Stage ``i``'s gradients of cells ``[cells)`` and fluxes of faces ``[faces)``
        (after :meth:`FusedResidual.clear`): a step in pieces, for parts that compute
        their interior while the halo is in flight."""
        f = self.fused
        f.gradients(current, phi, mode, *cells)
        f.fluxes(current, self.boundary_flux if i == 0 else NULL, i == 0 and local, *faces)

    def stage_update(self, i: int, u0, current, out, local: bool):
        """Stage ``i``'s cell update from the accumulated face fluxes; returns the
        buffer it wrote (``out`` after the last stage)."""
        rk, first, last = self.stages[i], i == 0, i == len(self.stages) - 1
        target = out if last else self.stage_state
        self.fused.update(self.fused.accumulated,
                          stage=(rk, first, first and local, 1 if local else 0),
                          cfl=self.cfl, dt=self.dt, u0=u0, u=current, total=self.total,
                          u_out=target, squares=self.squares if first else NULL,
                          bad_cell=self.bad_cell if last else NULL,
                          relaxed=self.relaxed if local else NULL)
        return target
