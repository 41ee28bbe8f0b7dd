"""Case files (TOML): strict parsing into typed settings.

Every section and key is checked before any work: an unknown key or value stops
the run with a message that lists what is valid. Paths are relative to the case
file's folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpusolver.backends import BACKENDS, PRECISIONS
from gpusolver.errors import ConfigError
from gpusolver.integrators import IMPLICIT, INTEGRATORS
from gpusolver.integrators.newton_krylov import DEFAULT_KRYLOV_VECTORS
from gpusolver.io.output import VTU_COMPRESSIONS
from gpusolver.io.schema import NUMBER, Key, section
from gpusolver.parallel import TRANSPORTS
from gpusolver.physics.boundary import CONDITIONS, BoundarySpec
from gpusolver.physics.fluxes import FLUXES
from gpusolver.physics.gas import VISCOSITY_LAWS, Gas
from gpusolver.solvers.fv.accumulate import STRATEGIES
from gpusolver.solvers.fv.discretisation import KERNELS, Scheme
from gpusolver.solvers.fv.gradients import GRADIENTS, LIMITERS
from gpusolver.solvers.fv.jst import JST
from gpusolver.solvers.fv.lusgs import SWEEPS
from gpusolver.solvers.fv.multigrid import CYCLES
from gpusolver.solvers.fv.solver import PRECONDITIONERS, Stepping

EQUATIONS = ("euler", "navier-stokes")


#: Section -> key -> :class:`Key`. ``boundaries`` is free-form (marker names).
SCHEMA: dict[str, dict[str, Key]] = {
    "solver": {
        "method": Key(str, ("fv", "dg"), "fv",
                      help="fv: cell-centred finite volume; dg: modal discontinuous "
                           "Galerkin (vortex: the vortex element method, no mesh; its "
                           "sections are listed below)"),
    },
    "mesh": {
        "file": Key(str, required=True, help="mesh file, relative to the case file"),
        "plan": Key(str, help="plan of `meshorder reorder` (default: made at start, rcm)"),
    },
    "physics": {
        "equations": Key(str, EQUATIONS, "euler", help="inviscid or laminar viscous"),
        "mach": Key(NUMBER, required=True, positive=True, help="free-stream Mach number"),
        "aoa_deg": Key(NUMBER, default=0.0,
                       help="angle of attack (x-y plane in 2D, x-z plane in 3D)"),
        "reynolds": Key(NUMBER, positive=True,
                        help="Reynolds number per unit length (navier-stokes)"),
        "gamma": Key(NUMBER, default=1.4, positive=True, help="ratio of specific heats"),
        "prandtl": Key(NUMBER, default=0.72, positive=True, help="Prandtl number"),
        "temperature_ref": Key(NUMBER, default=288.15, positive=True,
                               help="free-stream temperature in K (Sutherland's law)"),
        "viscosity_law": Key(str, VISCOSITY_LAWS, "sutherland",
                             help="how the viscosity follows the temperature"),
        "reference_area": Key(NUMBER, default=1.0, positive=True,
                              help="area (length in 2D) the force coefficients divide by"),
    },
    "scheme": {
        "flux": Key(str, (*FLUXES, JST), "roe",
                    help="Riemann flux, or jst: the central JST scheme (finite volume, euler)"),
        "order": Key(int, (1, 2), 2, help="1: cell values; 2: limited linear reconstruction"),
        "degree": Key(int, (0, 1, 2, 3), 1, help="dg: polynomial degree of the modal basis"),
        "shock_capturing": Key(bool, default=False,
                               help="dg: damp the high modes where the modal-decay sensor "
                                    "finds a shock"),
        "gradient": Key(str, tuple(GRADIENTS), "least-squares", help="cell gradients"),
        "limiter": Key(str, LIMITERS, "venkatakrishnan", help="slope limiter"),
        "venkatakrishnan_k": Key(NUMBER, default=Scheme.venkatakrishnan_k, positive=True,
                                 help="the limiter's K: larger limits less"),
        "venkatakrishnan_cap": Key(NUMBER, default=Scheme.venkatakrishnan_cap, positive=True,
                                   help="caps the limiter's threshold at (cap x free-stream "
                                        "value)^2, so it acts on huge far-field cells"),
        "jst_k2": Key(NUMBER, default=Scheme.jst_k2, positive=True,
                      help="jst: second-difference (shock) dissipation coefficient"),
        "jst_k4": Key(NUMBER, default=Scheme.jst_k4, positive=True,
                      help="jst: fourth-difference (background) dissipation coefficient"),
    },
    "run": {
        "backend": Key(str, BACKENDS, "auto", help="auto: cupy where a GPU is usable"),
        "precision": Key(str, tuple(PRECISIONS), "fp64", help="floating-point precision"),
        "strategy": Key(str, tuple(STRATEGIES), "atomic",
                        help="face-to-cell accumulation (see gpusolver.layout.strategies)"),
        "kernels": Key(str, KERNELS, "fused",
                       help="fused: CUDA kernels and graphs on the cupy backend; "
                            "arrays: array code (the reference)"),
        "transport": Key(str, TRANSPORTS, "mpi-host",
                         help="several MPI ranks: halo exchange through host buffers "
                              "(mpi-host) or NCCL between GPUs (nccl)"),
        "overlap": Key(bool, default=True,
                       help="several ranks: compute each part's interior while its halo "
                            "is in flight"),
        "time_integrator": Key(str, (*INTEGRATORS, *IMPLICIT), "rk4",
                               help="explicit Runge-Kutta, or implicit for steady states"),
        "cfl": Key(NUMBER, default=1.0, positive=True,
                   help="CFL number (implicit: the first one)"),
        "cfl_max": Key(NUMBER, positive=True,
                       help="implicit: ramp the CFL number with the residual's fall up to this"),
        "freeze_limiter": Key(NUMBER, positive=True, below_one=True,
                              help="freeze the limiter from above (it may fall, never "
                                   "rise) once the residual has fallen by this factor "
                                   "and stalled"),
        "cfl_frozen": Key(NUMBER, positive=True,
                          help="implicit: the CFL number at most this once the limiter is "
                               "frozen from above"),
        "sweeps": Key(str, SWEEPS, "hyperplanes",
                      help="LU-SGS levels: hyperplanes (the sequential sweep) or colours "
                           "(multicolour: a few wide levels, fastest on GPUs; a plan must "
                           "come from `meshorder reorder --sweep-colours`)"),
        "multigrid": Key(int, default=0,
                         help="lusgs: coarse levels of agglomeration multigrid (FAS) after "
                              "each step; 0: none"),
        "multigrid_cycle": Key(str, tuple(CYCLES), "v",
                               help="multigrid: v (each coarse level once) or w (twice)"),
        "preconditioner": Key(str, tuple(PRECONDITIONERS), "lu",
                              help="newton-krylov: lu (exact, 2D and moderate meshes) or lusgs"),
        "krylov_vectors": Key(int, default=DEFAULT_KRYLOV_VECTORS, positive=True,
                              help="newton-krylov: most GMRES vectors per step"),
        "local_time_step": Key(bool, default=True,
                               help="each cell at its own step (steady states)"),
        "iterations": Key(int, default=200, positive=True, help="most steps of this run"),
        "residual_reduction": Key(NUMBER, positive=True, below_one=True,
                                  help="stop once the RMS density residual has fallen by this "
                                       "factor from the first step's"),
        "restart": Key(str, help="checkpoint.npz to continue from (history is appended)"),
    },
    "output": {
        "directory": Key(str, default="out", help="output folder, relative to the case file"),
        "checkpoint_every": Key(int, default=1000, positive=True,
                                help="steps between checkpoints (one costs about 40 GPU steps "
                                     "of a 1M-cell mesh: it copies the state to the disk)"),
        "vtu_compression": Key(str, tuple(VTU_COMPRESSIONS), "none",
                               help="solution files: none (binary, fastest to write) or zlib / "
                                    "lzma (a third to a half the size, 7x slower or more to "
                                    "write)"),
        "history_every": Key(int, default=1, positive=True,
                             help="steps between rows of history.csv and convergence tests "
                                  "(the DG solver takes the steps between as one batch, "
                                  "which a GPU runs without waiting)"),
    },
}


@dataclass(frozen=True)
class LoopSettings:
    """What the run loop (:func:`gpusolver.run.run_case`) reads of any method's case.

    Attributes
    ----------
    iterations : int
        Most steps of this run.
    restart : pathlib.Path or None
        The checkpoint to continue from.
    output_directory : pathlib.Path
    checkpoint_every : int
        Steps between checkpoints.
    history_every : int
        Steps between rows of the log and convergence tests.
    residual_reduction : float or None
        Stop once the first residual has fallen by this factor (None: never).
    """

    iterations: int
    restart: Path | None
    output_directory: Path
    checkpoint_every: int
    history_every: int = 1
    residual_reduction: float | None = None


@dataclass(frozen=True)
class Case:
    """A validated case of a mesh-based method (``fv``, ``dg``).

    Attributes
    ----------
    path : pathlib.Path
        The case file.
    mesh_file, plan_file, restart : pathlib.Path or None
    gas : Gas
        Without ``dim``: the mesh decides it (see :meth:`gas_for`).
    scheme : Scheme
    stepping : Stepping
    method : str
        ``fv`` or ``dg`` (:data:`METHODS`).
    degree : int
        ``dg``: polynomial degree.
    shock_capturing : bool
        ``dg``: the modal filter where the sensor fires.
    boundaries : dict of str to BoundarySpec
    run : dict
        ``backend``, ``precision``, ``strategy``, ``kernels``, ``iterations``,
        ``residual_reduction``
        (stop once the RMS density residual has fallen by this factor; None: never).
    output_directory : pathlib.Path
    checkpoint_every : int
    history_every : int
    vtu_compression : str
        A key of :data:`gpusolver.io.output.VTU_COMPRESSIONS`.
    reference_area : float
    """

    path: Path
    mesh_file: Path
    plan_file: Path | None
    restart: Path | None
    physics: dict
    scheme: Scheme
    stepping: Stepping
    method: str
    degree: int
    shock_capturing: bool
    boundaries: dict[str, BoundarySpec]
    run: dict
    output_directory: Path
    checkpoint_every: int
    history_every: int
    vtu_compression: str
    reference_area: float

    @property
    def loop(self) -> LoopSettings:
        """What the run loop reads of this case."""
        return LoopSettings(self.run["iterations"], self.restart, self.output_directory,
                            self.checkpoint_every, self.history_every,
                            self.run["residual_reduction"])

    def gas_for(self, dim: int) -> Gas:
        """The gas and free stream for a mesh of dimension ``dim``."""
        p = self.physics
        reynolds = p["reynolds"] if p["equations"] == "navier-stokes" else None
        return Gas(dim=dim, mach=float(p["mach"]), aoa_deg=float(p["aoa_deg"]),
                   gamma=float(p["gamma"]), reynolds=reynolds, prandtl=float(p["prandtl"]),
                   temperature_ref=float(p["temperature_ref"]),
                   viscosity_law=p["viscosity_law"])


def parse_case(data: dict, path: Path) -> Case:
    """Validate a parsed TOML document; ``path`` locates relative paths and errors."""
    source = str(path)
    unknown = sorted(set(data) - set(SCHEMA) - {"boundaries"})
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {', '.join(unknown)}; valid: "
                          f"{', '.join([*SCHEMA, 'boundaries'])}")
    sections = {name: section(data, name, source, SCHEMA) for name in SCHEMA}
    physics = sections["physics"]
    if physics["equations"] == "navier-stokes" and physics["reynolds"] is None:
        raise ConfigError(f"{source}: [physics] reynolds is required for navier-stokes")
    raw_boundaries = data.get("boundaries")
    if not isinstance(raw_boundaries, dict) or not raw_boundaries:
        raise ConfigError(f"{source}: [boundaries] must map each marker to one of "
                          f"{', '.join(CONDITIONS)}")
    boundaries = {marker: BoundarySpec.parse(marker, value)
                  for marker, value in raw_boundaries.items()}
    base = path.parent

    def resolve(value):
        return None if value is None else (base / value)

    run, scheme, output = sections["run"], sections["scheme"], sections["output"]
    return Case(
        path=path, mesh_file=resolve(sections["mesh"]["file"]),
        plan_file=resolve(sections["mesh"]["plan"]), restart=resolve(run["restart"]),
        physics=physics,
        scheme=Scheme(scheme["flux"], scheme["order"], scheme["gradient"], scheme["limiter"],
                      float(scheme["venkatakrishnan_k"]), float(scheme["venkatakrishnan_cap"]),
                      float(scheme["jst_k2"]), float(scheme["jst_k4"])),
        stepping=Stepping(run["time_integrator"], float(run["cfl"]), run["local_time_step"],
                          _float_or_none(run["cfl_max"]), _float_or_none(run["freeze_limiter"]),
                          run["preconditioner"], run["krylov_vectors"], run["sweeps"],
                          run["multigrid"], run["multigrid_cycle"],
                          _float_or_none(run["cfl_frozen"])),
        method=sections["solver"]["method"], degree=scheme["degree"],
        shock_capturing=scheme["shock_capturing"],
        boundaries=boundaries,
        run={k: run[k] for k in ("backend", "precision", "strategy", "kernels", "iterations",
                                 "residual_reduction", "transport", "overlap")},
        output_directory=resolve(output["directory"]),
        checkpoint_every=output["checkpoint_every"],
        history_every=output["history_every"],
        vtu_compression=output["vtu_compression"],
        reference_area=float(physics["reference_area"]),
    )


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)
