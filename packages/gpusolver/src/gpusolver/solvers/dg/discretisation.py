"""Modal DG discretisation of the 2-D Euler and Navier-Stokes equations: right-hand
side, time steps, projections.

The state is ``(n_vars, n_modes, n_elements)`` modal coefficients of the conserved
variables. On each element::

    d/dt (M U) = sum_q w |J| grad(phi) . F(U_q) - sum_faces sum_q w L phi F*(U-, U+, n),

with the numerical flux ``F*`` of :mod:`gpusolver.physics.fluxes` (``rusanov`` is local
Lax-Friedrichs) between the traces of the two elements, or of the element and the ghost
state of the boundary condition (:mod:`gpusolver.physics.boundary`, the same conditions
as the finite-volume solver) at each Gauss point. With a Reynolds number the BR2 viscous
terms of :mod:`gpusolver.solvers.dg.viscous` are subtracted. Time
steps (explicit Runge-Kutta, :mod:`gpusolver.integrators.explicit`) are
``dt = cfl / ((2p + 1) (|u| + c) / h + N^2 nu / h_v^2)`` (``h``, ``h_v``: the element's
convective and diffusive lengths of :class:`DGLayout`; ``N = (p + 1) (p + 2) / 2`` modes,
whose square follows the growth of BR2's largest eigenvalue with p, measured for RK4 on
quadrilaterals and triangles; ``nu``: the faster of the momentum and heat diffusivities, 0
for Euler), one global step or each element its own (steady states).

:class:`DGDiscretisation` is one mesh's (or one mesh part's) right-hand side, time
steps, projections and state; :class:`~gpusolver.solvers.dg.solver.DGSolver` steps one
or several of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusolver.backends import array_module, get_backend
from gpusolver.errors import ConfigError
from gpusolver.layout.geometry import periodic_partners
from gpusolver.physics.boundary import (
    CONDITION_CODES,
    BoundarySpec,
    check_markers,
    kernel_condition,
)
from gpusolver.physics.fluxes import get_flux
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.layout import (
    DGLayout,
    build_layout,
    element_quadrature,
    map_points,
    subdivision,
)
from gpusolver.solvers.dg.reference import basis
from gpusolver.solvers.dg.shock import ModalFilter
from gpusolver.solvers.dg.viscous import BR2
from meshorder import Mesh
from meshorder.pipeline import make_plan
from meshorder.plan import Plan

#: Boundary value naming the exact solution as the outside state (``exact`` callable).
EXACT = "exact"


class DGDiscretisation:
    """Modal DG of degree 0 to 3 on a mesh of triangles and quadrilaterals: its layout,
    right-hand side, time steps and modal state.

    Parameters
    ----------
    mesh : Mesh
    gas : Gas
    boundaries : dict of str to str or dict
        Condition per marker, as in the finite-volume case files, or ``"exact"``: the
        ghost state is ``exact(points, time)`` (prescribed state).
    degree : int
    flux : str
        A numerical flux name (``rusanov``: local Lax-Friedrichs, ``roe``, ...).
    plan : Plan, optional
        Element and face order (default: meshorder's).
    cfl : float
        The CFL number of :meth:`local_time_steps`.
    exact : callable, optional
        ``exact(points (2, n), time) -> conserved (n_vars, n)``.
    shock_capturing : bool
        Damp the high modes where the modal-decay sensor finds a discontinuity
        (:class:`gpusolver.solvers.dg.shock.ModalFilter`, :attr:`filter`).
    backend : str
        ``numpy`` (array code, the reference), ``cupy`` (the kernels of
        :mod:`gpusolver.solvers.dg.fused`, the state on the GPU) or ``auto``.

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> square = {m: "farfield" for m in ("left", "right", "bottom", "top")}
    >>> d = DGDiscretisation(grid_mesh(3, 3, "triangle"), Gas(dim=2, mach=0.5), square,
    ...                      degree=2)
    >>> bool(np.abs(d.rate(d.u)).max() < 1e-12)  # free stream is preserved
    True
    """

    def __init__(self, mesh: Mesh, gas: Gas, boundaries: dict, *, degree: int = 1,
                 flux: str = "rusanov", plan: Plan | None = None, cfl: float = 0.5,
                 exact: Callable | None = None, shock_capturing: bool = False,
                 backend: str = "numpy"):
        plan = plan or make_plan(mesh)
        viscous = gas.reynolds is not None
        self.layout: DGLayout = build_layout(mesh, plan, degree, viscous=viscous)
        check_markers(list(self.layout.markers), boundaries)
        if EXACT in boundaries.values() and exact is None:
            raise ConfigError("a boundary is 'exact' but no exact solution was given")
        self.specs = {name: value if value == EXACT or isinstance(value, BoundarySpec)
                      else BoundarySpec.parse(name, value) for name, value in boundaries.items()}
        unsupported = [name for name, spec in self.specs.items()
                       if spec != EXACT and spec.params.get("vortex")]
        if unsupported:
            raise ConfigError(f"the DG solver has no vortex far-field boundaries yet "
                              f"({', '.join(unsupported)})")
        #: Device (or host) arrays of each marker for :meth:`marker_ghost_states`, made once.
        self._boundary_arrays: dict[tuple[str, str], tuple] = {}
        #: Periodic markers: the partner boundary face of each face, and the partner's
        #: Gauss points in this face's order (local boundary indices).
        self.periodic = {name: periodic_gauss_points(self.layout, name, spec.params["partner"])
                         for name, spec in self.specs.items()
                         if spec != EXACT and spec.condition.name == "periodic"}
        self.gas, self.flux, self.flux_name, self.exact = gas, get_flux(flux), flux, exact
        self.cfl = cfl
        self.filter = ModalFilter(degree) if shock_capturing and degree > 0 else None
        #: Physical time (the exact boundary states' time).
        self.time = 0.0
        #: From the step's start to the time of the stage being evaluated: the exact
        #: boundary states are taken at ``time + stage_offset``.
        self.stage_offset = 0.0
        self.boundary_flux = None  # of the last rate: (n_vars, n_boundary_faces), integrated
        self.backend = get_backend(backend)
        self._mean_weights = self.backend.asarray(self.layout.mean_weights)
        self._size = self.backend.asarray(self.layout.size)
        self._diffusion_size = self.backend.asarray(self.layout.diffusion_size)
        #: The Navier-Stokes terms (None: Euler).
        self.viscous = (BR2(self.layout, gas, self._boundary_faces_of("no-slip-adiabatic"))
                        if viscous else None)
        #: Boundary indices of the no-slip walls' faces in Navier-Stokes (their convective
        #: flux is the wall's: pressure alone).
        self._no_slip = np.flatnonzero(self._boundary_faces_of("no-slip-adiabatic",
                                                               "no-slip-isothermal")
                                       & viscous)
        #: The right-hand side in kernels (:class:`~gpusolver.solvers.dg.fused.FusedDG`;
        #: None: array code).
        self.fused = None
        if self.backend.name == "cupy":
            from gpusolver.solvers.dg.fused import FusedDG
            self.fused = FusedDG(self, self.backend)
        #: The modal coefficients ``(n_vars, n_modes, n_elements)``, plan order.
        self.u = self.backend.asarray(self.project(lambda x, t: uniform(gas, x)))

    # ------------------------------------------------------------------ projections
    def project(self, function: Callable) -> np.ndarray:
        """L2 projection of ``function(points (2, n), time) -> conserved (n_vars, n)``."""
        lay = self.layout
        u = np.empty((self.gas.n_vars, lay.n_modes, lay.n_elements))
        for g in lay.groups:
            q, n = g.points.shape[1:]
            values = function(g.points.reshape(2, -1), self.time).reshape(-1, q, n)
            moments = np.einsum("mq,qe,vqe->vme", g.values, g.weights, values)
            u[:, :, g.elements] = np.einsum("emn,vne->vme", lay.inverse_mass[g.elements],
                                            moments)
        return u

    def l2_error(self, function: Callable, variable: int = 0, strength: int | None = None
                 ) -> float:
        """``||u_h - u||_2`` of one conserved variable over the domain, integrated by the
        solver's own quadrature (the default) or by a rule of ``strength``. DG solutions
        are most accurate at the solver's Gauss points, so its rule (2p + 1) gives smaller
        errors than a strong one, which measures them between the points too."""
        total, u = 0.0, self.backend.to_host(self.u)
        for g in self.layout.groups:
            points, weights, values = ((g.points, g.weights, g.values) if strength is None
                                       else element_quadrature(g.shape, g.nodes,
                                                               self.layout.degree, strength))
            q, n = weights.shape
            exact = function(points.reshape(2, -1), self.time)[variable].reshape(q, n)
            difference = np.einsum("mq,me->qe", values, u[variable][:, g.elements]) - exact
            total += float((difference * difference * weights).sum())
        return total ** 0.5

    def cell_averages(self, u=None):
        """``(n_vars, n_elements)`` element means of modal coefficients ``u`` (default:
        the state), plan order, on the backend."""
        u = self.u if u is None else u
        return (self._mean_weights[None] * u).sum(axis=1)

    # ------------------------------------------------------------------ right-hand side
    def rate(self, u):
        """``dU/dt`` of the modal coefficients ``u`` (on the GPU: the fused kernels)."""
        if self.fused is not None:
            rate = self.fused.rate(u)
            self.boundary_flux = self.fused.boundary_flux
            return rate
        lay, gas = self.layout, self.gas
        total = np.zeros(u.shape)  # C order whatever u's is: the scatters add into its rows
        for g in lay.groups:
            states = np.einsum("mq,vme->vqe", g.values, u[:, :, g.elements])
            flux = _physical_flux(gas, states)  # (n_vars, 2, q, n)
            total[:, :, g.elements] += np.einsum("dmqe,vdqe->vme", g.weighted_gradients, flux)
        inside, outside = self.traces(u)
        face_flux = self.flux_at_points(inside, outside)  # (n_vars, n_qf, n_faces), per length
        if self.viscous is not None:
            volume, viscous_flux = self.viscous.terms(u, inside, outside)
            total -= volume
            face_flux = face_flux - viscous_flux
        weights = (lay.face_weights[:, None] * lay.line_jacobian)[None]
        ni = lay.n_interior
        self.boundary_flux = (face_flux[:, :, ni:] * weights[:, :, ni:]).sum(axis=1)
        left = np.einsum("fmq,vqf->vmf", lay.left_trace, face_flux * weights)
        right = np.einsum("fmq,vqf->vmf", lay.right_trace[:ni], face_flux[:, :, :ni]
                          * weights[:, :, :ni])
        self.backend.scatter["add"](total, lay.left, -left)
        self.backend.scatter["add"](total, lay.right[:ni], right)
        return np.einsum("emn,vne->vme", lay.inverse_mass, total)

    def face_fluxes(self, u: np.ndarray) -> np.ndarray:
        """Convective numerical flux ``(n_vars, n_qf, n_faces)`` per unit length at the
        Gauss points."""
        return self.flux_at_points(*self.traces(u))

    def traces(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Primitive states ``(n_vars, n_qf, n_faces)`` at the faces' Gauss points: of the
        left element, and of the right element or the boundary's ghost state."""
        lay, gas = self.layout, self.gas
        ni = lay.n_interior
        inside = gas.to_primitive(np.einsum("fmq,vmf->vqf", lay.left_trace, u[:, :, lay.left]))
        outside = np.empty_like(inside)
        outside[:, :, :ni] = gas.to_primitive(np.einsum(
            "fmq,vmf->vqf", lay.right_trace[:ni], u[:, :, lay.right[:ni]]))
        outside[:, :, ni:] = self.ghost_states(inside[:, :, ni:])
        return inside, outside

    def flux_at_points(self, inside: np.ndarray, outside: np.ndarray) -> np.ndarray:
        """The convective numerical flux between the :meth:`traces`; on a no-slip wall of a
        Navier-Stokes run, the wall's flux: the inside's pressure times the normal, nothing
        through the wall.

        A numerical flux against the wall's ghost state would add its dissipation there:
        for an isothermal wall, whose ghost density differs from the inside's, mass
        through the wall. On Couette flow between isothermal walls (50, 200 and 800 quads,
        p = 1) that leak held the pressure's error to order 1.2 and the density's L2
        orders to 1.80 and 1.66; with the wall's flux they are 2.28 and 2.06
        (docs/validation.md).
        """
        lay, gas = self.layout, self.gas
        flat = (inside.reshape(gas.n_vars, -1), outside.reshape(gas.n_vars, -1),
                lay.point_normals.reshape(2, -1))
        flux = self.flux(gas, *flat).reshape(inside.shape)
        if len(self._no_slip):
            faces = lay.n_interior + self._no_slip
            flux[:, :, faces] = 0.0
            flux[1:3, :, faces] = inside[-1][None, :, faces] * lay.point_normals[:, :, faces]
        return flux

    def ghost_states(self, inside):
        """Ghost states ``(n_vars, n_qf, n_boundary_faces)`` at the boundary faces' Gauss
        points from the inside primitive states there (NumPy or CuPy arrays)."""
        outside = array_module(inside).empty_like(inside)
        for name in self.layout.markers:
            self.marker_ghost_states(inside, outside, name)
        return outside

    def marker_ghost_states(self, inside, outside, name: str) -> None:
        """Fill ``outside`` at the faces of marker ``name`` (see :meth:`ghost_states`)."""
        lay, gas = self.layout, self.gas
        xp = array_module(inside)
        first, end = lay.markers[name]
        spec, faces = self.specs[name], slice(first - lay.n_interior, end - lay.n_interior)
        if spec == EXACT:
            points = lay.face_points[:, :, first:end].reshape(2, -1)
            ghost = xp.asarray(gas.to_primitive(self.exact(points,
                                                           self.time + self.stage_offset)))
        elif name in self.periodic:  # the partner face's inside state, point by point
            point, partner = self._marker_arrays(xp, name)
            ghost = inside[:, point, partner].transpose(0, 2, 1)
        else:
            normal, = self._marker_arrays(xp, name)
            ghost = spec.condition.ghost(gas, inside[:, :, faces].reshape(gas.n_vars, -1),
                                         normal, spec.params)
        outside[:, :, faces] = ghost.reshape(gas.n_vars, inside.shape[1], end - first)

    def kernel_conditions(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Per boundary face, the kernels' condition code and values ``(n_vars, nb)``
        (:mod:`gpusolver.physics.boundary`), and the markers whose ghost states the
        kernels leave to :meth:`marker_ghost_states` (code -1: exact, periodic, and
        conditions without a kernel branch)."""
        lay = self.layout
        nb = len(lay.left) - lay.n_interior
        code, value, by_array = np.full(nb, -1, np.int32), np.zeros((self.gas.n_vars, nb)), []
        for name, (first, end) in lay.markers.items():
            spec, faces = self.specs[name], slice(first - lay.n_interior, end - lay.n_interior)
            if spec == EXACT or name in self.periodic or spec.condition.name not in \
                    CONDITION_CODES:
                by_array.append(name)
                continue
            code[faces], value[:, faces] = kernel_condition(self.gas, spec)
        return code, value, by_array

    def _boundary_faces_of(self, *conditions: str) -> np.ndarray:
        """``(n_boundary_faces,)`` True on the faces of markers with one of ``conditions``."""
        lay = self.layout
        out = np.zeros(len(lay.left) - lay.n_interior, dtype=bool)
        for name, (first, end) in lay.markers.items():
            spec = self.specs[name]
            if spec != EXACT and spec.condition.name in conditions:
                out[first - lay.n_interior:end - lay.n_interior] = True
        return out

    def _marker_arrays(self, xp, name: str) -> tuple:
        """What :meth:`ghost_states` reads of marker ``name``, as ``xp`` arrays made once:
        the Gauss points' normals, or (periodic) the partner's points and faces."""
        key = (xp.__name__, name)
        if key not in self._boundary_arrays:
            if name in self.periodic:
                partner, point = self.periodic[name]
                arrays = (xp.asarray(point), xp.asarray(partner)[:, None])
            else:
                first, end = self.layout.markers[name]
                arrays = (xp.asarray(self.layout.point_normals[:, :, first:end].reshape(2, -1)),)
            self._boundary_arrays[key] = arrays
        return self._boundary_arrays[key]

    # ------------------------------------------------------------------ time stepping
    def time_step_factors(self) -> tuple[float, float]:
        """The factors of :meth:`local_time_steps`' rates: ``2p + 1`` on convection's
        ``(|u| + c) / size``, and ``N^2 max(4/3, gamma / Pr)`` (N modes; momentum's and
        heat's diffusion, the faster one) on ``nu / diffusion_size^2``."""
        gas = self.gas
        return (2 * self.layout.degree + 1.0,
                self.layout.n_modes**2 * max(4.0 / 3.0, gas.gamma / gas.prandtl))

    def local_time_steps(self):
        """Each element's stable step at the CFL number (from its mean state), on the
        backend."""
        gas, (order, diffusion) = self.gas, self.time_step_factors()
        w = gas.to_primitive(self.cell_averages())
        rate = order * (((w[1:-1] ** 2).sum(axis=0)) ** 0.5 + gas.sound_speed(w)) / self._size
        if self.viscous is not None:
            viscosity = gas.viscosity(gas.temperature(w)) / w[0]
            rate = rate + diffusion * viscosity / self._diffusion_size**2
        return self.cfl / rate

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the modal coefficients from the file's cell order (exactly); those of a
        lower degree start this one (the modes are hierarchical: the higher ones at 0).

        Raises
        ------
        ValueError
            If ``u`` has more modes than this degree.
        """
        u = np.asarray(u, dtype=np.float64)
        if u.shape[1] > self.layout.n_modes:
            raise ValueError(f"{u.shape[1]} modes given; degree {self.layout.degree} has "
                             f"{self.layout.n_modes}")
        # C order, as the steps leave it: the sums' rounding depends on the layout
        padded = np.zeros((u.shape[0], self.layout.n_modes, u.shape[2]))
        padded[:, :u.shape[1]] = u[:, :, self.layout.cell_order]
        self.u = self.backend.asarray(padded)

    def high_order_view(self, n_elements: int | None = None
                        ) -> tuple[np.ndarray, list, np.ndarray]:
        """Each element (of the first ``n_elements`` in plan order; default all) cut into
        ``(p + 1)^2`` sub-cells, the solution at their corners:
        ``(points (n, 2), [(cell type, connectivity)], primitive states (n_vars, n))``.
        Points are repeated per element, so the view shows the jumps between elements."""
        lay, gas = self.layout, self.gas
        u = self.backend.to_host(self.u)
        n_elements = lay.n_elements if n_elements is None else n_elements
        points, blocks, states, first = [], [], [], 0
        for g in lay.groups:
            keep = g.elements < n_elements
            ref, cells = subdivision(g.shape, lay.degree + 1)
            xy = map_points(g.shape, ref, g.nodes).transpose(2, 1, 0)[keep]  # (n_e, m, 2)
            values = np.einsum("mq,vme->veq", basis(g.shape, lay.degree).values(ref),
                               u[:, :, g.elements[keep]])
            count = ref.shape[1]
            offsets = first + count * np.arange(int(keep.sum()))
            blocks.append((g.shape, (offsets[:, None, None] + cells[None]).reshape(-1,
                                                                                  cells.shape[1])))
            points.append(xy.reshape(-1, 2))
            states.append(values.reshape(gas.n_vars, -1))
            first += count * len(g.elements)
        return (np.concatenate(points), blocks,
                gas.to_primitive(np.concatenate(states, axis=1)))


def periodic_gauss_points(layout: DGLayout, marker: str, partner: str
                          ) -> tuple[np.ndarray, np.ndarray]:
    """For each face of a periodic ``marker``: its partner face (matched by translation,
    as in the finite-volume solver) as a boundary index, and for each of its Gauss points
    the partner's matching one ``(n_faces, n_qf)``."""
    if partner not in layout.markers:
        raise ConfigError(f"periodic boundary {marker!r} needs partner = one of "
                          f"{', '.join(layout.markers)}")
    partners = periodic_partners(layout, marker, partner)
    first, end = layout.markers[marker]
    shift = (layout.face_centre[:, partners] - layout.face_centre[:, first:end])
    mine = layout.face_points[:, :, first:end] + shift[:, None, :]
    theirs = layout.face_points[:, :, partners]
    n_qf = mine.shape[1]
    same = (np.abs(mine[:, 0] - theirs[:, 0]).sum(axis=0)
            < np.abs(mine[:, 0] - theirs[:, -1]).sum(axis=0))
    forward, backward = np.arange(n_qf), np.arange(n_qf)[::-1]
    point = np.where(same[:, None], forward[None], backward[None])
    return partners - layout.n_interior, point


def uniform(gas: Gas, points: np.ndarray) -> np.ndarray:
    """The free stream's conserved state at ``points`` ``(2, n)``."""
    state = gas.to_conserved(np.asarray(gas.free_stream, dtype=float)[:, None])
    return np.repeat(state, points.shape[1], axis=1)


def _physical_flux(gas: Gas, u: np.ndarray) -> np.ndarray:
    """Euler fluxes ``(n_vars, 2, ...)`` of conserved states ``u`` ``(n_vars, ...)``."""
    w = gas.to_primitive(u.reshape(u.shape[0], -1))
    columns = [gas.euler_flux(w, np.eye(2)[:, d:d + 1]) for d in range(2)]
    return np.stack(columns, axis=1).reshape(u.shape[0], 2, *u.shape[1:])
