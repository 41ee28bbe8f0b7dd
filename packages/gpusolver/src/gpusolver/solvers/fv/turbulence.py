"""Turbulence models on one finite-volume discretisation, loosely coupled to the mean
flow: SA-neg (:mod:`gpusolver.physics.spalart_allmaras`) and Menter's SST-V
(:mod:`gpusolver.physics.menter_sst`).

Each step of the solver first advances the mean flow with the eddy viscosity of the
model's current state frozen (:meth:`TurbulenceFV.set_eddy_viscosity` hands each face's
``mu_t`` to the mean flow's viscous fluxes and wave speeds), then advances the model's
scalars by one implicit step each with the mean flow of that step's start frozen: the
loose coupling of SU2 and most segregated RANS codes. Both reach the coupled steady
state.

Every scalar ``phi`` (``nu_tilde``; ``k`` and ``omega``) is discretised alike, per cell:

- advection by the mean flow's numerical mass flux through each face, first-order
  upwind (TMR's reference solutions use first-order turbulence advection, and it keeps
  the scalars bounded where the mean flow's second-order reconstruction needs a limiter);
- diffusion ``D grad phi . n`` on each face (``D`` the mean of its cells') with the face
  gradient of the mean flow's viscous fluxes (the cells' mean, corrected along the line
  between their centroids); the sources from cell gradients (least squares or
  Green-Gauss, as the mean flow's);
- boundaries: a no-slip wall's value (``nu_tilde = k = 0``, Menter's ``omega``) by a
  ghost mirrored about it, the free stream's flowing in through far fields and
  supersonic inflows, the cell's value elsewhere (outflows, symmetry planes, slip walls);
- the implicit step ``(rho V / dt + A) dphi = R``: ``A`` is the upwind advection and
  the two-point diffusion, plus the part of the source's derivative that damps (an
  M-matrix: no new extrema), solved exactly as the mean flow's Newton matrix is
  (:class:`~gpusolver.solvers.fv.jacobian.ExactSolver`: on the GPU by levels of cells in
  2D, else SuperLU on the host), or by
  symmetric Gauss-Seidel sweeps over the mean flow's LU-SGS levels on the backend
  (:meth:`TurbulenceFV.use_sweeps`); where the mean flow runs the fused residual, the
  steps run in kernels (:mod:`gpusolver.solvers.fv.fused_turbulence`: swept steps
  whole, exact steps up to their matrix).

SA-neg's equation, its diffusion ``rho (nu + nt fn) / sigma``, ``cb2`` and density-gradient
terms are TMR's; SST's ``k`` and ``omega`` diffuse with ``mu + sigma mu_t`` (``sigma``
blended by ``F1``) and ``omega`` takes the cross-diffusion term.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends.ids import ScalarBoundary
from gpusolver.physics import menter_sst as sst
from gpusolver.physics import spalart_allmaras as sa
from gpusolver.solvers.fv.fused_turbulence import FusedMenterSST, FusedSpalartAllmaras
from gpusolver.solvers.fv.jacobian import ExactSolver
from meshorder.hyperplanes import Levels

#: How the implicit steps solve their matrix: ``lu`` (exact: :class:`ExactSolver`),
#: ``sweeps`` (symmetric Gauss-Seidel over the LU-SGS levels, on the backend), ``auto``
#: (``lu`` in 2D, ``sweeps`` in 3D, where the LU's fill grows quickly).
SOLVERS = ("auto", "lu", "sweeps")

#: Boundary faces by what their ghost holds: the cell's value, a no-slip wall's, or the
#: free stream's where the mass flux enters (the kernels' ids too).
CELL, WALL, FREE_STREAM = (int(kind) for kind in ScalarBoundary)  # CuPy takes no IntEnum


class TurbulenceFV:
    """What the finite-volume form of every turbulence model shares (see the module
    docstring): its scalars, their face values, fluxes and implicit step.

    Parameters
    ----------
    discretisation : Discretisation
        The mean flow's, Navier-Stokes.
    distance : numpy.ndarray
        ``(n_cells,)`` wall distance of each cell (plan order).
    free_stream : sequence of float
        The free stream's value of each scalar (:attr:`names`).
    """

    #: The model's scalars (their names in outputs, history and checkpoints).
    names: tuple[str, ...] = ()
    #: Its swept steps in kernels (:mod:`gpusolver.solvers.fv.fused_turbulence`).
    fused_steps: type
    #: A scalar this many times the size of its free stream's has run away: the step
    #: ends the run as a non-finite one does (None: no ceiling).
    CEILING: float | None = None

    def __init__(self, discretisation, distance: np.ndarray, free_stream):
        d = self.d = discretisation
        backend, g, ni = d.backend, d.geometry, d.n_interior
        self.xp = backend.xp
        self.distance = backend.asarray(np.maximum(distance, 1e-300), d.dtype)
        self.free_stream = tuple(float(value) for value in free_stream)
        kind = np.full(g.n_faces - ni, CELL, dtype=np.int64)
        for faces, spec, _, _ in d.boundaries:
            local = slice(faces.start - ni, faces.stop - ni)
            if spec.condition.viscous_wall:
                kind[local] = WALL
            elif spec.condition.name in ("farfield", "supersonic-inflow"):
                kind[local] = FREE_STREAM
        #: Per boundary face: :data:`CELL`, :data:`WALL` or :data:`FREE_STREAM`.
        self.boundary_kind = backend.asarray(kind)
        self._left = backend.to_host(g.left)
        self._right = backend.to_host(g.right[:ni])
        self._exact: ExactSolver | None = None  # made on its first use
        self._own_rows: tuple | None = None  # made with it
        #: Per scalar, the solve of its last factorised implicit matrix.
        self._solves: dict = {}
        #: The forward and backward sweeps' levels for array code (None: the exact
        #: solve, or the sweeps run in :attr:`kernels`).
        self._sweeps: list | None = None
        #: The steps in kernels (None: array code; see :meth:`use_sweeps` and
        #: :meth:`use_exact`).
        self.kernels = None
        #: ``(len(names), n_cells)``: the scalars of every cell.
        self.values = self.xp.stack([self.xp.full(g.volume.shape, value, dtype=d.dtype)
                                     for value in self.free_stream])
        #: The cells whose residuals the norms sum (a part's own; the solver sets it).
        self.n_own = g.n_cells
        #: Per scalar, the sum of ``(R / V)^2`` over the own cells at the start of the
        #: last step of the mean flow, then (in kernels) the count of own values that the
        #: step's updates left non-finite or past :attr:`CEILING`; on the backend in fp64
        #: (:meth:`step_report`).
        self.tallies = self.xp.zeros(len(self.names) + 1, np.float64)
        #: The sums of :attr:`tallies`.
        self.squares = self.tallies[:-1]

    # ------------------------------------------------------------------ coupling
    def laminar_viscosity(self, w):
        """``mu`` of primitive states ``w``."""
        gas = self.d.gas
        return gas.viscosity(gas.temperature(w))

    def set_eddy_viscosity(self, u) -> None:
        """Each face's ``mu_t`` (the mean of its cells'; 0 on no-slip walls) for the
        mean flow's next residuals (in kernels: into the fused residual's buffer)."""
        d, xp = self.d, self.xp
        g, ni = d.geometry, d.n_interior
        mu_t = self.cell_eddy_viscosity(u)
        if self.kernels is not None:
            d.eddy_viscosity = self.kernels.face_eddy_viscosity(mu_t)
            return
        face = mu_t[g.left]
        face[:ni] = 0.5 * (face[:ni] + mu_t[g.right[:ni]])
        face[ni:] = xp.where(self.boundary_kind == WALL, 0.0, face[ni:])
        d.eddy_viscosity = face

    def cell_eddy_viscosity(self, u):
        """``mu_t`` of every cell at the mean flow ``u``."""
        raise NotImplementedError

    def take_residual_gradients(self, keep: bool) -> None:
        """In kernels: the model's next step takes the mean flow's gradients from the
        fused residual's last pass, of the step's start (call it right after the mean
        flow's fused LU-SGS step; ``keep``: residuals come between, multigrid's), instead
        of taking them anew (:meth:`FusedScalarSteps.take_residual_gradients
        <gpusolver.solvers.fv.fused_turbulence.FusedScalarSteps.take_residual_gradients>`).
        Array code takes them anew."""
        if self.kernels is not None:
            self.kernels.take_residual_gradients(keep)

    # ------------------------------------------------------------------ the scalars
    def _sides(self, phi, wall, free_stream: float, mass_flux):
        """``phi`` left and right of every face (the ghost's on the boundary: mirrored
        about ``wall`` on no-slip walls, ``free_stream`` flowing in), and the neighbour
        values the cell gradients take (the faces' means on the boundary)."""
        xp, g, ni = self.xp, self.d.geometry, self.d.n_interior
        kind = self.boundary_kind
        left = phi[g.left]
        inside = left[ni:]
        inflow = (kind == FREE_STREAM) & (mass_flux[ni:] < 0)
        ghost = xp.where(kind == WALL, 2.0 * wall - inside,
                         xp.where(inflow, free_stream, inside))
        right = xp.concatenate([phi[g.right[:ni]], ghost])
        neighbour = right.copy()
        neighbour[ni:] = 0.5 * (inside + ghost)
        return left, right, neighbour

    def _flux(self, left, right, gradient, mass_flux, diffusivity, sigma: float = 1.0):
        """Each face's flux of a scalar: first-order upwind advection by ``mass_flux``
        minus the diffusion ``diffusivity / sigma`` (``diffusivity`` per cell, the mean
        of a face's cells) times its corrected normal gradient; and the faces' two-point
        diffusion coefficients (per unit length, times area) for the implicit step."""
        d = self.d
        g, ni = d.geometry, d.n_interior
        face = diffusivity[g.left]
        face[:ni] = 0.5 * (face[:ni] + diffusivity[g.right[:ni]])
        coefficient = face / sigma * g.area
        grad_left = gradient[:, g.left]
        grad_right = grad_left.copy()
        grad_right[:, :ni] = gradient[:, g.right[:ni]]
        mean = 0.5 * (grad_left + grad_right)
        along = (mean * d.tangent).sum(axis=0)
        normal_gradient = ((mean + ((right - left) * d.inverse_length - along)
                            * d.tangent) * g.normal).sum(axis=0)
        convective = (self.xp.maximum(mass_flux, 0.0) * left
                      + self.xp.minimum(mass_flux, 0.0) * right)
        return convective - coefficient * normal_gradient, coefficient * d.inverse_length

    def _mean_flow(self, u):
        """Primitive states, their cell gradients (the boundary faces' values as the
        mean flow's gradients take them: on a no-slip wall the wall's velocity) and the
        laminar kinematic viscosity."""
        d, xp = self.d, self.xp
        g, ni = d.geometry, d.n_interior
        w = d.gas.to_primitive(u)
        w_left = w[:, g.left]
        boundary = 0.5 * (w_left[:, ni:] + d.ghost_states(w_left))
        grad_w = d.gradient(w_left, xp.concatenate([w[:, g.right[:ni]], boundary], axis=1))
        return w, grad_w, self.laminar_viscosity(w) / w[0]

    def use_sweeps(self, levels: tuple[Levels, Levels], tables: tuple | None = None
                   ) -> None:
        """Solve the implicit steps by symmetric Gauss-Seidel sweeps over the forward and
        backward ``levels`` (the mean flow's LU-SGS levels) on the backend, instead of
        the exact solve: ``(D + L) D^-1 (D + U) dphi = R`` with the matrix's own
        entries, linear in the mesh's size (3D and large meshes). Each interior face
        enters a sweep once, from its cell of the later level; cells in no level (a
        part's halo) are never swept and never upstream. Where the mean flow runs the
        fused residual (and not JST's cell pass) and its LU-SGS level kernels give their
        sweep ``tables`` (:class:`~gpusolver.solvers.fv.lusgs.SweepTables` of the same
        levels), the steps run in kernels (:attr:`fused_steps`)."""
        d = self.d
        if d.fused_riemann and tables is not None:
            self.kernels, self._sweeps = type(self).fused_steps(self, tables), None
            return
        self.kernels = None
        left, right = self._left[:d.n_interior], self._right
        self._sweeps = []
        for level in levels:
            of = level.level
            faces = np.flatnonzero(of[left] != of[right])
            cell_is_left = of[left[faces]] > of[right[faces]]
            cell = np.where(cell_is_left, left[faces], right[faces])
            upstream = np.where(cell_is_left, right[faces], left[faces])
            at = np.argsort(of[cell], kind="stable")
            bounds = np.searchsorted(of[cell][at], np.arange(level.n_levels + 1))
            position = np.empty(len(of), dtype=np.int64)  # of each cell in its level
            position[level.order] = (np.arange(len(level.order))
                                     - np.repeat(level.offsets[:-1], np.diff(level.offsets)))
            sweep = []
            for k in range(level.n_levels):
                mine = at[bounds[k]:bounds[k + 1]]
                sweep.append(tuple(d.backend.asarray(x) for x in (
                    level.order[level.offsets[k]:level.offsets[k + 1]], position[cell[mine]],
                    upstream[mine], faces[mine], cell_is_left[mine])))
            self._sweeps.append(sweep)

    def use_exact(self) -> None:
        """Solve the implicit steps exactly (:class:`ExactSolver`, the default); where the
        mean flow runs the fused residual (and not JST's cell pass), the residuals and
        matrices come from kernels (:attr:`fused_steps` without sweep tables)."""
        self._sweeps = None
        self.kernels = type(self).fused_steps(self, None) if self.d.fused_riemann else None

    def _change(self, index: int, residual, mass_flux, coefficient, damping, rho, dt,
                factorise: bool):
        """The implicit step's change of scalar ``index``: ``(rho V / dt + A) dphi = R``
        (see the module docstring): by sweeps (:meth:`use_sweeps`) or exactly
        (:meth:`exact_change`)."""
        def matrix():
            return (self._diagonal(mass_flux, coefficient, damping, rho, dt),
                    *self.off_diagonal(mass_flux, coefficient))

        if self._sweeps is not None:
            return self._swept(residual, *matrix())
        return self.exact_change(index, residual, matrix, factorise)

    def exact_change(self, index: int, residual, matrix, factorise: bool):
        """``dphi`` of scalar ``index`` solved exactly: the matrix ``matrix()`` gives
        (its diagonal, and ``upper`` and ``lower`` as :meth:`off_diagonal`'s) factorised
        if ``factorise`` or never yet, else its last factorisation (its matrix of an
        earlier sub-step). On a part the halo's rows are the identity's and its residuals
        0 (its cells keep their values, the other parts' own): the part's own cells
        solved with the halo held."""
        xp, n_own = self.xp, self.n_own
        halo = n_own < len(residual)
        if factorise or index not in self._solves:
            if self._exact is None:
                g, ni = self.d.geometry, self.d.n_interior
                self._exact = ExactSolver(self.d, 1)
                # per interior face: whether its upper (lower) entry is in an own row
                self._own_rows = (g.left[:ni] < n_own, g.right[:ni] < n_own)
            diagonal, upper, lower = matrix()
            if halo:
                diagonal = xp.concatenate([diagonal[:n_own], xp.ones_like(diagonal[n_own:])])
                upper = xp.where(self._own_rows[0], upper, 0.0)
                lower = xp.where(self._own_rows[1], lower, 0.0)
            # the blocks in the order of operator_pattern: diagonal, upper, lower
            values = xp.concatenate([diagonal, upper, lower])
            self._solves[index] = self._exact.factorise(values[None, None], slot=index)
        if halo:
            residual = xp.concatenate([residual[:n_own], xp.zeros_like(residual[n_own:])])
        return self._solves[index](residual[None])[0]

    def off_diagonal(self, mass_flux, coefficient):
        """Per interior face the implicit matrix's entry of the left cell's row in the
        right cell's column (``upper``) and the reverse (``lower``): upwind advection by
        ``mass_flux`` and two-point diffusion ``coefficient`` (per face)."""
        xp, ni = self.xp, self.d.n_interior
        return (xp.minimum(mass_flux[:ni], 0.0) - coefficient[:ni],
                -xp.maximum(mass_flux[:ni], 0.0) - coefficient[:ni])

    def _diagonal(self, mass_flux, coefficient, damping, rho, dt):
        """The implicit matrix's diagonal ``(n_cells,)`` of one scalar on the backend (as
        ``scalar_matrix_kernel``'s)."""
        d, xp = self.d, self.xp
        g, ni = d.geometry, d.n_interior
        out, inward = xp.maximum(mass_flux, 0.0), xp.minimum(mass_flux, 0.0)
        # interior faces: the left cell loses out + c, gains from the right -(inward - c);
        # boundary faces: the ghost's dependence on the cell
        kind = self.boundary_kind
        from_left = out + coefficient
        from_left[ni:] = out[ni:] + xp.where(
            kind == WALL, 2.0 * coefficient[ni:] - inward[ni:],
            xp.where((kind == FREE_STREAM) & (mass_flux[ni:] < 0), coefficient[ni:], 0.0))
        return (rho * g.volume / dt + damping
                + d.accumulator.combine(from_left, coefficient - inward))

    def _swept(self, residual, diagonal, upper, lower):
        """``dphi`` of ``(D + L) D^-1 (D + U) dphi = R`` by the forward and backward
        sweeps of :meth:`use_sweeps`."""
        xp, scatter = self.xp, self.d.backend.scatter["add"]

        def upstream(change, row, neighbour, face, cell_is_left, n):
            entry = xp.where(cell_is_left, upper[face], lower[face])
            total = xp.zeros(n, dtype=change.dtype)
            scatter(total, row, entry * change[neighbour])
            return total

        forward, backward = self._sweeps
        star = xp.zeros_like(residual)
        for cells, *faces in forward:
            star[cells] = (residual[cells] - upstream(star, *faces, len(cells))
                           ) / diagonal[cells]
        change = star.copy()
        for cells, *faces in backward:
            change[cells] = star[cells] - upstream(change, *faces, len(cells)) / diagonal[cells]
        return change

    def _update(self, index: int, change, max_fall: float = 0.0,
                max_change: float = 0.0) -> None:
        """Scalar ``index`` += ``change``, falling by at most ``max_fall`` of its value and
        changing by at most ``max_change`` times its size plus its free stream's (each
        where positive): the array code of the kernels' update."""
        xp, value = self.xp, self.values[index]
        if max_fall > 0:
            change = xp.maximum(change, -max_fall * value)
        if max_change > 0:
            bound = max_change * (abs(value) + abs(self.free_stream[index]))
            change = xp.minimum(xp.maximum(change, -bound), bound)
        value += change

    def _sum_squares(self, index: int, residual) -> None:
        """:attr:`squares` of scalar ``index`` from its residual (on the backend)."""
        n = self.n_own
        rate = residual[:n].astype(np.float64) / self.d.geometry.volume[:n]
        self.squares[index] = (rate * rate).sum()

    def ceilings(self) -> np.ndarray:
        """Per scalar, the size beyond which it has run away (:attr:`CEILING` times its
        free stream's; infinite without a ceiling)."""
        sizes = np.abs(np.asarray(self.free_stream, dtype=np.float64))
        return sizes * self.CEILING if self.CEILING is not None else np.full_like(sizes, np.inf)

    def _sound(self):
        """Per own cell: every scalar finite and within its :meth:`ceilings`."""
        xp, values = self.xp, self.values[:, :self.n_own]
        ceilings = xp.asarray(self.ceilings())[:, None]
        return (xp.isfinite(values) & (xp.abs(values) <= ceilings)).all(axis=0)

    def step_report(self) -> tuple[np.ndarray, int | None]:
        """Per scalar, the sum of ``(R / V)^2`` over the own cells at the start of the last
        step of the mean flow (a copy), and the first own cell with a non-finite or
        run-away scalar now (None: none; see :attr:`CEILING`): one transfer, a second only
        to find that cell."""
        xp = self.xp
        if self.kernels is not None:  # their updates counted the bad values
            report = self.d.backend.to_host(self.tallies)
            sound = report[-1] == 0
        else:
            report = self.d.backend.to_host(xp.concatenate([self.squares,
                                                            self._sound().all()[None]]))
            sound = bool(report[-1])
        if sound:
            return report[:-1], None
        return report[:-1], int(xp.argmax(~self._sound()))


class SpalartAllmarasFV(TurbulenceFV):
    """SA-neg on one discretisation (see the module docstring): ``nu_tilde`` (``nt``).

    Parameters
    ----------
    discretisation : Discretisation
        The mean flow's, Navier-Stokes.
    distance : numpy.ndarray
        ``(n_cells,)`` wall distance of each cell (plan order).
    """

    names = ("nu_tilde",)
    fused_steps = FusedSpalartAllmaras

    #: An implicit step changes ``nu_tilde`` by at most this times its size plus the free
    #: stream's (it may double, or change sign, in a step): a source's explicit part
    #: (production, taken at the step's start) cannot run away over a few steps, as it
    #: did behind the NACA 0012's trailing edge at 15 degrees (1e-4 to 1e19 in two steps).
    MAX_CHANGE = 1.0
    #: A residual this many times its lowest cuts the model's CFL cap
    #: (:meth:`Solver._turbulence_back_off
    #: <gpusolver.solvers.fv.solver.Solver._turbulence_back_off>`): where production
    #: outgrows destruction a step at a large CFL number doubles nu_tilde (its bound) at
    #: each sub-step, and the residual grows about 64-fold a step (the NACA 0012 at 15
    #: degrees); the developing boundary layers of the TMR cases rise less (at 10 times
    #: the flat plate took 360 steps instead of 281).
    RUNAWAY_RISE: float | None = 100.0
    #: nu_tilde / nu reaches a few 1e4 in boundary layers at Re 1e8: 1e12 times the free
    #: stream's 3 nu is no flow's (the 15-degree NACA 0012 that ran away reached 1e71).
    CEILING: float | None = 1e12

    def __init__(self, discretisation, distance: np.ndarray):
        # the free stream's nt is 3 nu (rho = 1: nu = mu)
        super().__init__(discretisation, distance,
                         [sa.FREE_STREAM_RATIO * discretisation.gas.mu_ref])

    @property
    def nt(self):
        """``nu_tilde`` of every cell."""
        return self.values[0]

    def cell_eddy_viscosity(self, u):
        """``mu_t`` of every cell (in kernels: their buffer, overwritten by the next
        call)."""
        if self.kernels is not None:
            return self.kernels.cell_eddy_viscosity(u)
        w = self.d.gas.to_primitive(u)
        return sa.eddy_viscosity(w[0], self.nt, self.laminar_viscosity(w) / w[0])

    def residual(self, u, mass_flux):
        """``R`` ``(n_cells,)``: the rate of ``rho nt`` times the volume at the state
        ``u`` and the mean flow's face mass fluxes (times area) ``mass_flux``; also the
        faces' diffusion coefficients and the source's damping derivative (for the
        implicit step)."""
        d = self.d
        g = d.geometry
        nt = self.nt
        w, grad_w, nu = self._mean_flow(u)
        left, right, neighbour = self._sides(nt, 0.0, self.free_stream[0], mass_flux)
        grad_nt = d.gradient(left[None], neighbour[None])[0]  # (dim, n_cells)
        # diffusion: rho (nu + nt fn) / sigma
        flux, coefficient = self._flux(left, right, grad_nt, mass_flux,
                                       w[0] * sa.diffusivity(nu, nt), sa.SIGMA)
        residual = d.accumulator.combine(-flux, flux)
        # sources: production - destruction, cb2, and the density-gradient term
        vorticity = _vorticity(grad_w[1:1 + g.dim])
        rate, derivative = sa.source(nt, nu, vorticity, self.distance)
        grad_nt2 = (grad_nt * grad_nt).sum(axis=0)
        cross = (grad_w[0] * grad_nt).sum(axis=0)
        volume_rate = (w[0] * rate + sa.CB2 / sa.SIGMA * w[0] * grad_nt2
                       - (nu + nt) / sa.SIGMA * cross)
        residual = residual + volume_rate * g.volume
        # the implicit step's diagonal takes the source's derivative whatever its sign:
        # where production grows with nu_tilde (a positive derivative) its explicit part
        # would amplify a large step, so the step is held back there instead
        damping = abs(derivative) * w[0] * g.volume
        return residual, coefficient, damping, w[0]

    def step(self, u, mass_flux, dt, new_mean_flow: bool = True) -> None:
        """One implicit step of ``nt`` at the mean flow ``u`` (its face mass fluxes
        ``mass_flux``) with local time steps ``dt`` (per cell, or one), each cell's change
        bounded by :attr:`MAX_CHANGE`. ``new_mean_flow``: ``u`` changed since the last
        step (the first of a step's sub-steps): its matrix is factorised anew (else the
        last factorisation serves) and the residual's :attr:`squares` are summed."""
        if self.kernels is not None:
            self.kernels.step(u, mass_flux, dt, new_mean_flow)
            return
        residual, coefficient, damping, rho = self.residual(u, mass_flux)
        if new_mean_flow:
            self._sum_squares(0, residual)
        change = self._change(0, residual, mass_flux, coefficient, damping, rho, dt,
                              new_mean_flow)
        self._update(0, change, max_change=self.MAX_CHANGE)


class MenterSSTFV(TurbulenceFV):
    """Menter's SST-V on one discretisation (see the module docstring): ``k`` and
    ``omega``, each advanced by its own implicit step (``k`` first).

    Parameters
    ----------
    discretisation : Discretisation
        The mean flow's, Navier-Stokes.
    distance : numpy.ndarray
        ``(n_cells,)`` wall distance of each cell (plan order).
    """

    names = ("k", "omega")
    fused_steps = FusedMenterSST

    #: An implicit step lowers ``k`` or ``omega`` by at most this fraction of its value.
    MAX_FALL = 0.5
    #: No CFL back-off (see :attr:`SpalartAllmarasFV.RUNAWAY_RISE`): the TMR cases' ``k``
    #: and ``omega`` rise more than 100-fold while the layers develop (a back-off there
    #: cost the plate 14% more steps, the NACA 0012 8% and the bump 21%), and no runaway
    #: was seen.
    RUNAWAY_RISE: float | None = None

    def __init__(self, discretisation, distance: np.ndarray):
        gas = discretisation.gas
        super().__init__(discretisation, distance, sst.free_stream(gas.mach, gas.mu_ref))

    def _fields(self, u):
        """Primitive states, laminar kinematic viscosity and vorticity of every cell."""
        d = self.d
        w, grad_w, nu = self._mean_flow(u)
        vorticity = _vorticity(grad_w[1:1 + d.geometry.dim])
        return w, nu, vorticity

    def wall_omega(self, u):
        """Menter's ``omega`` at the wall of each boundary face (used on no-slip walls),
        from the state ``u`` of its cell."""
        g, ni = self.d.geometry, self.d.n_interior
        cells = g.left[ni:]
        w = self.d.gas.to_primitive(u[:, cells])
        nu = self.laminar_viscosity(w) / w[0]
        return sst.WALL_OMEGA * nu / (sst.BETA1 * self.distance[cells] ** 2)

    def _scalars(self, u, mass_flux):
        """Face sides, neighbours and cell gradients of ``k`` and ``omega``."""
        d = self.d
        k_sides = self._sides(self.values[0], 0.0, self.free_stream[0], mass_flux)
        w_sides = self._sides(self.values[1], self.wall_omega(u), self.free_stream[1],
                              mass_flux)
        grads = d.gradient(self.xp.stack([k_sides[0], w_sides[0]]),
                           self.xp.stack([k_sides[2], w_sides[2]]))
        return k_sides, w_sides, grads[0], grads[1]

    def cell_eddy_viscosity(self, u):
        """``mu_t`` of every cell (``F2`` from the cells' distances and laminar
        viscosity; in kernels: their buffer, overwritten by the next call)."""
        if self.kernels is not None:
            return self.kernels.cell_eddy_viscosity(u)
        w, nu, vorticity = self._fields(u)
        k, omega = self.values
        _, f2 = sst.blending(w[0], k, omega, nu, self.distance, self.xp.zeros_like(k))
        return sst.eddy_viscosity(w[0], k, omega, vorticity, f2)

    def residual(self, u, mass_flux):
        """``R`` of ``rho k`` and ``rho omega`` (``(2, n_cells)``, times the volume) at the
        state ``u`` and the mean flow's face mass fluxes ``mass_flux``; also each one's
        face diffusion coefficients ``(2, n_faces)`` and damping ``(2, n_cells)``, and
        the density."""
        d, xp = self.d, self.xp
        g = d.geometry
        k, omega = self.values
        w, nu, vorticity = self._fields(u)
        rho, mu = w[0], nu * w[0]
        (k_left, k_right, _), (w_left, w_right, _), grad_k, grad_omega = self._scalars(
            u, mass_flux)
        cross = (grad_k * grad_omega).sum(axis=0)
        f1, f2 = sst.blending(rho, k, omega, nu, self.distance, cross)
        mu_t = sst.eddy_viscosity(rho, k, omega, vorticity, f2)
        k_flux, k_coefficient = self._flux(
            k_left, k_right, grad_k, mass_flux,
            mu + sst.blend(f1, sst.SIGMA_K1, sst.SIGMA_K2) * mu_t)
        w_flux, w_coefficient = self._flux(
            w_left, w_right, grad_omega, mass_flux,
            mu + sst.blend(f1, sst.SIGMA_W1, sst.SIGMA_W2) * mu_t)
        k_rate, w_rate, k_derivative, w_derivative = sst.sources(
            rho, k, omega, mu_t, vorticity, f1, cross)
        residual = xp.stack([d.accumulator.combine(-k_flux, k_flux) + k_rate * g.volume,
                             d.accumulator.combine(-w_flux, w_flux) + w_rate * g.volume])
        damping = xp.stack([-k_derivative * g.volume, -w_derivative * g.volume])
        return residual, (k_coefficient, w_coefficient), damping, rho

    def step(self, u, mass_flux, dt, new_mean_flow: bool = True) -> None:
        """One implicit step of ``k`` and one of ``omega`` at the mean flow ``u`` (its
        face mass fluxes ``mass_flux``) with local time steps ``dt``, ``new_mean_flow``
        as :meth:`SpalartAllmarasFV.step`; each falls by at most :attr:`MAX_FALL` of its
        value."""
        if self.kernels is not None:
            self.kernels.step(u, mass_flux, dt, new_mean_flow)
            return
        residual, coefficients, damping, rho = self.residual(u, mass_flux)
        for i in range(len(self.names)):
            if new_mean_flow:
                self._sum_squares(i, residual[i])
            change = self._change(i, residual[i], mass_flux, coefficients[i], damping[i],
                                  rho, dt, new_mean_flow)
            self._update(i, change, max_fall=self.MAX_FALL)


def _vorticity(grad_velocity):
    """Vorticity magnitude from velocity gradients ``(dim, dim, n)`` (``[i, j]``:
    ``du_i/dx_j``)."""
    if len(grad_velocity) == 2:
        return abs(grad_velocity[1, 0] - grad_velocity[0, 1])
    x = grad_velocity[2, 1] - grad_velocity[1, 2]
    y = grad_velocity[0, 2] - grad_velocity[2, 0]
    z = grad_velocity[1, 0] - grad_velocity[0, 1]
    return (x * x + y * y + z * z) ** 0.5
