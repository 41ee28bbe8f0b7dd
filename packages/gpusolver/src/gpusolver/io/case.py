"""Case files of the mesh-based methods (TOML): the sections every one of them has, and
strict parsing into a :class:`Case`.

Each method adds its own keys (:func:`mesh_schema`): finite volume in
:mod:`gpusolver.solvers.fv.case`, DG in :mod:`gpusolver.solvers.dg.case`. Every section
and key is checked before any work: an unknown key or value stops the run with a message
that lists what is valid for that method. Paths are relative to the case file's folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpusolver.backends import PRECISIONS
from gpusolver.errors import ConfigError
from gpusolver.io.schema import BACKEND, NUMBER, Key, section
from gpusolver.io.vtu import COMPRESSORS
from gpusolver.parallel import TRANSPORTS
from gpusolver.physics.boundary import CONDITIONS, BoundarySpec
from gpusolver.physics.gas import LIFT_AXES, VISCOSITY_LAWS, Gas
from gpusolver.rank_watch import RANK_TIMEOUT
from meshorder.surface import SURFACES

EQUATIONS = ("euler", "navier-stokes")

#: Section -> key -> :class:`Key` of every mesh-based method; ``boundaries`` is free-form
#: (marker names). :func:`mesh_schema` adds a method's own keys.
COMMON_SCHEMA: dict[str, dict[str, Key]] = {
    "solver": {},
    "mesh": {
        "file": Key(str, required=True, help="mesh file, relative to the case file"),
        "plan": Key(str, help="plan of `meshorder reorder` (default: made at start, rcm)"),
        "scale": Key(NUMBER, default=1.0, positive=True,
                     help="multiply the mesh's coordinates by this (0.001: a mesh in "
                          "millimetres run in metres; reynolds and reference_area are then "
                          "per metre and in square metres)"),
        "refine": Key(int, (0, 1, 2, 3, 4), 0,
                      help="refine the mesh uniformly this many times at start (`meshorder "
                           "refine`: 8 cells per 3-D cell a level); with a plan, each rank "
                           "refines its own part (one process: the plan's mesh as one part), "
                           "and multigrid takes each level as a coarse level on top of its "
                           "own"),
        "surface": Key(str, SURFACES,
                       help="the body `meshorder generate` made this mesh around (wing or "
                            "oneram6): refine places the new nodes of the marker 'wing' on its "
                            "true surface (default: on the coarse facets)"),
    },
    "physics": {
        "equations": Key(str, EQUATIONS, "euler", help="inviscid or laminar viscous"),
        "mach": Key(NUMBER, required=True, positive=True, help="free-stream Mach number"),
        "aoa_deg": Key(NUMBER, default=0.0,
                       help="angle of attack (x-y plane in 2D; in 3D the plane of x and "
                            "lift_axis)"),
        "lift_axis": Key(str, tuple(LIFT_AXES),
                         help="3D: the axis lift points along, z (default: a z-up mesh) or "
                              "y (a y-up mesh, as CAD often exports)"),
        "sideslip_deg": Key(NUMBER, default=0.0,
                            help="3D: angle of sideslip, from x towards the side axis (y "
                                 "for lift along z, -z for lift along y)"),
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
    "scheme": {},
    "run": {
        "backend": BACKEND,
        "precision": Key(str, tuple(PRECISIONS), "fp64", help="floating-point precision"),
        "transport": Key(str, tuple(TRANSPORTS), "mpi-host",
                         help="several MPI ranks: halo exchange through host buffers "
                              "(mpi-host) or NCCL between GPUs (nccl)"),
        "overlap": Key(bool, default=True,
                       help="several ranks: compute each part's interior while its halo "
                            "is in flight"),
        "cfl": Key(NUMBER, default=1.0, positive=True,
                   help="CFL number (implicit: the first one)"),
        "local_time_step": Key(bool, default=True,
                               help="each cell at its own step (steady states)"),
        "iterations": Key(int, default=200, positive=True, help="most steps of this run"),
        "residual_reduction": Key(NUMBER, positive=True, below_one=True,
                                  help="stop once the RMS density residual has fallen by this "
                                       "factor from the first step's"),
        "restart": Key(str, help="checkpoint.npz to continue from (history is appended)"),
        "rank_timeout": Key(NUMBER, default=RANK_TIMEOUT, positive=True,
                            help="several ranks: seconds of silence of a rank (or of a "
                                 "step interval past twice the longest so far) after "
                                 "which every rank stops"),
    },
    "output": {
        "directory": Key(str, default="out", help="output folder, relative to the case file"),
        "checkpoint_every": Key(int, default=1000, positive=True,
                                help="steps between checkpoints (one costs about 40 GPU steps "
                                     "of a 1M-cell mesh: it copies the state to the disk)"),
        "vtu_compression": Key(str, tuple(COMPRESSORS), "none",
                               help="solution files: none (binary, fastest to write) or zlib / "
                                    "lzma (a third to a half the size, 7x slower or more to "
                                    "write)"),
        "history_every": Key(int, default=1, positive=True,
                             help="steps between rows of history.csv and convergence tests "
                                  "(the DG solver takes the steps between as one batch, "
                                  "which a GPU runs without waiting)"),
    },
}


def mesh_schema(method: str, help: str, scheme: dict[str, Key],
                run: dict[str, Key]) -> dict[str, dict[str, Key]]:
    """The schema of a mesh-based method: :data:`COMMON_SCHEMA` with ``[solver] method =
    method`` (its meaning ``help``), the method's ``[scheme]`` keys and its own ``[run]``
    keys (first)."""
    schema = {name: dict(keys) for name, keys in COMMON_SCHEMA.items()}
    schema["solver"]["method"] = Key(str, (method,), "fv" if method == "fv" else None,
                                     required=method != "fv", help=help)
    schema["scheme"] = dict(scheme)
    schema["run"] = {**COMMON_SCHEMA["run"], **run}
    return schema


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
    rank_timeout : float
        Several ranks: seconds of silence before every rank stops
        (:class:`gpusolver.rank_watch.RankWatch`).
    """

    iterations: int
    restart: Path | None
    output_directory: Path
    checkpoint_every: int
    history_every: int = 1
    residual_reduction: float | None = None
    rank_timeout: float = RANK_TIMEOUT


@dataclass(frozen=True)
class Case:
    """A validated case of a mesh-based method.

    Attributes
    ----------
    path : pathlib.Path
        The case file.
    method : str
        ``[solver] method``.
    mesh_file, plan_file, restart : pathlib.Path or None
    physics : dict
        ``[physics]``; the gas of a mesh: :meth:`gas_for`.
    scheme, run : dict
        ``[scheme]`` and ``[run]`` with the method's keys, defaults filled in.
    given : dict of str to frozenset
        Per section, the keys the file sets (the rest are defaults).
    boundaries : dict of str to BoundarySpec
    output_directory : pathlib.Path
    checkpoint_every, history_every : int
    vtu_compression : str
        A key of :data:`gpusolver.io.vtu.COMPRESSORS`.
    reference_area : float
    mesh_scale : float
        ``[mesh] scale``: the factor of the mesh's coordinates.
    mesh_refine : int
        ``[mesh] refine``: uniform refinements of the mesh at start.
    mesh_surface : str or None
        ``[mesh] surface``: the body whose true surface the refinement's new wall nodes
        are placed on (:mod:`meshorder.surface`); None: the coarse facets.
    """

    path: Path
    method: str
    mesh_file: Path
    plan_file: Path | None
    restart: Path | None
    physics: dict
    scheme: dict
    run: dict
    boundaries: dict[str, BoundarySpec]
    output_directory: Path
    checkpoint_every: int
    history_every: int
    vtu_compression: str
    reference_area: float
    mesh_scale: float = 1.0
    mesh_refine: int = 0
    mesh_surface: str | None = None
    given: dict = field(default_factory=dict)

    def sets(self, section: str, key: str) -> bool:
        """Whether the file sets ``key`` of ``[section]`` (not its default)."""
        return key in self.given.get(section, ())

    @property
    def loop(self) -> LoopSettings:
        """What the run loop reads of this case."""
        return LoopSettings(self.run["iterations"], self.restart, self.output_directory,
                            self.checkpoint_every, self.history_every,
                            self.run["residual_reduction"], float(self.run["rank_timeout"]))

    def gas_for(self, dim: int) -> Gas:
        """The gas and free stream for a mesh of dimension ``dim``."""
        p = self.physics
        reynolds = p["reynolds"] if p["equations"] == "navier-stokes" else None
        try:
            return Gas(dim=dim, mach=float(p["mach"]), aoa_deg=float(p["aoa_deg"]),
                       lift_axis=p["lift_axis"], sideslip_deg=float(p["sideslip_deg"]),
                       gamma=float(p["gamma"]), reynolds=reynolds,
                       prandtl=float(p["prandtl"]), temperature_ref=float(p["temperature_ref"]),
                       viscosity_law=p["viscosity_law"])
        except ValueError as error:  # what the mesh's dimension does not allow
            raise ConfigError(f"{self.path}: [physics] {error}") from None


def parse_case(data: dict, path: Path, schema: dict[str, dict[str, Key]]) -> Case:
    """Validate a parsed TOML document against a method's ``schema`` (:func:`mesh_schema`);
    ``path`` locates relative paths and errors."""
    source = str(path)
    unknown = sorted(set(data) - set(schema) - {"boundaries"})
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {', '.join(unknown)}; valid: "
                          f"{', '.join([*schema, 'boundaries'])}")
    sections = {name: section(data, name, source, schema) for name in schema}
    physics = sections["physics"]
    if physics["gamma"] <= 1:
        raise ConfigError(f"{source}: [physics] gamma must be above 1 (1.4 for air), found "
                          f"{physics['gamma']!r}")
    if physics["equations"] == "navier-stokes" and physics["reynolds"] is None:
        raise ConfigError(f"{source}: [physics] reynolds is required for navier-stokes")
    raw_boundaries = data.get("boundaries", {})  # empty: the mesh's markers are named
    if not isinstance(raw_boundaries, dict):       # when it is read (check_markers)
        raise ConfigError(f"{source}: [boundaries] must map each marker to one of "
                          f"{', '.join(CONDITIONS)}")
    boundaries = {marker: BoundarySpec.parse(marker, value)
                  for marker, value in raw_boundaries.items()}
    base = path.parent

    def resolve(value):
        return None if value is None else (base / value)

    run, output = sections["run"], sections["output"]
    return Case(
        path=path, method=sections["solver"]["method"],
        mesh_file=resolve(sections["mesh"]["file"]),
        plan_file=resolve(sections["mesh"]["plan"]), restart=resolve(run["restart"]),
        physics=physics, scheme=sections["scheme"], run=run, boundaries=boundaries,
        output_directory=resolve(output["directory"]),
        checkpoint_every=output["checkpoint_every"],
        history_every=output["history_every"],
        vtu_compression=output["vtu_compression"],
        reference_area=float(physics["reference_area"]),
        mesh_scale=float(sections["mesh"]["scale"]),
        mesh_refine=sections["mesh"]["refine"],
        mesh_surface=sections["mesh"]["surface"],
        given={name: frozenset(data.get(name, {})) for name in schema},
    )


def _viscous(case: Case) -> bool:
    return case.physics["equations"] == "navier-stokes"


#: Keys of every mesh-based method that only some configurations read:
#: (section, key) -> (what reads it, the test).
READ_BY = {
    ("physics", "reynolds"): ("equations = 'navier-stokes'", _viscous),
    ("physics", "prandtl"): ("equations = 'navier-stokes'", _viscous),
    ("physics", "viscosity_law"): ("equations = 'navier-stokes'", _viscous),
    ("mesh", "surface"): ("[mesh] refine", lambda case: case.mesh_refine > 0),
}


def keys_unread(case: Case, read_by: dict = READ_BY) -> list[str]:
    """A line for each key ``case`` sets that nothing reads in its configuration, by the
    table ``read_by`` (default :data:`READ_BY`; a method adds its own keys)."""
    return [f"{case.path}: [{section}] {key} does nothing here (it needs {needs})"
            for (section, key), (needs, reads) in read_by.items()
            if case.sets(section, key) and not reads(case)]
