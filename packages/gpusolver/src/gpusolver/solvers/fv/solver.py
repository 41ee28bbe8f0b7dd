"""The finite-volume solver of a whole mesh or of mesh parts: state, time stepping
(explicit Runge-Kutta, LU-SGS, Newton-Krylov, multigrid), loads, divergence checks.

A whole mesh is a run of one part, as in PyFR: :class:`Solver` always holds a list of
local parts (:class:`~gpusolver.layout.parts.PartLayout`), each with its own
discretisation and state, and a transport (:mod:`gpusolver.parallel`) that refreshes
their halos and sums what a step reports over all parts. Given a mesh, it holds one part
with every cell its own and no halo (:func:`~gpusolver.layout.parts.whole_mesh_layout`);
given the parts of a partitioned plan (``meshorder reorder --partitions N``), those parts:
every part in one process with the ``loopback`` transport, one per MPI rank with
``mpi-host`` or ``nccl``. One step driver per integrator serves both.

Explicit Runge-Kutta steps give the one-part answer at every step. LU-SGS steps sweep
each part's own cells with the halo's change taken as zero: Gauss-Seidel inside a part,
block Jacobi between parts (the coupling the LU-SGS papers use across GPUs); the steady
state is the same, the steps to it differ a little from one part's. Multigrid on parts
agglomerates each part's own cells apart and exchanges every coarse level's halo
(:class:`~gpusolver.solvers.fv.multigrid.Multigrid`). Newton-Krylov, periodic boundaries
and vortex far fields run on one part so far.

On the cupy backend steps run in fused kernels: explicit ones recorded as CUDA graphs
with their exchanges (:mod:`gpusolver.solvers.fv.fused_parts`), LU-SGS ones as one graph
per part and kind of step.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.errors import ConfigError, SingularMatrixError
from gpusolver.integrators import IMPLICIT, INTEGRATORS
from gpusolver.integrators.cfl import ResidualWatch, backing_off, ramped_cfl
from gpusolver.integrators.explicit import TABLEAUX, keeping_first, runge_kutta
from gpusolver.integrators.newton_krylov import (
    DEFAULT_KRYLOV_VECTORS,
    DEFAULT_LINEAR_TOLERANCE,
    NewtonKrylov,
)
from gpusolver.integrators.relaxation import MAX_UPDATE, positive_stage, relaxed_update
from gpusolver.layout.geometry import FVGeometry, build_geometry, colour_interior
from gpusolver.layout.parts import PartLayout, layout_of_part, whole_mesh_layout
from gpusolver.layout.strategies import STRATEGIES as ALL_STRATEGIES
from gpusolver.layout.wall_distance import wall_distance
from gpusolver.monitors.forces import skin_friction
from gpusolver.monitors.quality import QUALITY, cell_quality, residual_note
from gpusolver.parallel import Loopback, halo_lists
from gpusolver.physics.boundary import BoundarySpec
from gpusolver.physics.gas import Gas
from gpusolver.physics.vortex_farfield import circulation_of_lift
from gpusolver.solvers.fv.accumulate import STRATEGIES
from gpusolver.solvers.fv.discretisation import Discretisation, Scheme
from gpusolver.solvers.fv.fused import ACCUMULATION, FusedResidual, limiter_input
from gpusolver.solvers.fv.fused_parts import FusedPartsRungeKutta
from gpusolver.solvers.fv.jacobian import SparseLU
from gpusolver.solvers.fv.lusgs import (
    LUSGS,
    OMEGA,
    SWEEPS,
    FusedLUSGS,
    line_sweeps,
    own_levels,
    sweep_levels,
)
from gpusolver.solvers.fv.multigrid import AUTO_CYCLE, Multigrid, PartHalos, refined_parents
from gpusolver.solvers.fv.turbulence import SOLVERS as TURBULENCE_SOLVERS
from gpusolver.solvers.fv.turbulence import MenterSSTFV, SpalartAllmarasFV, TurbulenceFV
from gpusolver.solvers.parts import Parts, PerPart, halo_sends, shared
from meshorder import Mesh
from meshorder.pipeline import DEFAULT_FACES, PlanOptions, make_plan
from meshorder.plan import Plan, PlanPart


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
        :data:`EXPLICIT_STALL_STEPS` explicit) steps (limiter chatter), or, implicit,
        wherever it stands when it has found no new lowest in :data:`STALL_BACK_OFF`
        steps (before the CFL number is cut): from then on each cell's limiter values
        may fall (new extrema are still limited) but never rise again
        (``Discretisation.limiter_ceiling``); None never freezes.
    preconditioner : str
        Newton-Krylov only: ``lu`` (sparse LU of the first-order operator) or
        ``lusgs`` (matrix-free sweeps), see :data:`PRECONDITIONERS`.
    krylov_vectors : int
        Newton-Krylov only: most Krylov vectors per step.
    linear_tolerance : float
        Newton-Krylov only: FGMRES stops once the linear residual has fallen by this
        factor (or at ``krylov_vectors``). On TMR's NACA 0012 at 0 degrees (SA-neg) the
        default's inexact steps grew the residual about 5% a step at CFL numbers near
        1,000, held 7 orders down; at 1e-5 with 100 vectors it fell steadily at 1e4. A
        rise or stall at ``cfl_max`` tightens it so once
        (:meth:`~gpusolver.integrators.newton_krylov.NewtonKrylov.tighten`).
    preconditioner_every : int
        Newton-Krylov only: steps one preconditioner (for ``lu`` a factorisation) serves
        at most; it is made anew sooner when the mean time step has changed by more than
        a factor of 2 since (:class:`~gpusolver.integrators.newton_krylov.NewtonKrylov`).
    sweeps : str
        LU-SGS levels (:data:`~gpusolver.solvers.fv.lusgs.SWEEPS`): ``hyperplanes``
        (the sequential sweep in plan order) or ``colours`` (multicolour sweeps: a few
        wide levels, the fast choice on GPUs); a given plan must hold levels of this
        kind, or none.
    multigrid : int
        ``lusgs`` only: most coarse levels of agglomeration multigrid corrections after
        each step (:class:`~gpusolver.solvers.fv.multigrid.Multigrid`); 0: none.
    multigrid_cycle : str
        ``v`` or ``w`` (:data:`~gpusolver.solvers.fv.multigrid.CYCLES`), or ``auto``: V,
        and on 2-D meshes W from the first stall of the residual (:data:`STALL_BACK_OFF`).
    cfl_frozen : float or None
        Implicit: once the limiter is frozen from above, the CFL number stays at most
        this (large steps keep the limiter falling, and the residual with it, on a 3D
        wing); None: ``cfl_max`` throughout.
    turbulence_cfl : float
        The turbulence model's steps take the mean flow's CFL number up to this. Its
        source's production is explicit: on TMR's flat plate (35x25) its steps at the
        mean flow's CFL of 1e4 locked both into a cycle 3 orders down; capped at 100
        they converged (10: a tenth of the speed).
    turbulence_steps : int
        The turbulence model's implicit steps per step of the mean flow (each at the
        mean flow of the step's start): more steps at the capped CFL number instead of
        larger ones (the CFL number of SA-neg's steps cannot grow past 100 without the
        cycle above). On the 35x25 plate with SA-neg the density residual after 300
        steps fell from 4.7e-7 (one) to 2.1e-8 (three).
    turbulence_solver : str
        How the turbulence model's implicit steps solve their matrix
        (:data:`~gpusolver.solvers.fv.turbulence.SOLVERS`): ``lu``, ``sweeps`` or
        ``auto`` (``lu`` in 2D, ``sweeps`` in 3D).
    max_update : float or None
        LU-SGS (Newton steps are taken whole): the largest change of a cell's density
        and total energy in one step, as a fraction of their values; larger changes are
        scaled back per cell, as are updates to a non-positive density or pressure
        (:mod:`gpusolver.integrators.relaxation`); None: positivity only.
    lusgs_omega : float
        LU-SGS (also the coarse levels' and the Newton-Krylov preconditioner's): the
        over-relaxation of the convective spectral radius in the implicit operator
        (:data:`~gpusolver.solvers.fv.lusgs.OMEGA`). Larger values damp more: JST on
        TMR's stretched 225x65 C-grid fell 4.5 orders by step 2,500 at 3 (0.65 in 5,000
        at 1.5), but the regular NACA 0012 took twice the steps (2,014 against 1,001).
    line_implicit : bool
        LU-SGS (also the Newton-Krylov preconditioner ``lusgs``): sweep over colours of
        lines of strongly coupled cells (:func:`~gpusolver.solvers.fv.lusgs.line_sweeps`),
        each line's cells solved together; the coarse levels and the turbulence model
        sweep single cells.
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
    multigrid_cycle: str = AUTO_CYCLE
    cfl_frozen: float | None = None
    turbulence_cfl: float = 100.0
    max_update: float | None = MAX_UPDATE
    lusgs_omega: float = OMEGA
    preconditioner_every: int = 1
    turbulence_steps: int = 1
    turbulence_solver: str = "auto"
    linear_tolerance: float = DEFAULT_LINEAR_TOLERANCE
    line_implicit: bool = False


#: RANS model name -> its finite-volume discretisation.
TURBULENCE_MODELS = {"sa-neg": SpalartAllmarasFV, "sst": MenterSSTFV}
#: Every turbulence model's scalars (a checkpoint's arrays of another model are refused).
ALL_TURBULENCE_SCALARS = frozenset(name for model in TURBULENCE_MODELS.values()
                                   for name in model.names)

#: Newton-Krylov preconditioner name -> what builds it from the solver's LU-SGS sweeps.
PRECONDITIONERS = {"lu": lambda lusgs: SparseLU(lusgs.discretisation),
                   "lusgs": lambda lusgs: lusgs}


#: The residual has stalled when it has not reached a new low (by 10%) in this many
#: implicit steps, or in :data:`EXPLICIT_STALL_STEPS` explicit ones.
STALL_STEPS = 10
EXPLICIT_STALL_STEPS = 500

#: Implicit steps: a density residual this many times its lowest so far means the steps
#: are too large for this mesh (a limit cycle or a divergence starting): the CFL number
#: is halved and its ramp capped there (:meth:`Solver._adapt`), each time in one line of
#: the log.
RISE = 10.0

#: Implicit steps: so many steps without a new lowest density residual are a stall (a
#: limit cycle; a slow but steady fall keeps finding new lowest values): the CFL number
#: is halved and its ramp capped there too, except at the first stall of a 2-D run whose
#: multigrid cycle is ``auto``: that one turns the cycle W instead. On gmsh's
#: wing-and-flap mesh a window of 100 steps that asked for a 10% fall halved a slowly
#: converging run's CFL number six times.
STALL_BACK_OFF = 200

#: Implicit steps with multigrid: a stall whose residual flips up and down from step to
#: step (:meth:`~gpusolver.integrators.cfl.ResidualWatch.flipping`) halves the weight of
#: the coarse levels' correction (:meth:`~gpusolver.solvers.fv.multigrid.Multigrid.damp`)
#: instead of the CFL number, down to this weight; then the CFL number is halved again.
#: On a 47,145-cell SA-neg ONERA M6 (10 prism layers) the residual held 1.9 orders down,
#: the lift flipping between 0.2222 and 0.2235 each step, while four CFL cuts (442 to 39)
#: changed nothing; without the coarse levels it fell two orders in 150 steps.
MIN_COARSE_WEIGHT = 1 / 16

#: RANS: a turbulence model's residual (any of its scalars') its ``RUNAWAY_RISE`` times
#: above its lowest so far cuts the model's CFL cap this many times (to no less than the
#: first CFL number), each time in one line of the log; the cap grows back by
#: :data:`~gpusolver.integrators.cfl.CEILING_GROWTH` at each new lowest, up to
#: ``turbulence_cfl``. On the NACA 0012 at 15 degrees at ``turbulence_cfl = 1e4``
#: nu_tilde's residual grew 64-fold a step from step 9, and the mean flow followed it at
#: step 20; with three cuts it converged.
TURBULENCE_BACK_OFF = 10.0
#: ``[run] strategy`` that times the fused residual's accumulations at set-up.
AUTO_STRATEGY = "auto"
#: The accumulations ``auto`` chooses from (``colour`` needs a plan with face colours and
#: faces in colour order: name it to use it).
AUTO_STRATEGIES = ("atomic", "reduce")
#: The threads per block ``auto`` chooses from, with each accumulation (at most the
#: kernels' ``__launch_bounds__(256)``).
AUTO_BLOCKS = (64, 128, 256)
#: Timed residuals per accumulation and block size (the median is compared).
AUTO_REPEATS = 5


def plan_options(stepping: Stepping, strategy: str) -> PlanOptions:
    """What a plan made for these settings holds: face colours for the ``colour``
    strategy, the LU-SGS sweeps' levels (hyperplanes or colours) and coarse levels as
    the stepping asks."""
    implicit = stepping.integrator in IMPLICIT
    multigrid = stepping.multigrid if stepping.integrator == "lusgs" else 0
    return PlanOptions(colour=strategy == "colour",
                       hyperplanes=implicit and stepping.sweeps == "hyperplanes",
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


class Solver(Parts):
    """Cell-centred finite-volume solver on a whole mesh or on mesh parts.

    Parameters
    ----------
    mesh : Mesh or list of meshorder.plan.PlanPart
        The whole mesh (one part), or the parts this process computes
        (:meth:`meshorder.Plan.part` or :func:`meshorder.plan.read_plan_part`): one under
        MPI, every part with the ``loopback`` transport. Parts never need the whole mesh.
    gas : Gas
    boundaries : dict of str to BoundarySpec or str or dict
        Condition per marker name (case-file values are accepted).
    scheme : Scheme, optional
    stepping : Stepping, optional
    plan : Plan, optional
        Whole mesh: must belong to ``mesh``; when omitted one is made with meshorder's
        defaults (plus face colours for the ``colour`` strategy).
    strategy : str
        ``atomic``, ``colour`` or ``reduce`` on a whole mesh, or ``auto``: the fastest
        of :data:`AUTO_STRATEGIES` with the fastest threads per block of
        :data:`AUTO_BLOCKS` for the fused residual, timed at set-up
        (:meth:`_choose_strategy`; array code: ``atomic``); parts accumulate with atomics
        whatever this says.
    backend : str
        ``auto``, ``numpy`` or ``cupy``.
    precision : str
        ``fp64`` or ``fp32``.
    reference_area : float
        Area (length in 2D) that force coefficients are divided by.
    kernels : str
        ``fused`` (CUDA kernels where they apply, and steps recorded as CUDA graphs) or
        ``arrays`` (array code); see
        :data:`gpusolver.solvers.fv.discretisation.KERNELS`.
    transport : callable, optional
        Parts: makes the transport from the parts' halo lists:
        :class:`~gpusolver.parallel.Loopback` (default: every part in this process) or
        one of :func:`~gpusolver.parallel.make_transport` (this rank's part).
    overlap : bool
        Parts, fused explicit steps: compute each part's interior while its halo is in
        flight.
    faces : str
        Parts: meshorder's face order inside each part
        (:func:`~gpusolver.layout.parts.layout_of_part`).
    turbulence : str
        ``none`` (laminar or inviscid) or a RANS model of :data:`TURBULENCE_MODELS`
        (Navier-Stokes only; its steps in array code around the mean flow's residual,
        which runs in the fused kernels where the discretisation has them).

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> solver = Solver(grid_mesh(4, 4), Gas(dim=2, mach=0.5),
    ...                 {"left": "farfield", "right": "farfield",
    ...                  "bottom": "farfield", "top": "farfield"}, backend="numpy")
    >>> bool(solver.step().max() < 1e-12)
    True
    """

    def __init__(self, mesh: Mesh | list[PlanPart], gas: Gas, boundaries: dict, *,
                 scheme: Scheme | None = None, stepping: Stepping | None = None,
                 plan: Plan | None = None, strategy: str = "atomic", backend: str = "auto",
                 precision: str = "fp64", reference_area: float = 1.0,
                 kernels: str = "fused", transport=None,
                 overlap: bool = True, faces: str = DEFAULT_FACES, turbulence: str = "none"):
        #: ``strategy = "auto"``: the fused residual's seconds per accumulation and
        #: threads per block tried, ``{(strategy, block): seconds}``
        #: (:meth:`_choose_strategy`), else None.
        self.strategy_times = None
        self._auto_strategy = strategy == AUTO_STRATEGY
        if self._auto_strategy:
            strategy = "atomic"
        if strategy in ALL_STRATEGIES and strategy not in STRATEGIES:
            raise ConfigError(f"strategy {strategy!r} runs in the face-flux kernels only "
                              f"(gpusolver bench); the solver runs: {', '.join(STRATEGIES)}")
        STRATEGIES.lookup(strategy)
        if precision not in PRECISIONS:
            raise ConfigError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
        self.stepping = stepping = stepping or Stepping()
        implicit = stepping.integrator in IMPLICIT
        if not implicit:
            INTEGRATORS.lookup(stepping.integrator)
        #: The explicit method's stages (None: implicit steps).
        self.stages = None if implicit else TABLEAUX[stepping.integrator]
        specs = {name: value if isinstance(value, BoundarySpec) else BoundarySpec.parse(name, value)
                 for name, value in boundaries.items()}
        colour_sweeps = _colour_sweeps(stepping, plan)
        self.backend = get_backend(backend)
        if isinstance(mesh, Mesh):
            if plan is None:  # library use; gpusolver run hands over the plan it made
                plan = make_plan(mesh, plan_options(stepping, strategy))
            host = build_geometry(mesh, plan, self.backend)
            if strategy == "colour":
                host = colour_interior(host, plan)
            self.layouts = [whole_mesh_layout(host, plan.face_facet[host.n_interior:])]
            self.local, self.parts, send = [0], [], {}
        else:
            check_parts(stepping, specs)
            strategy = "atomic"
            self.layouts = [layout_of_part(part, faces, self.backend) for part in mesh]
            self.local, self.parts, send = [part.mesh.part for part in mesh], mesh, halo_sends(mesh)
        # implicit steps on parts: each part's sweep levels coloured on a thread (NumPy
        # lets go of the GIL) beside the discretisations' and multigrid's set-up
        self._level_futures = None
        if not isinstance(mesh, Mesh) and implicit:
            beside = ThreadPoolExecutor(max_workers=1)
            self._level_futures = [beside.submit(own_levels, layout.geometry, layout.n_own,
                                                 colour_sweeps) for layout in self.layouts]
            beside.shutdown(wait=False)  # the thread ends with its last colouring
        #: The whole mesh and its plan (None on parts).
        self.mesh, self.plan = (mesh, plan) if isinstance(mesh, Mesh) else (None, None)
        self.gas, self.reference_area = gas, reference_area
        #: Number of cells of the whole mesh.
        self.n_cells = mesh.n_cells if self.mesh is not None else self.parts[0].n_cells
        self.halos = halo_lists(dict(zip(self.local, self.layouts, strict=True)), send)
        self.transport = (transport or Loopback)(self.halos)
        self.dtype = np.dtype(PRECISIONS[precision])
        self.overlap = overlap
        self.discretisations = [
            Discretisation(layout.geometry, gas, scheme or Scheme(),
                           specs if self.mesh is not None else  # a part: its markers
                           {name: specs[name] for name in layout.geometry.markers},
                           strategy, self.backend, self.dtype, kernels)
            for layout in self.layouts]
        if self._auto_strategy:
            self._choose_strategy()
        self.wall_markers = [name for name, spec in specs.items() if spec.condition.wall]
        self._no_slip_walls = [name for name, spec in specs.items()
                               if spec.condition.viscous_wall]
        self._colour_sweeps = colour_sweeps
        #: The turbulence model of each local part (None: none).
        self.turbulence = self._turbulence(turbulence, specs)
        #: Per scalar of the turbulence model, the RMS of its ``R / V`` at the last
        #: step's start.
        self.turbulence_residuals = ({} if self.turbulence is None
                                     else dict.fromkeys(self.turbulence[0].names, 0.0))
        #: Cells (of this process) whose update the last implicit step relaxed
        #: (:mod:`gpusolver.integrators.relaxation`).
        self.relaxed_cells = 0
        # the circulation of vortex far fields follows the lift after every step
        self._vortex_far_field = any(b.outside is not None for d in self.discretisations
                                     for b in d.boundaries)
        self._build_steps()
        # the states' arithmetic runs on the GPU, where nothing warns (RANS: host solves)
        self._quiet_arithmetic = self.backend.name == "cupy" and self.turbulence is None
        #: The CFL number of the next step (implicit steps ramp it, see Stepping).
        self.cfl = stepping.cfl
        self._best_residual, self._since_best = np.inf, 0  # stall detection
        # the CFL back-offs' watches: the density residual's and the CFL ramp's cap
        # (:meth:`_back_off`), the turbulence model's residuals and its CFL number's cap
        # (:meth:`_turbulence_back_off`)
        self._mean_watch = ResidualWatch(RISE, np.inf, STALL_BACK_OFF)
        self._turbulence_watch = ResidualWatch(
            np.inf if self.turbulence is None else self.turbulence[0].RUNAWAY_RISE or np.inf,
            stepping.turbulence_cfl)
        #: Physical time (global time steps only).
        self.time = 0.0
        self.states = [self._uniform(layout) for layout in self.layouts]
        self._start_loads()
        if self.strategy_times:
            self.notes.append(self._strategy_note())

    def _build_steps(self) -> None:
        """The step drivers of the discretisations as they are (fused or array code; with
        a turbulence model, fused LU-SGS steps, whose mass fluxes the model reads, or
        array code around the fused residual)."""
        stepping, d = self.stepping, self.discretisations
        fused = all(x.fused is not None for x in d)
        for x, layout in zip(d, self.layouts, strict=True):
            if x.fused is not None:  # the update kernel advances the own cells only
                x.fused.n_active = layout.n_own
        # first: on parts the sweep levels are still being coloured on a thread
        self._build_multigrid()
        #: LU-SGS sweeps of each local part's own cells (None: explicit steps).
        self.part_sweeps = None
        if stepping.integrator in IMPLICIT:
            lines = self._part_lines if stepping.line_implicit else [None] * len(d)
            self.part_sweeps = [
                LUSGS(x, layout.geometry, stepping.lusgs_omega, plan=self.plan,
                      levels=self._levels(layout), lines=part_lines)
                for x, layout, part_lines in zip(d, self.layouts, lines, strict=True)]
        #: Explicit steps of every local part in the fused kernels (None: array code).
        self.fused_steps = (FusedPartsRungeKutta([x.fused for x in d], self.layouts,
                                                 self.stages, self.transport, self.overlap)
                            if fused and self.stages is not None and self.turbulence is None
                            else None)
        #: Whole LU-SGS steps of each local part in the fused kernels (None: array code).
        self.fused_implicit = None
        if stepping.integrator == "lusgs" and fused and all(sweeps.kernels is not None
                                                            for sweeps in self.part_sweeps):
            self.fused_implicit = [FusedLUSGS(x.fused, s.kernels, max_update=stepping.max_update)
                                   for x, s in zip(d, self.part_sweeps, strict=True)]
        if self.turbulence is not None and self._turbulence_sweeps():
            for i, (model, layout) in enumerate(zip(self.turbulence, self.layouts,
                                                    strict=True)):
                levels = (self.part_sweeps[i].point_levels if self.part_sweeps else
                          self._levels(layout) or sweep_levels(layout.geometry, self.plan,
                                                               self._colour_sweeps))
                model.use_sweeps(levels, self.part_sweeps[i].point_tables()
                                 if self.part_sweeps else None)
        elif self.turbulence is not None:
            for model in self.turbulence:
                model.use_exact()
        if self.turbulence is not None and self.fused_implicit is not None:
            # a fused step takes the eddy viscosity of its start from its own gradients
            for steps, model in zip(self.fused_implicit, self.turbulence, strict=True):
                steps.eddy = None if model.kernels is None else model.kernels.eddy_pass
        self.newton = None
        if stepping.integrator == "newton-krylov":
            if stepping.preconditioner not in PRECONDITIONERS:
                raise ConfigError(f"unknown preconditioner {stepping.preconditioner!r}; "
                                  f"valid: {', '.join(PRECONDITIONERS)}")
            self.newton = NewtonKrylov(d[0], PRECONDITIONERS[stepping.preconditioner](
                self.part_sweeps[0]), max_vectors=stepping.krylov_vectors,
                tolerance=stepping.linear_tolerance, refresh_every=stepping.preconditioner_every)

    def _build_multigrid(self) -> None:
        """The coarse levels of the mean flow (None: none)."""
        stepping, d = self.stepping, self.discretisations
        self.multigrid = None
        if stepping.multigrid < 0:
            raise ConfigError(f"multigrid must be a number of coarse levels (0: none), not "
                              f"{stepping.multigrid}")
        if stepping.multigrid:
            if stepping.integrator != "lusgs" or not stepping.local_time_step:
                raise ConfigError("multigrid corrects LU-SGS steps: set time_integrator = "
                                  "'lusgs' with local_time_step = true, or multigrid = 0")
            whole = self.mesh is not None  # the plan's levels; parts agglomerate theirs
            parts = (None if whole else
                     PartHalos([layout.n_own for layout in self.layouts], self.halos,
                               self.transport))
            # parts refined on their ranks: the first coarse levels are its generations
            parents = ([refined_parents(layout.cells[:layout.n_own], part.children)
                        for layout, part in zip(self.layouts, self.parts, strict=True)]
                       if not whole and all(part.children > 1 for part in self.parts)
                       else None)
            self.multigrid = Multigrid(d, [layout.geometry for layout in self.layouts],
                                       stepping.multigrid, stepping.multigrid_cycle,
                                       self._colour_sweeps,
                                       coarse_cells=self.plan.coarse_levels() if whole else None,
                                       coarse_colours=(self.plan.coarse_colours() if whole
                                                       else None),
                                       max_update=stepping.max_update, parts=parts,
                                       omega=stepping.lusgs_omega,
                                       turbulent=self.turbulence is not None,
                                       parents=parents)

    @functools.cached_property
    def _part_lines(self) -> list:
        """Each local part's levels of implicit lines (:func:`line_sweeps`), made once for
        every build of the steps."""
        return [line_sweeps(layout.geometry, layout.n_own) for layout in self.layouts]

    def _turbulence(self, model: str, specs: dict) -> list[TurbulenceFV] | None:
        """The model of each local part, the wall distance from every part's walls (the
        discretisations run array code: see the constructor)."""
        if model == "none":
            return None
        if model not in TURBULENCE_MODELS:
            raise ConfigError(f"unknown turbulence model {model!r}; valid: none, "
                              f"{', '.join(TURBULENCE_MODELS)}")
        if self.gas.reynolds is None:
            raise ConfigError(f"turbulence = {model!r} needs equations = 'navier-stokes'")
        walls = [name for name, spec in specs.items() if spec.condition.viscous_wall]
        points = ([self.mesh.points] if self.mesh is not None
                  else [part.mesh.mesh.points for part in self.parts])
        mine = np.concatenate([_wall_corners(layout, walls, p) for layout, p
                               in zip(self.layouts, points, strict=True)])
        faces = np.concatenate(self.transport.everyone(mine))
        models = []
        for d, layout in zip(self.discretisations, self.layouts, strict=True):
            distance = wall_distance(layout.geometry.centroid.T, faces,
                                     self.backend if self.backend.name == "cupy" else None)
            models.append(TURBULENCE_MODELS[model](d, distance))
            models[-1].n_own = layout.n_own
        return models

    def _turbulence_sweeps(self) -> bool:
        """Whether the turbulence model's steps sweep (else: the exact solve)."""
        solver = self.stepping.turbulence_solver
        if solver not in TURBULENCE_SOLVERS:
            raise ConfigError(f"unknown turbulence_solver {solver!r}; valid: "
                              f"{', '.join(TURBULENCE_SOLVERS)}")
        return solver == "sweeps" or (solver == "auto" and self.gas.dim == 3)

    def _levels(self, layout: PartLayout):
        """A part's sweep levels over its own cells; None on the whole mesh (its plan's
        levels, or levels made there)."""
        if self.mesh is not None:
            return None
        if self._level_futures is not None:
            part = next(i for i, mine in enumerate(self.layouts) if mine is layout)
            return self._level_futures[part].result()
        return own_levels(layout.geometry, layout.n_own, self._colour_sweeps)

    def use_transport(self, transport) -> None:
        """As :meth:`Parts.use_transport`; multigrid on parts is rebuilt on it (its coarse
        levels exchange through siblings of the transport)."""
        super().use_transport(transport)
        if self.multigrid is not None and self.mesh is None:
            self.multigrid = None  # its recorded cycles go before the old transport
            self._build_steps()

    def fuse(self) -> None:
        """Take steps in the fused kernels (on the numpy backend compiled for the CPU: how
        the tests check the GPU path without a GPU); each part's update kernel advances
        its own cells only."""
        for d, layout in zip(self.discretisations, self.layouts, strict=True):
            if d.fused is None:
                d.fused = FusedResidual(d, layout.geometry, d.accumulator_name)
        if self._auto_strategy:
            self._choose_strategy()
            if self.strategy_times:
                self.notes.append(self._strategy_note())
        self._build_steps()

    def _choose_strategy(self) -> None:
        """``strategy = "auto"`` on a whole mesh in the fused kernels: time the residual of
        the free stream with each accumulation of :data:`AUTO_STRATEGIES` and threads per
        block of :data:`AUTO_BLOCKS` and keep the fastest pair (:attr:`strategy_times`;
        :meth:`_strategy_note` is the log's line). Runs before the step drivers and a
        turbulence model take the fused residual."""
        d, layout = self.discretisations[0], self.layouts[0]
        if self.mesh is None or d.fused is None:
            return
        state, built, times = self._uniform(layout), {}, {}
        for name in AUTO_STRATEGIES:
            d.fused = built[name] = (d.fused if d.fused.accumulation == ACCUMULATION[name]
                                     else FusedResidual(d, layout.geometry, name))
            for block in AUTO_BLOCKS:
                d.fused.block = block
                times[name, block] = self.backend.median_seconds(lambda: d.residual(state),
                                                                 AUTO_REPEATS, warmup=1)
        name, block = min(times, key=times.get)
        d.fused, self.strategy_times = built[name], times
        d.fused.block = block

    def _strategy_note(self) -> str:
        """The log's line on what ``strategy = "auto"`` measured and kept."""
        times = self.strategy_times
        name, block = min(times, key=times.get)
        return ("strategy auto: the fused residual took " + ", ".join(
            f"{t * 1e3:.4g} ms ({strategy}, {threads})" for (strategy, threads), t
            in times.items()) + f" in {self.dtype.name}; {name} with {block} threads per "
            "block kept")

    # ------------------------------------------------------------------ state
    def _uniform(self, layout: PartLayout):
        w = np.repeat(np.asarray(self.gas.free_stream, dtype=np.float64)[:, None],
                      layout.geometry.n_cells, axis=1)
        return self.backend.asarray(self.gas.to_conserved(w), self.dtype)

    @property
    def u(self):
        """The state ``(n_vars, n_cells)`` of the one local part, in plan order."""
        (state,) = self.states
        return state

    @u.setter
    def u(self, value) -> None:
        self.states = [value]

    @property
    def host(self) -> FVGeometry:
        """The laid-out geometry of the one local part (the whole mesh: faces in plan
        order)."""
        (layout,) = self.layouts
        return layout.geometry

    @property
    def lusgs(self) -> LUSGS | None:
        """The LU-SGS sweeps of the one local part (None: explicit steps)."""
        if self.part_sweeps is None:
            return None
        (sweeps,) = self.part_sweeps
        return sweeps

    @property
    def discretisation(self) -> Discretisation:
        """The discretisation of the one local part."""
        (d,) = self.discretisations
        return d

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the state from conserved values of every cell in the file's cell order
        (exactly)."""
        self._gathered = None
        self.states = [self.backend.asarray(np.asarray(u)[:, layout.file_cells], self.dtype)
                       for layout in self.layouts]

    def set_primitive(self, w: np.ndarray) -> None:
        """Set the state from primitive values ``(n_vars, n_cells)`` in the file's cell order."""
        self.set_conserved(self.gas.to_conserved(np.asarray(w, dtype=np.float64)))

    def primitive(self) -> np.ndarray:
        """Primitive state ``(rho, u, p)`` of every cell, in the file's cell order."""
        return self.gas.to_primitive(self.conserved().astype(np.float64))

    def centroids(self) -> np.ndarray:
        """Cell centroids ``(dim, n_cells)`` of every cell, in the file's cell order."""
        return self._gather_cells([layout.geometry.centroid for layout in self.layouts])

    # ------------------------------------------------------------------ stepping
    def rate(self, u):
        """``dU/dt = R(U) / V`` of the one local part."""
        return self.discretisation.residual(u) / self.discretisation.geometry.volume

    def time_step(self, u, speeds=None, cfl: float | None = None):
        """Per-cell (local) or global time step at the CFL number ``cfl`` (default:
        current) of the state ``u`` of the one local part.

        ``speeds``: the face wave speeds of ``u``, if already computed.
        """
        dt = _cell_steps(self.discretisation, u, self.cfl if cfl is None else cfl, speeds)
        return dt if self.stepping.local_time_step else self._global_minimum([dt])

    def _global_minimum(self, dts: list):
        """The least of the own cells' time steps ``dts`` (per local part) over all parts,
        as a scalar array on the device."""
        xp = self.backend.xp
        local = min(float(dt[:layout.n_own].min())
                    for dt, layout in zip(dts, self.layouts, strict=True))
        return xp.asarray(float(self.transport.minimum(np.array([local]))[0]), self.dtype)

    def _time_steps(self, speeds: list | None = None) -> PerPart:
        """Every local part's time steps at its state and the CFL number (local, or the
        global one: the least over the own cells of every part)."""
        speeds = speeds or [None] * len(self.states)
        dts = [_cell_steps(d, u, self.cfl, s)
               for d, u, s in zip(self.discretisations, self.states, speeds, strict=True)]
        if self.stepping.local_time_step:
            return PerPart(dts)
        return PerPart([self._global_minimum(dts)] * len(dts))

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
        if self._quiet_arithmetic:  # CuPy arithmetic never warns (and this costs ~2 us)
            return self._step(dt)
        with np.errstate(all="ignore"):  # a bad state ends in one SolverDivergedError
            return self._step(dt)

    def _step(self, dt):
        if self.fused_steps is None:  # the fused steps exchange inside
            # before the eddy viscosity too (fused steps leave a part's halo as it was)
            self.transport.exchange(self.states)
        if self.turbulence is None:
            return self._mean_flow_step(dt)
        # the step's start, copied where anything may write into its buffer before the
        # model's step: the multigrid kernels (each step's state into the buffer of the
        # last), a part's halo exchange, array code; a fused LU-SGS step writes the other
        keep = self.multigrid is not None or self.mesh is None or not self._fused_implicit(dt)
        starts = [u.copy() if keep else u for u in self.states]
        if not (self._fused_implicit(dt) and self.fused_implicit[0].eddy is not None):
            for model, u in zip(self.turbulence, starts, strict=True):
                model.set_eddy_viscosity(u)
        norms = self._mean_flow_step(dt)
        cell_steps = self._turbulence_time_steps(starts, fused=self._fused_implicit(dt))
        for sub_step in range(self.stepping.turbulence_steps):
            self.transport.exchange([model.values for model in self.turbulence])
            for model, d, u, steps in zip(self.turbulence, self.discretisations, starts,
                                          cell_steps, strict=True):
                # the first sub-step factorises (one factorisation serves them all) and
                # sums the residuals of the step's start
                model.step(u, d.mass_flux, steps, new_mean_flow=sub_step == 0)
        names = self.turbulence[0].names
        reports = [model.step_report() for model in self.turbulence]
        local = self._bad_flags([bad for _, bad in reports], len(names))
        local[self.transport.n_parts:] = sum(squares for squares, _ in reports)
        total = self.transport.sum(local)  # one sum: the bad cells and the squares
        self._raise_if_bad(total[:self.transport.n_parts],
                           f"has a non-finite or run-away {' or '.join(names)} after the "
                           "model's step",
                           counted=True)
        norms_of_model = np.sqrt(total[self.transport.n_parts:] / self.n_cells)
        self.turbulence_residuals = dict(zip(names, norms_of_model.tolist(), strict=True))
        self._turbulence_back_off(norms_of_model)
        return norms

    def _fused_implicit(self, dt) -> bool:
        """Whether a step of time step ``dt`` (None: the solver's own) is a fused LU-SGS
        step."""
        return self.fused_implicit is not None and dt is None and self.stepping.local_time_step

    def _turbulence_time_steps(self, starts: list, fused: bool) -> list:
        """Each local part's time steps of the turbulence model at the states of the
        step's start and the CFL number up to ``turbulence_cfl``: those of the step's
        fused LU-SGS steps (of those states; ``fused``), scaled, or computed anew."""
        cfl = self.turbulence_cfl
        if fused:
            return [steps.dt * (cfl / steps.step_cfl) for steps in self.fused_implicit]
        return [_cell_steps(d, u, cfl) for d, u in zip(self.discretisations, starts,
                                                        strict=True)]

    @property
    def turbulence_cfl(self) -> float:
        """The turbulence model's CFL number of the next step: the mean flow's, up to its
        cap (``turbulence_cfl``, or less where :meth:`_turbulence_back_off` cut it)."""
        return min(self.cfl, self._turbulence_watch.cap)

    def _turbulence_back_off(self, norms: np.ndarray) -> None:
        """Cut the turbulence model's CFL cap :data:`TURBULENCE_BACK_OFF`-fold when any of
        its residuals ``norms`` has risen the model's ``RUNAWAY_RISE`` times above its
        lowest (then the lowest restarts from here); let the cap grow back by
        :data:`~gpusolver.integrators.cfl.CEILING_GROWTH` at each step where none rose and
        one found a new lowest (:class:`~gpusolver.integrators.cfl.ResidualWatch`)."""
        watch = self._turbulence_watch
        if watch.watch(norms, self.stepping.turbulence_cfl) != "rose":
            return
        ratios = watch.last_ratios
        cap = max(self.stepping.cfl, self.turbulence_cfl / TURBULENCE_BACK_OFF)
        i = int(np.argmax(ratios))
        self.notes.append(f"iteration {self.iteration}: {self.turbulence[0].names[i]}'s "
                          f"residual rose to {norms[i]:.3g}, {ratios[i]:.0f}x its lowest; the "
                          f"model's CFL number {self.turbulence_cfl:.4g} -> {cap:.4g}")
        watch.cap = cap
        watch.restart(norms)

    def _mean_flow_step(self, dt):
        given = dt is not None  # the caller's time step (else the solver's own)
        if not self.stepping.local_time_step and not given and self.stages is not None:
            dt = self._time_steps()[0]
        if self._fused_implicit(dt):
            norms = self._fused_implicit_step()
            for model in self.turbulence or []:  # its step is of the same start
                model.take_residual_gradients(keep=self.multigrid is not None)
        elif self.part_sweeps is not None:
            norms, dt = self._implicit_step(dt)
        elif self.fused_steps is not None:
            norms = self._fused_step(dt)
        else:
            norms = self._explicit_step(dt)
        if self.multigrid is not None and not given:
            if self.mesh is None:  # the fine residual reads the halo's new states
                self.transport.exchange(self.states)
            starts = [x.mass_flux for x in self.discretisations]
            self.states = self.multigrid.correct(self.states, self.cfl)
            for x, mass_flux in zip(self.discretisations, starts, strict=True):
                x.mass_flux = mass_flux  # RANS: the step's start's (not the cycle's)
        if self._vortex_far_field:
            lift = float(self.wall_forces()["total"].force @ self.gas.lift_direction)
            self.circulation = circulation_of_lift(self.gas, lift)
        if not self.stepping.local_time_step:
            self.time += float(dt)
        self._adapt(float(norms[0]))
        return norms

    def _explicit_step(self, dt) -> np.ndarray:
        """One explicit Runge-Kutta step of every part in array code (steady steps keep
        each stage's own cells physical: :func:`positive_stage`)."""
        steady = dt is None and self.stepping.local_time_step
        dt = self._time_steps() if dt is None else PerPart([dt] * len(self.states))

        def rate(states: PerPart) -> PerPart:
            self.transport.exchange(states)
            return PerPart(d.residual(state) / d.geometry.volume
                           for d, state in zip(self.discretisations, states, strict=True))

        relaxed = []

        def admissible(starts: PerPart, states: PerPart) -> PerPart:
            out = []
            for start, state, layout in zip(starts, states, self.layouts, strict=True):
                own, count = positive_stage(self.gas, start[:, :layout.n_own],
                                            state[:, :layout.n_own])
                relaxed.append(count)
                state[:, :layout.n_own] = own
                out.append(state)
            return PerPart(out)

        rate, boundary = keeping_first(rate, lambda: [d.boundary_flux
                                                      for d in self.discretisations])
        states, first_rates = runge_kutta(self.stages, PerPart(self.states), rate, dt,
                                          admissible if steady else None)
        self.relaxed_cells = sum(relaxed)
        bad = self._first_bad(states)
        self.states = list(states)
        return self._finish(self._own_squares(first_rates), boundary[0], bad_cells=bad)

    def _fused_step(self, dt) -> np.ndarray:
        """One explicit step of every part in the fused kernels; what the step reports
        (residual sums, first bad cell, wall momentum) comes from the device in one
        transfer and is summed over all parts in one global sum."""
        limiters = [limiter_input(d) for d in self.discretisations]
        states = self.fused_steps(self.states, self.cfl, dt, limiters)
        with self.fused_steps.graphs.stream:  # read back behind the step on its stream
            reports = [steps.report() for steps in self.fused_steps.parts]
        self.relaxed_cells = sum(relaxed for *_, relaxed in reports)
        norms = self._finish_reported([report[:2] for report in reports],
                                      [d.boundary_flux for d in self.discretisations])
        self.states = states
        return norms

    def _fused_implicit_step(self) -> np.ndarray:
        """One LU-SGS step of every part in the fused kernels (retried at smaller CFL
        numbers while any part went bad)."""

        def attempt():
            results = [steps(u, self.cfl, limiter_input(d)) for steps, u, d in
                       zip(self.fused_implicit, self.states, self.discretisations, strict=True)]
            return results, [bad for *_, bad in results]

        results = self._backing_off(attempt)
        self.states = [u_new for u_new, *_ in results]
        self.relaxed_cells = sum(steps.relaxed_cells for steps in self.fused_implicit)
        # each part's norms are the RMS over its own cells
        squares = sum(norms ** 2 * layout.n_own
                      for (_, norms, _), layout in zip(results, self.layouts, strict=True))
        return self._finish(squares, [d.boundary_flux for d in self.discretisations])

    def _implicit_step(self, dt) -> tuple[np.ndarray, object]:
        """One LU-SGS or Newton-Krylov step of every part in array code, retried at
        smaller CFL numbers if a state goes bad anywhere: the norms and the time step
        taken."""
        given = dt
        parts = [(d.face_wave_speeds(u), d.residual(u), d.boundary_flux)
                 for d, u in zip(self.discretisations, self.states, strict=True)]
        mass_fluxes = [d.mass_flux for d in self.discretisations]
        solves = [self.newton] if self.newton is not None else self.part_sweeps
        taken, why = [], []

        def attempt():
            dts = (self._time_steps([speeds for speeds, *_ in parts]) if given is None
                   else [given] * len(parts))
            taken[:], why[:] = [dts[0]], []
            try:
                updates = [self._updated(u, solve(u, residual, dt, speeds))
                           for solve, u, dt, (speeds, residual, _)
                           in zip(solves, self.states, dts, parts, strict=True)]
            except SingularMatrixError as error:  # Newton-Krylov's LU: a failed attempt
                why[:] = [f"makes the implicit matrix singular ({error})"]
                cell = self._singular_cell(error, parts[0][1])
                return list(self.states), [cell] + [None] * (len(parts) - 1)
            self.relaxed_cells = sum(relaxed for _, relaxed in updates)
            news = [new for new, _ in updates]
            return news, self._first_bad(news)

        # a given (global) time step is not the CFL number's to back off
        self.states = self._backing_off(attempt, retry=given is None, why=why)
        for d, mass_flux in zip(self.discretisations, mass_fluxes, strict=True):
            d.mass_flux = mass_flux  # RANS: the start's (Newton's products perturb it)
        squares = self._own_squares([residual / d.geometry.volume for d, (_, residual, _)
                                     in zip(self.discretisations, parts, strict=True)])
        return self._finish(squares, [flux for *_, flux in parts]), taken[0]

    def _singular_cell(self, error: SingularMatrixError, residual) -> int:
        """The cell of the whole mesh that a singular implicit matrix's suspect row
        belongs to (unknowns cell-major), else the cell of the largest density rate."""
        if error.row >= 0:
            return error.row // self.gas.n_vars
        rate = abs(residual[0]) / self.discretisations[0].geometry.volume
        return int(self.backend.xp.argmax(rate))

    def _updated(self, u, du):
        """``u`` changed by an implicit step's ``du`` and the cells relaxed: LU-SGS's
        relaxed cell by cell (:func:`relaxed_update`); a Newton step whole, as relaxing it
        cell by cell bends its direction (the transonic NACA 0012 no longer converged), so
        a bad state retries it at a smaller CFL number instead."""
        if self.newton is not None:
            return u + du, 0
        return relaxed_update(self.gas, u, du, self.stepping.max_update)

    def _first_bad(self, states: list) -> list:
        """Per local part, its first own cell whose state is non-finite or has
        non-positive density or pressure, or None."""
        out = []
        for u, layout in zip(states, self.layouts, strict=True):
            bad = self.gas.invalid(u[:, :layout.n_own])
            out.append(int(self.backend.xp.argmax(bad)) if bool(bad.any()) else None)
        return out

    def _backing_off(self, attempt, retry: bool = True, why: list | None = None):
        """``attempt()`` (returning its result and, per local part, its first bad own cell
        or None) at the CFL number, retried at smaller ones while any part in any process
        went bad; raises :class:`SolverDivergedError` naming a cell if it stays bad (and
        ``why``, where the last attempt put a reason there). One global sum per attempt:
        the parts' bad-cell flags."""

        def tried(cfl: float):
            self.cfl = cfl  # what the attempts read
            result, bad_cells = attempt()
            flags = self.transport.sum(self._bad_flags(bad_cells))
            return (result, flags), bool(flags.any())

        first = self.cfl
        (result, flags), self.cfl = backing_off(tried, self.cfl, retry=retry)
        self._raise_if_bad(flags, why[0] if why else None)
        if self.cfl < first:
            self.notes.append(f"iteration {self.iteration + 1}: the step went bad at CFL "
                              f"number {first:.4g}; taken at {self.cfl:.4g}")
        return result

    def _adapt(self, density_residual: float) -> None:
        """Ramp the CFL number (implicit), back it off where the residual rises or stalls
        (:meth:`_back_off`), and freeze the limiter as the residual falls."""
        stepping, frozen_from = self.stepping, self.discretisations[0].limiter_ceiling
        fall = density_residual / (self.first_residual or density_residual or 1.0)
        if self.part_sweeps is not None:
            cfl_max, frozen = stepping.cfl_max, stepping.cfl_frozen
            if frozen is not None and frozen_from is not None:
                cfl_max = frozen if cfl_max is None else min(cfl_max, frozen)
            if cfl_max is not None and self.first_residual is not None:  # (BALANCED)
                self._back_off(density_residual, cfl_max)
                self.cfl = ramped_cfl(stepping.cfl, self.cfl, fall,
                                      min(cfl_max, self._mean_watch.cap))
        if not self._limiter_can_freeze():
            return  # nothing (more) to freeze, or no limiter (JST, first order)
        if density_residual < 0.9 * self._best_residual:
            self._best_residual, self._since_best = density_residual, 0
        else:
            self._since_best += 1
        window = STALL_STEPS if self.part_sweeps is not None else EXPLICIT_STALL_STEPS
        if fall <= stepping.freeze_limiter and self._since_best >= window:
            self.notes.append(f"iteration {self.iteration}: the density residual stalled "
                              f"{window} steps at {fall:.2g} of its first; the limiter is "
                              "frozen from above")
            self._freeze_limiter()

    def _limiter_can_freeze(self) -> bool:
        """Whether ``freeze_limiter`` is set and the limiter is used and not yet frozen."""
        d = self.discretisations[0]
        return (self.stepping.freeze_limiter is not None and d.limiter_ceiling is None
                and d.limiter_values is not None)

    def _freeze_limiter(self) -> None:
        """Every part's limiter frozen from above at its last values."""
        for d in self.discretisations:
            d.limiter_ceiling = d.limiter_values

    def _back_off(self, density_residual: float, cfl_max: float) -> None:
        """Halve the CFL number (while at least twice the first) and cap its ramp there
        when the density residual has risen :data:`RISE` times above its lowest or found
        no new lowest in :data:`STALL_BACK_OFF` steps (then the lowest restarts from
        here; an ``auto`` multigrid cycle's first stall turns it W instead, a stall with
        the limiter not yet frozen freezes it instead (where ``freeze_limiter`` is set:
        limiter chatter holds a residual above the freezing threshold too), and
        Newton-Krylov's first rise or stall at ``cfl_max`` tightens its linear solves
        instead: :meth:`~gpusolver.integrators.newton_krylov.NewtonKrylov.tighten`; before
        the ramp's end a rise is the start's, whose steps tighter solves do not help: the
        transonic NACA 0012's 73 steps became 136); let the cap grow back by
        :data:`~gpusolver.integrators.cfl.CEILING_GROWTH` at each new lowest
        (:class:`~gpusolver.integrators.cfl.ResidualWatch`)."""
        watch = self._mean_watch
        why = watch.watch(density_residual, cfl_max)
        if why is None:
            return
        ratio = float(watch.last_ratios[0])
        tolerance = None if self.newton is None else self.newton.tolerance
        if why == "stalled" and self.multigrid is not None and self.multigrid.deepen():
            action = "the multigrid cycle V -> W"
        elif why == "stalled" and self._limiter_can_freeze():
            self._freeze_limiter()
            action = "the limiter is frozen from above"
        elif (why == "stalled" and self.multigrid is not None and watch.flipping()
              and self.multigrid.weight > MIN_COARSE_WEIGHT):
            action = (f"it flips from step to step: the coarse levels' correction weighs "
                      f"{self.multigrid.damp():.3g}")
        elif self.newton is not None and self.cfl >= cfl_max and self.newton.tighten():
            action = (f"the linear solves' tolerance {tolerance:.3g} -> "
                      f"{self.newton.tolerance:.3g} ({self.newton.max_vectors} Krylov vectors)")
        elif self.cfl >= 2 * self.stepping.cfl:
            cfl = max(self.stepping.cfl, 0.5 * self.cfl)
            action = f"CFL number {self.cfl:.4g} -> {cfl:.4g}"
            self.cfl = watch.cap = cfl
        else:
            return
        text = (f"rose to {density_residual:.3g}, {ratio:.0f}x its lowest" if why == "rose"
                else f"found no new lowest in {watch.since_lowest} steps "
                f"(lowest {float(watch.lowest):.3g})")
        self.notes.append(f"iteration {self.iteration}: the density residual {text}; {action}")
        watch.restart(density_residual)

    def advance_to(self, final_time: float) -> None:
        """Global time stepping up to ``final_time`` (the last step shortened to land on it)."""
        while self.time < final_time * (1 - 1e-12):
            dt = min(float(self._time_steps()[0].min()), final_time - self.time)
            self.step(self.backend.xp.asarray(dt, dtype=self.dtype))

    def _field_arrays(self) -> tuple[list, list[dict]]:
        """Per local part its state, and its turbulence model's scalars and ``mu_t /
        mu_inf`` by name (none without one)."""
        if self.turbulence is None:
            return self.states, [{} for _ in self.states]
        return self.states, [
            {name: model.values[i] for i, name in enumerate(model.names)}
            | {"eddy_viscosity_ratio": model.cell_eddy_viscosity(u) / self.gas.mu_ref}
            for model, u in zip(self.turbulence, self.states, strict=True)]

    def model_residuals(self) -> dict[str, float]:
        """Per scalar of the turbulence model, the RMS of its equation's ``R / V`` at the
        last step's start (none without a model)."""
        return dict(self.turbulence_residuals)

    def diagnose(self) -> str | None:
        """Where the density residual sits and the quality of the cells there
        (:func:`~gpusolver.monitors.quality.residual_note`), on the root (None elsewhere):
        ``density_residual`` (``|R / V|`` of the density equation at the state) and the
        cells' quality (:func:`~gpusolver.monitors.quality.cell_quality`) become cell
        fields of each part's own cells (:meth:`own_fields`) and, gathered onto the root
        in the file's cell order, :attr:`diagnostics`. Every process calls it."""
        self.transport.exchange(self.states)
        xp = self.backend.xp
        fields = [{"density_residual": xp.abs(d.residual(u)[0] / d.geometry.volume)}
                  | cell_quality(layout.geometry)
                  for d, u, layout in zip(self.discretisations, self.states, self.layouts,
                                          strict=True)]
        self._part_diagnostics = [{name: self._own(layout, array)
                                   for name, array in part.items()}
                                  for layout, part in zip(self.layouts, fields, strict=True)]
        gathered = {name: self._gather_cells([part[name] for part in fields], root_only=True)
                    for name in fields[0]}
        centroid = self._gather_cells([layout.geometry.centroid for layout in self.layouts],
                                      root_only=True)
        if centroid is None:
            return None
        self.diagnostics = gathered
        return residual_note(gathered["density_residual"], centroid,
                             {name: gathered[name] for name in QUALITY})

    def monitors(self) -> dict[str, str]:
        """Implicit steps: the CFL number of the next step, the cells (of every process)
        whose last update was relaxed (:mod:`gpusolver.integrators.relaxation`), with
        multigrid the passes of its cycle (1: V, 2: W) and the weight of its correction
        (:meth:`~gpusolver.solvers.fv.multigrid.Multigrid.damp`), where
        ``freeze_limiter`` can act whether the limiter is frozen (0 or 1), with a
        turbulence model its CFL number, and with Newton-Krylov the linear solves'
        tolerance; none for explicit steps.
        Every process calls it (a global sum)."""
        if self.part_sweeps is None:
            return {}
        relaxed = int(self.transport.sum(np.array([self.relaxed_cells]))[0])
        cycle = ({} if self.multigrid is None
                 else {"multigrid_passes": str(self.multigrid.passes),
                       "multigrid_weight": f"{self.multigrid.weight:.6g}"})
        d = self.discretisations[0]
        frozen = ({"limiter_frozen": str(int(d.limiter_ceiling is not None))}
                  if self.stepping.freeze_limiter is not None and d.scheme.cell_limited
                  else {})
        model = ({} if self.turbulence is None
                 else {"turbulence_cfl": f"{self.turbulence_cfl:.6g}"})
        linear = ({} if self.newton is None
                  else {"linear_tolerance": f"{self.newton.tolerance:.6g}"})
        return ({"cfl": f"{self.cfl:.6g}", "relaxed_cells": str(relaxed)} | cycle | frozen
                | model | linear)

    def model_state(self, root_only: bool = False) -> dict[str, np.ndarray]:
        """The turbulence model's scalars in the file's cell order (for checkpoints; every
        process calls it, ``root_only``: None but on the root)."""
        if self.turbulence is None:
            return {}
        return {name: self._gather_cells([model.values[i] for model in self.turbulence],
                                          root_only)
                for i, name in enumerate(self.turbulence[0].names)}

    def controls(self, root_only: bool = False) -> tuple[dict[str, float],
                                                         dict[str, np.ndarray]]:
        """The steady-state controls a restart continues from: the CFL ramp's back-off
        counters and cap (:meth:`_back_off`), the stall watch of the limiter's freeze, the
        multigrid cycle's passes and correction weight, Newton-Krylov's linear tolerance
        and Krylov vectors, and the frozen limiter's ceiling (file order; ``root_only``:
        None but on the root). Every process calls it (a global gather where the limiter
        is frozen). RANS: also the turbulence model's CFL cap and lowest residuals
        (:meth:`_turbulence_back_off`)."""
        numbers = {"lowest_residual": float(self._mean_watch.lowest),
                   "since_lowest": self._mean_watch.since_lowest,
                   "cfl_ceiling": float(self._mean_watch.cap),
                   "best_residual": float(self._best_residual), "since_best": self._since_best}
        if self.multigrid is not None:
            numbers["multigrid_passes"] = self.multigrid.passes
            numbers["multigrid_weight"] = self.multigrid.weight
        if self.newton is not None:  # and the case's, which a restart may change
            numbers |= {"linear_tolerance": self.newton.tolerance,
                        "krylov_vectors": self.newton.max_vectors,
                        "case_linear_tolerance": self.stepping.linear_tolerance,
                        "case_krylov_vectors": self.stepping.krylov_vectors}
        if self.turbulence is not None:
            numbers["turbulence_cap"] = float(self._turbulence_watch.cap)
            lowest = np.broadcast_to(self._turbulence_watch.lowest,
                                     len(self.turbulence[0].names))
            numbers |= {f"turbulence_lowest_{i}": float(x) for i, x in enumerate(lowest)}
        ceilings = [d.limiter_ceiling for d in self.discretisations]
        frozen = ({} if ceilings[0] is None
                  else {"limiter_ceiling": self._gather_cells(ceilings, root_only)})
        return numbers, frozen

    def set_controls(self, numbers: dict[str, float], arrays: dict[str, np.ndarray],
                     ramp: bool = True) -> None:
        """Restore :meth:`controls` from a checkpoint (``ramp`` False: the CFL ramp's
        back-off counters and cap start again, as after a change of ``[run] cfl``;
        Newton-Krylov's tightened solves are kept unless the case's ``linear_tolerance``
        or ``krylov_vectors`` changed)."""
        if ramp and "lowest_residual" in numbers:
            self._mean_watch.lowest = float(numbers["lowest_residual"])
            self._mean_watch.since_lowest = int(numbers["since_lowest"])
            self._mean_watch.cap = float(numbers["cfl_ceiling"])
        if "best_residual" in numbers:
            self._best_residual = float(numbers["best_residual"])
            self._since_best = int(numbers["since_best"])
        if self.multigrid is not None and "multigrid_passes" in numbers:
            self.multigrid.passes = int(numbers["multigrid_passes"])
        if self.multigrid is not None and "multigrid_weight" in numbers:
            self.multigrid.weight = float(numbers["multigrid_weight"])
        stepping = self.stepping
        if (ramp and self.newton is not None and "linear_tolerance" in numbers
                and numbers.get("case_linear_tolerance") == stepping.linear_tolerance
                and numbers.get("case_krylov_vectors") == stepping.krylov_vectors):
            self.newton.tolerance = float(numbers["linear_tolerance"])
            self.newton.max_vectors = int(numbers["krylov_vectors"])
        if ramp and self.turbulence is not None and "turbulence_cap" in numbers:
            self._turbulence_watch.cap = float(numbers["turbulence_cap"])
            self._turbulence_watch.lowest = np.array([
                numbers[f"turbulence_lowest_{i}"] for i in range(len(self.turbulence[0].names))])
        if "limiter_ceiling" in arrays:
            ceiling = np.asarray(arrays["limiter_ceiling"])
            for d, layout in zip(self.discretisations, self.layouts, strict=True):
                d.limiter_ceiling = self.backend.asarray(ceiling[:, layout.file_cells],
                                                         self.dtype)

    def set_model_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore the turbulence model's scalars from a checkpoint's arrays (file order).

        Raises
        ------
        ValueError
            If the checkpoint holds other scalars than the run's model (a laminar run's,
            or another model's).
        """
        names = () if self.turbulence is None else self.turbulence[0].names
        if set(names) != set(arrays) & {*ALL_TURBULENCE_SCALARS}:
            raise ValueError("the checkpoint's turbulence model is not the run's")
        for model, layout in zip(self.turbulence or [], self.layouts, strict=False):
            model.values = self.backend.xp.stack([self.backend.asarray(
                np.asarray(arrays[name])[layout.file_cells], self.dtype) for name in names])

    # ------------------------------------------------------------------ loads
    @property
    def friction_markers(self) -> list[str]:
        """The no-slip walls of a Navier-Stokes run on a whole mesh (their skin friction
        is written: :meth:`surface_friction`); none on parts so far."""
        if self.gas.reynolds is None or self.mesh is None:
            return []
        return self._no_slip_walls

    def surface_friction(self, marker: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Face centres ``(dim, m)``, skin-friction coefficients and first-cell y+ of one
        no-slip wall at the start of the last step, in its faces' (plan) order (the whole
        mesh; :func:`~gpusolver.monitors.forces.skin_friction`)."""
        flux = self.backend.to_host(self._boundary_flux[0]).astype(np.float64)
        w = self.gas.to_primitive(self.backend.to_host(self.u).astype(np.float64))
        mu = self.gas.viscosity(self.gas.temperature(w))
        return skin_friction(flux, self.host, self.gas, marker, w[0], mu)

    circulation = shared("circulation", "Circulation of the body seen by vortex-corrected "
                         "far fields (checkpointed).")


def _cell_steps(d: Discretisation, u, cfl: float, speeds=None):
    """Each cell's stable time step ``cfl V / sum_f (|u.n| + c + 4 lambda_v) A_f`` at the
    state ``u`` (``speeds``: its face wave speeds, if already computed)."""
    return cfl * d.geometry.volume / d.spectral_radius(u, speeds)


def _wall_corners(layout: PartLayout, walls: list[str], points: np.ndarray) -> np.ndarray:
    """``(m, k, dim)`` corners of a part's own faces on the ``walls`` markers (NaN pads a
    triangle among quadrilaterals)."""
    g, ni = layout.geometry, layout.geometry.n_interior
    own = np.zeros(g.n_faces - ni, dtype=bool)
    own[layout.own_boundary] = True
    rows = [np.zeros((0, g.boundary_nodes.shape[1]), dtype=np.int64)]
    for name in walls:
        if name in g.markers:
            first, end = g.markers[name]
            rows.append(g.boundary_nodes[first - ni:end - ni][own[first - ni:end - ni]])
    nodes = np.concatenate(rows)
    corners = points[np.maximum(nodes, 0), :g.dim]
    corners[nodes < 0] = np.nan
    return corners


def check_parts(stepping: Stepping, boundaries: dict) -> None:
    """Refuse what runs on one part only so far (``boundaries``: BoundarySpec per marker).
    """
    if not stepping.local_time_step or stepping.integrator not in (*TABLEAUX, "lusgs"):
        raise ConfigError(f"runs on several parts take explicit or LU-SGS local steps; "
                          f"time_integrator must be one of {', '.join(TABLEAUX)} or lusgs "
                          f"(not {stepping.integrator!r}), with local_time_step = true")
    if any(spec.condition.name == "periodic" or spec.params.get("vortex")
           for spec in boundaries.values()):
        raise ConfigError("periodic boundaries and vortex far fields are not supported "
                          "across parts yet")
