"""The explicit finite-volume solver: state, time stepping, forces, divergence checks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.errors import ConfigError, SolverDivergedError
from gpusolver.integrators import IMPLICIT, INTEGRATORS
from gpusolver.integrators.cfl import backing_off, ramped_cfl
from gpusolver.integrators.explicit import TABLEAUX, keeping_first
from gpusolver.integrators.newton_krylov import DEFAULT_KRYLOV_VECTORS, NewtonKrylov
from gpusolver.layout.geometry import FVGeometry, build_geometry, colour_interior
from gpusolver.layout.strategies import STRATEGIES as ALL_STRATEGIES
from gpusolver.monitors.forces import Forces, surface_pressure, wall_forces
from gpusolver.physics.boundary import BoundarySpec
from gpusolver.physics.gas import Gas
from gpusolver.physics.vortex_farfield import circulation_of_lift
from gpusolver.solvers.fv.accumulate import STRATEGIES
from gpusolver.solvers.fv.discretisation import Discretisation, Scheme
from gpusolver.solvers.fv.fused import FusedRungeKutta, limiter_input
from gpusolver.solvers.fv.jacobian import SparseLU
from gpusolver.solvers.fv.lusgs import LUSGS, SWEEPS, FusedLUSGS
from gpusolver.solvers.fv.multigrid import Multigrid
from gpusolver.solvers.whole_mesh import WholeMesh
from meshorder import Mesh, Topology
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.plan import Plan


@dataclass(frozen=True)
class Stepping:
    """Time-stepping options.

    Attributes
    ----------
    integrator : str
        ``rk4`` or ``ssprk3`` (explicit), ``lusgs`` or ``newton-krylov`` (implicit, for
        steady states).
    cfl : float
        The CFL number (implicit: the first one, see ``cfl_max``).
    local_time_step : bool
        Each cell at its own stable step (steady problems) or one global step.
    cfl_max : float or None
        Implicit only: the CFL number grows with the fall of the residual (switched
        evolution relaxation, ``cfl (r_1 / r_n)``) up to this; None keeps ``cfl``.
    freeze_limiter : float or None
        Freeze the limiter from above once the density residual has fallen by at least
        this factor and then stalled for :data:`STALL_STEPS` implicit (or
        :data:`EXPLICIT_STALL_STEPS` explicit) steps (limiter chatter): from then on
        each cell's limiter values may fall (new extrema are still limited) but never
        rise again (``Discretisation.limiter_ceiling``); None never freezes.
    preconditioner : str
        Newton-Krylov only: ``lu`` (sparse LU of the first-order operator) or
        ``lusgs`` (matrix-free sweeps), see :data:`PRECONDITIONERS`.
    krylov_vectors : int
        Newton-Krylov only: most Krylov vectors per step.
    sweeps : str
        LU-SGS levels (:data:`~gpusolver.solvers.fv.lusgs.SWEEPS`): ``hyperplanes``
        (the sequential sweep in plan order) or ``colours`` (multicolour sweeps: a few
        wide levels, the fast choice on GPUs); a given plan must hold levels of this
        kind, or none.
    multigrid : int
        ``lusgs`` only: most coarse levels of agglomeration multigrid corrections after
        each step (:class:`~gpusolver.solvers.fv.multigrid.Multigrid`); 0: none.
    multigrid_cycle : str
        ``v`` or ``w`` (:data:`~gpusolver.solvers.fv.multigrid.CYCLES`).
    cfl_frozen : float or None
        Implicit: once the limiter is frozen from above, the CFL number stays at most
        this (large steps keep the limiter falling, and the residual with it, on a 3D
        wing); None: ``cfl_max`` throughout.
    """

    integrator: str = "rk4"
    cfl: float = 1.0
    local_time_step: bool = True
    cfl_max: float | None = None
    freeze_limiter: float | None = None
    preconditioner: str = "lu"
    krylov_vectors: int = DEFAULT_KRYLOV_VECTORS
    sweeps: str = "hyperplanes"
    multigrid: int = 0
    multigrid_cycle: str = "v"
    cfl_frozen: float | None = None


#: Newton-Krylov preconditioner name -> what builds it from the solver's LU-SGS sweeps.
PRECONDITIONERS = {"lu": lambda lusgs: SparseLU(lusgs.discretisation),
                   "lusgs": lambda lusgs: lusgs}


#: The residual has stalled when it has not reached a new low (by 10%) in this many
#: implicit steps, or in :data:`EXPLICIT_STALL_STEPS` explicit ones.
STALL_STEPS = 10
EXPLICIT_STALL_STEPS = 500


def plan_options(stepping: Stepping, strategy: str) -> PlanOptions:
    """What a plan made for these settings holds: face colours for the ``colour``
    strategy, colour sweeps and coarse levels for LU-SGS as the stepping asks."""
    implicit = stepping.integrator in IMPLICIT
    multigrid = stepping.multigrid if stepping.integrator == "lusgs" else 0
    return PlanOptions(colour=strategy == "colour",
                       sweep_colours=implicit and stepping.sweeps == "colours",
                       multigrid=max(multigrid, 0))


def _colour_sweeps(stepping: Stepping, plan: Plan | None) -> bool:
    """Whether LU-SGS sweeps by cell colour; refuses a plan whose levels are the other
    kind."""
    if stepping.sweeps not in SWEEPS:
        raise ConfigError(f"unknown sweeps {stepping.sweeps!r}; valid: {', '.join(SWEEPS)}")
    colours = stepping.sweeps == "colours"
    if plan is not None and plan.forward_order.size and stepping.integrator in IMPLICIT:
        planned = bool(plan.parameters.get("sweep_colours", False))
        if planned != colours:
            flag = "--sweep-colours" if colours else "--hyperplanes"
            raise ConfigError(f"sweeps = {stepping.sweeps!r} but the plan's LU-SGS levels are "
                              f"{SWEEPS[planned]}; make the plan with "
                              f"`meshorder reorder {flag}`, or set sweeps = {SWEEPS[planned]!r}")
    return colours


class Solver(WholeMesh):
    """Cell-centred finite-volume solver on one mesh and plan.

    Parameters
    ----------
    mesh : Mesh
    gas : Gas
    boundaries : dict of str to BoundarySpec or str or dict
        Condition per marker name (case-file values are accepted).
    scheme : Scheme, optional
    stepping : Stepping, optional
    plan : Plan, optional
        Must belong to ``mesh``; when omitted one is made with meshorder's defaults
        (plus face colours for the ``colour`` strategy).
    strategy : str
        ``atomic``, ``colour`` or ``reduce``.
    backend : str
        ``auto``, ``numpy`` or ``cupy``.
    precision : str
        ``fp64`` or ``fp32``.
    reference_area : float
        Area (length in 2D) that force coefficients are divided by.
    topology : Topology, optional
        Reused when given.
    kernels : str
        ``fused`` (CUDA kernels where they apply, and explicit steps recorded as CUDA
        graphs) or ``arrays`` (array code); see
        :data:`gpusolver.solvers.fv.discretisation.KERNELS`.

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> solver = Solver(grid_mesh(4, 4), Gas(dim=2, mach=0.5),
    ...                 {"left": "farfield", "right": "farfield",
    ...                  "bottom": "farfield", "top": "farfield"}, backend="numpy")
    >>> bool(solver.step().max() < 1e-12)
    True
    """

    def __init__(self, mesh: Mesh, gas: Gas, boundaries: dict, *, scheme: Scheme | None = None,
                 stepping: Stepping | None = None, plan: Plan | None = None,
                 strategy: str = "atomic", backend: str = "auto", precision: str = "fp64",
                 reference_area: float = 1.0, topology: Topology | None = None,
                 kernels: str = "fused"):
        if strategy in ALL_STRATEGIES and strategy not in STRATEGIES:
            raise ConfigError(f"strategy {strategy!r} runs in the face-flux kernels only "
                              f"(gpusolver bench); the solver runs: {', '.join(STRATEGIES)}")
        STRATEGIES.lookup(strategy)
        if precision not in PRECISIONS:
            raise ConfigError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
        self.stepping = stepping or Stepping()
        implicit = self.stepping.integrator in IMPLICIT
        self.integrator = None if implicit else INTEGRATORS.lookup(self.stepping.integrator)
        topology = topology or Topology(mesh)
        colour_sweeps = _colour_sweeps(self.stepping, plan)
        if plan is None:  # library use; gpusolver run hands over the plan it made
            plan = make_plan(mesh, plan_options(self.stepping, strategy), topology=topology)
        host = build_geometry(mesh, topology, plan)
        if strategy == "colour":
            host = colour_interior(host, plan)
        specs = {name: value if isinstance(value, BoundarySpec) else BoundarySpec.parse(name, value)
                 for name, value in boundaries.items()}
        self.mesh, self.gas, self.plan, self.host = mesh, gas, plan, host
        self.backend = get_backend(backend)
        self.dtype = np.dtype(PRECISIONS[precision])
        self.discretisation = Discretisation(host, gas, scheme or Scheme(), specs, strategy,
                                             self.backend, self.dtype, kernels)
        fused = self.discretisation.fused
        self.fused_steps = (FusedRungeKutta(fused, TABLEAUX[self.stepping.integrator])
                            if fused is not None and not implicit else None)
        self.lusgs = (LUSGS(self.discretisation, host, plan=plan, colours=colour_sweeps)
                      if implicit else None)
        self.fused_implicit = None
        if self.stepping.integrator == "lusgs" and self.lusgs.kernels is not None:
            self.fused_implicit = FusedLUSGS(fused, self.lusgs.kernels)
        self.newton = None
        if self.stepping.integrator == "newton-krylov":
            if self.stepping.preconditioner not in PRECONDITIONERS:
                raise ConfigError(f"unknown preconditioner {self.stepping.preconditioner!r}; "
                                  f"valid: {', '.join(PRECONDITIONERS)}")
            self.newton = NewtonKrylov(
                self.discretisation, PRECONDITIONERS[self.stepping.preconditioner](self.lusgs),
                max_vectors=self.stepping.krylov_vectors)
        self.multigrid = None
        if self.stepping.multigrid < 0:
            raise ConfigError(f"multigrid must be a number of coarse levels (0: none), not "
                              f"{self.stepping.multigrid}")
        if self.stepping.multigrid:
            if self.stepping.integrator != "lusgs" or not self.stepping.local_time_step:
                raise ConfigError("multigrid corrects LU-SGS steps: set time_integrator = "
                                  "'lusgs' with local_time_step = true, or multigrid = 0")
            self.multigrid = Multigrid(self.discretisation, host, self.stepping.multigrid,
                                       self.stepping.multigrid_cycle, colour_sweeps,
                                       coarse_cells=plan.coarse_levels())
        #: The CFL number of the next step (implicit steps ramp it, see Stepping).
        self.cfl = self.stepping.cfl
        #: RMS density residual of the first step (the reference of ramps and stops).
        self.first_residual: float | None = None
        self._best_residual, self._since_best = np.inf, 0  # stall detection
        self.reference_area = reference_area
        self.iteration = 0
        self.time = 0.0
        self.u = self._uniform(gas.free_stream)
        self._wall_flux = None
        self._forces = None  # wall_forces() of the current _wall_flux, once computed

    # ------------------------------------------------------------------ state
    def _uniform(self, primitive: np.ndarray):
        w = np.repeat(np.asarray(primitive, dtype=np.float64)[:, None], self.host.n_cells, axis=1)
        return self.backend.asarray(self.gas.to_conserved(w), self.dtype)

    def set_primitive(self, w: np.ndarray) -> None:
        """Set the state from primitive values ``(n_vars, n_cells)`` in the file's cell order."""
        w = np.asarray(w, dtype=np.float64)[:, self.host.cell_order]
        self.u = self.backend.asarray(self.gas.to_conserved(w), self.dtype)

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the state from conserved values in the file's cell order (exactly)."""
        self.u = self.backend.asarray(np.asarray(u)[:, self.host.cell_order], self.dtype)

    def conserved(self) -> np.ndarray:
        """Conserved state ``(n_vars, n_cells)`` on the host, in the file's cell order."""
        out = np.empty((self.gas.n_vars, self.host.n_cells), dtype=self.dtype)
        out[:, self.host.cell_order] = self.backend.to_host(self.u)
        return out

    def primitive(self) -> np.ndarray:
        """Primitive state ``(rho, u, p)`` on the host, in the file's cell order."""
        return self.gas.to_primitive(self.conserved().astype(np.float64))

    def centroids(self) -> np.ndarray:
        """Cell centroids ``(dim, n_cells)`` in the file's cell order."""
        out = np.empty_like(self.host.centroid)
        out[:, self.host.cell_order] = self.host.centroid
        return out

    # ------------------------------------------------------------------ stepping
    def rate(self, u):
        """``dU/dt = R(U) / V``."""
        return self.discretisation.residual(u) / self.discretisation.geometry.volume

    def time_step(self, u, speeds=None, cfl: float | None = None):
        """Per-cell (local) or global time step at the CFL number ``cfl`` (default: current).

        ``speeds``: the face wave speeds of ``u``, if already computed.
        """
        d = self.discretisation
        cfl = self.cfl if cfl is None else cfl
        dt = cfl * d.geometry.volume / d.spectral_radius(u, speeds)
        return dt if self.stepping.local_time_step else dt.min()

    def step(self, dt=None) -> np.ndarray:
        """Advance one step; return the RMS of ``dU/dt`` per variable (before the step).

        Parameters
        ----------
        dt : float, optional
            Global time step; by default from the CFL number.

        Raises
        ------
        SolverDivergedError
            If the new state is non-finite or has non-positive density or pressure
            (implicit steps first retry with smaller CFL numbers).
        """
        with np.errstate(all="ignore"):  # a bad state ends in one SolverDivergedError
            return self._step(dt)

    def _step(self, dt):
        norms, given = None, dt  # given: the caller's time step (None: the solver's own)
        if self.fused_implicit is not None and dt is None and self.stepping.local_time_step:
            u_new, norms, wall_flux = self._fused_implicit_step()
        elif self.lusgs is not None:
            u_new, r0, wall_flux, dt = self._implicit_step(dt)
        elif self.fused_steps is not None:
            if dt is None and not self.stepping.local_time_step:
                dt = self.time_step(self.u)
            u_new, norms, wall_flux = self._fused_step(dt)
        else:
            dt = self.time_step(self.u) if dt is None else dt
            rate, first = keeping_first(self.rate, lambda: self.discretisation.boundary_flux)
            u_new, r0 = self.integrator(self.u, rate, dt)
            wall_flux = first[0]
            self._check(self.gas.invalid(u_new), self.iteration + 1)
        if self.multigrid is not None and given is None:
            u_new = self.multigrid.correct(u_new, self.cfl)
        self.iteration += 1
        self.u = u_new
        self._wall_flux = wall_flux
        self._forces = None
        if any(b.outside is not None for b in self.discretisation.boundaries):
            lift = float(self.wall_forces()["total"].force @ self.gas.lift_direction)
            self.discretisation.circulation = circulation_of_lift(self.gas, lift)
        if not self.stepping.local_time_step:
            self.time += float(dt)
        if norms is None:
            xp = self.backend.xp
            norms = self.backend.to_host(xp.sqrt((r0.astype(np.float64) ** 2).mean(axis=1)))
        self._adapt(float(norms[0]))
        return norms

    def _fused_step(self, dt):
        """One explicit step in the fused kernels: ``(u_new, norms, wall_flux)``."""
        u_new, norms, bad_cell = self.fused_steps(self.u, self.cfl, dt,
                                                  limiter_input(self.discretisation))
        self._check_cell(bad_cell, self.iteration + 1)
        return u_new, norms, self.discretisation.boundary_flux

    def _fused_implicit_step(self):
        """One LU-SGS step in the fused kernels, retried at smaller CFL numbers if it
        fails: ``(u_new, norms, wall_flux)``."""
        limiter = limiter_input(self.discretisation)

        def attempt(cfl: float):
            u_new, norms, bad_cell = self.fused_implicit(self.u, cfl, limiter)
            return (u_new, norms, bad_cell), bad_cell is not None

        (u_new, norms, bad_cell), self.cfl = backing_off(attempt, self.cfl)
        self._check_cell(bad_cell, self.iteration + 1)
        return u_new, norms, self.discretisation.boundary_flux

    def _implicit_step(self, dt):
        """One LU-SGS or Newton-Krylov step, retried at smaller CFL numbers if it fails:
        ``(u_new, rate, wall_flux, dt)`` (``dt``: the time step it took)."""
        d = self.discretisation
        speeds = d.face_wave_speeds(self.u)  # for dt and the diagonal
        residual = d.residual(self.u)
        wall_flux = d.boundary_flux
        solve = self.newton or self.lusgs

        def attempt(cfl: float):
            step_dt = self.time_step(self.u, speeds, cfl) if dt is None else dt
            u_new = self.u + solve(self.u, residual, step_dt, speeds)
            bad = self.gas.invalid(u_new)
            return (u_new, bad, step_dt), bool(bad.any())

        # a given (global) time step is not the CFL number's to back off
        (u_new, bad, step_dt), self.cfl = backing_off(attempt, self.cfl, retry=dt is None)
        self._check(bad, self.iteration + 1)
        return u_new, residual / d.geometry.volume, wall_flux, step_dt

    def _adapt(self, density_residual: float) -> None:
        """Ramp the CFL number (implicit) and freeze the limiter as the residual falls."""
        if self.first_residual is None:
            self.first_residual = density_residual
        fall = density_residual / max(self.first_residual, 1e-300)
        cfl_max, frozen = self.stepping.cfl_max, self.stepping.cfl_frozen
        if frozen is not None and self.discretisation.limiter_ceiling is not None:
            cfl_max = frozen if cfl_max is None else min(cfl_max, frozen)
        if cfl_max is not None and self.lusgs is not None:
            self.cfl = ramped_cfl(self.stepping.cfl, self.cfl, fall, cfl_max)
        if density_residual < 0.9 * self._best_residual:
            self._best_residual, self._since_best = density_residual, 0
        else:
            self._since_best += 1
        freeze = self.stepping.freeze_limiter
        d = self.discretisation
        window = STALL_STEPS if self.lusgs is not None else EXPLICIT_STALL_STEPS
        stalled = self._since_best >= window
        if freeze is not None and fall <= freeze and stalled and d.limiter_ceiling is None:
            d.limiter_ceiling = d.limiter_values

    def advance_to(self, final_time: float) -> None:
        """Global time stepping up to ``final_time`` (the last step shortened to land on it)."""
        while self.time < final_time * (1 - 1e-12):
            dt = min(float(self.time_step(self.u).min()), final_time - self.time)
            self.step(self.backend.xp.asarray(dt, dtype=self.dtype))

    def _check(self, bad, iteration: int) -> None:
        """Raise :class:`SolverDivergedError` naming the first cell of the ``bad`` mask."""
        if bool(bad.any()):
            self._check_cell(int(self.backend.xp.argmax(bad)), iteration)

    def _check_cell(self, new: int | None, iteration: int) -> None:
        """Raise :class:`SolverDivergedError` naming cell ``new`` (plan order) unless None."""
        if new is not None:
            cell = int(self.host.cell_order[new])
            where = ", ".join(f"{x:.4g}" for x in self.host.centroid[:, new])
            raise SolverDivergedError(
                f"iteration {iteration}: the solution at cell {cell} (centroid {where}) is "
                "non-finite or has non-positive density or pressure; lower the CFL number or "
                "use order = 1 to start", iteration, cell)

    # ------------------------------------------------------------------ loads
    #: One process: it writes the outputs (see the partitioned solver for several).
    is_root = True

    @property
    def wall_markers(self) -> list[str]:
        """Markers with wall conditions: forces and Cp are reported on them."""
        return self.discretisation.wall_markers

    @property
    def circulation(self) -> float:
        """Circulation of the body seen by vortex-corrected far fields (checkpointed)."""
        return self.discretisation.circulation

    @circulation.setter
    def circulation(self, value: float) -> None:
        self.discretisation.circulation = value

    @property
    def has_loads(self) -> bool:
        """True once a step has been taken (wall forces and Cp are then known)."""
        return self._wall_flux is not None

    def wall_forces(self) -> dict[str, Forces]:
        """Forces on every wall marker, and ``"total"``, at the start of the last step.

        Computed once per step (the circulation update, the history and the progress
        bar all ask for them), summed on the device.
        """
        if self._forces is None:
            self._forces = self._integrate_wall_forces()
        return self._forces

    def _integrate_wall_forces(self) -> dict[str, Forces]:
        # summed on the device: a few numbers per step come back, not every boundary flux
        return wall_forces(self._wall_flux, self.host, self.gas, self.wall_markers,
                           self.reference_area, to_host=self.backend.to_host)

    def face_layout(self) -> FVGeometry:
        """The laid-out geometry (faces in plan order)."""
        return self.host

    def surface_pressure(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """Face centres ``(dim, m)`` and pressure coefficients of one wall marker."""
        flux = self.backend.to_host(self._wall_flux).astype(np.float64)
        return surface_pressure(flux, self.host, self.gas, marker)
