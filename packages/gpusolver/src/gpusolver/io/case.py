"""Case files (TOML): strict parsing into typed settings.

Every section and key is checked before any work: an unknown key or value stops
the run with a message that lists what is valid. Paths are relative to the case
file's folder.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusolver.backends import BACKENDS, PRECISIONS
from gpusolver.errors import ConfigError
from gpusolver.integrators import IMPLICIT, INTEGRATORS
from gpusolver.integrators.newton_krylov import DEFAULT_KRYLOV_VECTORS
from gpusolver.physics.boundary import CONDITIONS
from gpusolver.physics.fluxes import FLUXES
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.accumulate import STRATEGIES
from gpusolver.solvers.fv.discretisation import BoundarySpec, Scheme
from gpusolver.solvers.fv.gradients import GRADIENTS, LIMITERS
from gpusolver.solvers.fv.solver import PRECONDITIONERS, Stepping

EQUATIONS = ("euler", "navier-stokes")


@dataclass(frozen=True)
class Key:
    """One allowed key: its type, allowed values, default and whether it is required."""

    kind: type | tuple[type, ...]
    choices: tuple | None = None
    default: Any = None
    required: bool = False
    positive: bool = False


#: Section -> key -> :class:`Key`. ``boundaries`` is free-form (marker names).
SCHEMA: dict[str, dict[str, Key]] = {
    "mesh": {"file": Key(str, required=True), "plan": Key(str)},
    "physics": {
        "equations": Key(str, EQUATIONS, "euler"),
        "mach": Key((int, float), required=True, positive=True),
        "aoa_deg": Key((int, float), default=0.0),
        "reynolds": Key((int, float), positive=True),
        "gamma": Key((int, float), default=1.4, positive=True),
        "prandtl": Key((int, float), default=0.72, positive=True),
        "temperature_ref": Key((int, float), default=288.15, positive=True),
        "reference_area": Key((int, float), default=1.0, positive=True),
    },
    "scheme": {
        "flux": Key(str, tuple(FLUXES), "roe"),
        "order": Key(int, (1, 2), 2),
        "gradient": Key(str, tuple(GRADIENTS), "least-squares"),
        "limiter": Key(str, LIMITERS, "venkatakrishnan"),
        "venkatakrishnan_k": Key((int, float), default=Scheme.venkatakrishnan_k, positive=True),
        "venkatakrishnan_cap": Key((int, float), default=Scheme.venkatakrishnan_cap,
                                   positive=True),
    },
    "run": {
        "backend": Key(str, BACKENDS, "auto"),
        "precision": Key(str, tuple(PRECISIONS), "fp64"),
        "strategy": Key(str, tuple(STRATEGIES), "atomic"),
        "time_integrator": Key(str, (*INTEGRATORS, *IMPLICIT), "rk4"),
        "cfl": Key((int, float), default=1.0, positive=True),
        "cfl_max": Key((int, float), positive=True),
        "freeze_limiter": Key((int, float), positive=True),
        "preconditioner": Key(str, tuple(PRECONDITIONERS), "lu"),
        "krylov_vectors": Key(int, default=DEFAULT_KRYLOV_VECTORS, positive=True),
        "local_time_step": Key(bool, default=True),
        "iterations": Key(int, default=200, positive=True),
        "residual_reduction": Key((int, float), positive=True),
        "restart": Key(str),
    },
    "output": {
        "directory": Key(str, default="out"),
        "checkpoint_every": Key(int, default=100, positive=True),
    },
}


@dataclass(frozen=True)
class Case:
    """A validated case.

    Attributes
    ----------
    path : pathlib.Path
        The case file.
    mesh_file, plan_file, restart : pathlib.Path or None
    gas : Gas
        Without ``dim``: the mesh decides it (see :meth:`gas_for`).
    scheme : Scheme
    stepping : Stepping
    boundaries : dict of str to BoundarySpec
    run : dict
        ``backend``, ``precision``, ``strategy``, ``iterations``, ``residual_reduction``
        (stop once the RMS density residual has fallen by this factor; None: never).
    output_directory : pathlib.Path
    checkpoint_every : int
    reference_area : float
    """

    path: Path
    mesh_file: Path
    plan_file: Path | None
    restart: Path | None
    physics: dict
    scheme: Scheme
    stepping: Stepping
    boundaries: dict[str, BoundarySpec]
    run: dict
    output_directory: Path
    checkpoint_every: int
    reference_area: float

    def gas_for(self, dim: int) -> Gas:
        """The gas and free stream for a mesh of dimension ``dim``."""
        p = self.physics
        reynolds = p["reynolds"] if p["equations"] == "navier-stokes" else None
        return Gas(dim=dim, mach=float(p["mach"]), aoa_deg=float(p["aoa_deg"]),
                   gamma=float(p["gamma"]), reynolds=reynolds, prandtl=float(p["prandtl"]),
                   temperature_ref=float(p["temperature_ref"]))


def _check_value(where: str, key: Key, value: Any) -> Any:
    kinds = key.kind if isinstance(key.kind, tuple) else (key.kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{where}: expected {names}, found {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, found {value!r}")
    if key.choices is not None and value not in key.choices:
        raise ConfigError(f"{where}: unknown value {value!r}; valid: "
                          f"{', '.join(map(str, key.choices))}")
    if key.positive and value <= 0:
        raise ConfigError(f"{where}: must be positive, found {value!r}")
    return value


def _section(data: dict, name: str, source: str) -> dict:
    given = data.get(name, {})
    if not isinstance(given, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    schema = SCHEMA[name]
    unknown = sorted(set(given) - set(schema))
    if unknown:
        raise ConfigError(f"{source}: [{name}] unknown key(s) {', '.join(unknown)}; valid: "
                          f"{', '.join(schema)}")
    values = {}
    for key, spec in schema.items():
        if key in given:
            values[key] = _check_value(f"{source}: [{name}] {key}", spec, given[key])
        elif spec.required:
            raise ConfigError(f"{source}: [{name}] {key} is required")
        else:
            values[key] = spec.default
    return values


def parse_case(data: dict, path: Path) -> Case:
    """Validate a parsed TOML document; ``path`` locates relative paths and errors."""
    source = str(path)
    unknown = sorted(set(data) - set(SCHEMA) - {"boundaries"})
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {', '.join(unknown)}; valid: "
                          f"{', '.join([*SCHEMA, 'boundaries'])}")
    sections = {name: _section(data, name, source) for name in SCHEMA}
    physics = sections["physics"]
    for key in ("residual_reduction", "freeze_limiter"):
        value = sections["run"][key]
        if value is not None and value >= 1:
            raise ConfigError(f"{source}: [run] {key} is a factor of reduction and must be "
                              f"below 1 (e.g. 1e-8), found {value!r}")
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
                      float(scheme["venkatakrishnan_k"]), float(scheme["venkatakrishnan_cap"])),
        stepping=Stepping(run["time_integrator"], float(run["cfl"]), run["local_time_step"],
                          _float_or_none(run["cfl_max"]), _float_or_none(run["freeze_limiter"]),
                          run["preconditioner"], run["krylov_vectors"]),
        boundaries=boundaries,
        run={k: run[k] for k in ("backend", "precision", "strategy", "iterations",
                                 "residual_reduction")},
        output_directory=resolve(output["directory"]),
        checkpoint_every=output["checkpoint_every"],
        reference_area=float(physics["reference_area"]),
    )


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)


def load_case(path: str | Path) -> Case:
    """Read and validate the case file at ``path``.

    Raises
    ------
    ConfigError
        Naming the file and the offending section, key or value.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as error:
        raise ConfigError(f"cannot read case file {path}: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from error
    return parse_case(data, path)
