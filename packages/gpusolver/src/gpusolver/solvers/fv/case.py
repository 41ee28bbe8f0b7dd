"""The finite-volume keys of a case file, and the scheme and stepping they make."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.integrators import IMPLICIT, INTEGRATORS
from gpusolver.integrators.newton_krylov import DEFAULT_KRYLOV_VECTORS, DEFAULT_LINEAR_TOLERANCE
from gpusolver.io.case import READ_BY, Case, keys_unread, mesh_schema
from gpusolver.io.schema import NUMBER, Key
from gpusolver.layout.geometry import FVGeometry
from gpusolver.physics.fluxes import FLUXES
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.accumulate import STRATEGIES
from gpusolver.solvers.fv.discretisation import AUTO_GRADIENT, KERNELS, Scheme
from gpusolver.solvers.fv.gradients import GRADIENTS, LIMITERS
from gpusolver.solvers.fv.jst import JST
from gpusolver.solvers.fv.lusgs import SWEEPS
from gpusolver.solvers.fv.multigrid import AUTO_CYCLE, CYCLES
from gpusolver.solvers.fv.solver import AUTO_STRATEGY, PRECONDITIONERS, TURBULENCE_MODELS, Stepping
from gpusolver.solvers.fv.turbulence import SOLVERS as TURBULENCE_SOLVERS

SCHEME_KEYS: dict[str, Key] = {
    "flux": Key(str, (*FLUXES, JST), "roe",
                help="Riemann flux, or jst: the central JST scheme (euler)"),
    "order": Key(int, (1, 2), 2, help="1: cell values; 2: limited linear reconstruction"),
    "gradient": Key(str, (AUTO_GRADIENT, *GRADIENTS), Scheme.gradient,
                    help="cell gradients; auto: least-squares in 2D, green-gauss in 3D"),
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
    "jst_stretching": Key(bool, default=Scheme.jst_stretching,
                          help="jst: SU2's stretching factor on each face's dissipation "
                               "(converges on prism layers; false: JST as before "
                               "2026-11-29)"),
}

RUN_KEYS: dict[str, Key] = {
    "strategy": Key(str, (*STRATEGIES, AUTO_STRATEGY), "atomic",
                    help="face-to-cell accumulation (see gpusolver.layout.strategies); "
                         "auto: the faster of atomic and reduce, each with 64, 128 or "
                         "256 threads per block, for the fused residual, timed at set-up "
                         "in the run's precision (and, on a GPU, a plan's "
                         "layout that meshorder predicted re-checked there)"),
    "kernels": Key(str, KERNELS, "fused",
                   help="fused: CUDA kernels and graphs on the cupy backend; "
                        "arrays: array code (the reference)"),
    "time_integrator": Key(str, (*INTEGRATORS, *IMPLICIT), "rk4",
                           help="explicit Runge-Kutta, or implicit for steady states"),
    "cfl_max": Key(NUMBER, positive=True,
                   help="implicit: ramp the CFL number with the residual's fall up to this"),
    "freeze_limiter": Key(NUMBER, positive=True, below_one=True,
                          help="freeze the limiter from above (it may fall, never "
                               "rise) once the residual has fallen by this factor "
                               "and stalled, or (implicit) at a 200-step stall above it"),
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
    "max_update": Key(NUMBER, default=Stepping.max_update,
                      help="lusgs: the largest change of a cell's density and energy "
                           "in one step, as a fraction (larger ones are scaled back per "
                           "cell, as are updates to a non-positive density or pressure); "
                           "0: positivity only"),
    "lusgs_omega": Key(NUMBER, default=Stepping.lusgs_omega, positive=True,
                       help="lusgs (and multigrid's coarse steps, newton-krylov's lusgs "
                            "preconditioner): over-relaxation of the spectral radius in "
                            "the implicit operator, at least 1; larger damps more (3 helped "
                            "JST on a stretched C-grid and cost twice the steps on a "
                            "regular mesh)"),
    "line_implicit": Key(bool, default=False,
                         help="lusgs (and newton-krylov's lusgs preconditioner): solve each "
                              "line of strongly coupled cells (a boundary layer's stretched "
                              "cells, wall to edge) together, a block tridiagonal system a "
                              "line, in sweeps over colours of lines (stretched meshes: "
                              "cases/oneram6_sa.toml); coarse levels and the turbulence "
                              "model sweep single cells"),
    "turbulence_cfl": Key(NUMBER, default=Stepping.turbulence_cfl, positive=True,
                          help="RANS: the turbulence model's CFL number is the mean "
                               "flow's up to this (SA-neg: cut tenfold where nu_tilde's "
                               "residual runs away)"),
    "turbulence_steps": Key(int, default=Stepping.turbulence_steps, positive=True,
                            help="RANS: the turbulence model's implicit steps per step of "
                                 "the mean flow"),
    "turbulence_solver": Key(str, TURBULENCE_SOLVERS, Stepping.turbulence_solver,
                             help="RANS: the turbulence model's implicit matrix solved by lu "
                                  "(exact, as the preconditioner lu), sweeps (symmetric "
                                  "Gauss-Seidel on the LU-SGS levels, on the GPU) or auto "
                                  "(lu in 2D, sweeps in 3D)"),
    "multigrid_cycle": Key(str, (*CYCLES, AUTO_CYCLE), AUTO_CYCLE,
                           help="multigrid: v (each coarse level once), w (twice) or auto "
                                "(v; on 2-D meshes w from where the residual stalls)"),
    "preconditioner": Key(str, tuple(PRECONDITIONERS), "lu",
                          help="newton-krylov: lu (exact, 2D and moderate meshes: on the GPU by "
                               "block cyclic reduction over levels of cells, else SuperLU "
                               "on the host) or lusgs"),
    "krylov_vectors": Key(int, default=DEFAULT_KRYLOV_VECTORS, positive=True,
                          help="newton-krylov: most GMRES vectors per step"),
    "linear_tolerance": Key(NUMBER, default=DEFAULT_LINEAR_TOLERANCE, positive=True,
                            help="newton-krylov: GMRES stops once the linear residual has "
                                 "fallen by this factor (or at krylov_vectors); tightened "
                                 "once to 1e-5 (100 vectors) where the residual rises or "
                                 "stalls at cfl_max"),
    "preconditioner_every": Key(int, default=Stepping.preconditioner_every, positive=True,
                                help="newton-krylov: steps one preconditioner (lu: one "
                                     "factorisation) serves at most; sooner anew when the "
                                     "time step has changed by more than a factor of 2"),
}

#: Section -> key -> :class:`Key` of a finite-volume case.
SCHEMA = mesh_schema("fv", "fv: cell-centred finite volume (the default)", SCHEME_KEYS,
                     RUN_KEYS)
SCHEMA["physics"]["turbulence"] = Key(
    str, ("none", *TURBULENCE_MODELS), "none",
    help="navier-stokes: RANS model, sa-neg (Spalart-Allmaras, negative form), sst "
         "(Menter's SST-V) or none")


def scheme_of(case: Case) -> Scheme:
    """The spatial scheme of a finite-volume ``case``."""
    s = case.scheme
    return Scheme(s["flux"], s["order"], s["gradient"], s["limiter"],
                  float(s["venkatakrishnan_k"]), float(s["venkatakrishnan_cap"]),
                  float(s["jst_k2"]), float(s["jst_k4"]), s["jst_stretching"])


def stepping_of(case: Case) -> Stepping:
    """The time stepping of a finite-volume ``case``."""
    run = case.run
    return Stepping(run["time_integrator"], float(run["cfl"]), run["local_time_step"],
                    _float_or_none(run["cfl_max"]), _float_or_none(run["freeze_limiter"]),
                    run["preconditioner"], run["krylov_vectors"], run["sweeps"],
                    run["multigrid"], run["multigrid_cycle"], _float_or_none(run["cfl_frozen"]),
                    float(run["turbulence_cfl"]), _max_update(run["max_update"]),
                    _omega(run["lusgs_omega"]), run["preconditioner_every"],
                    run["turbulence_steps"], run["turbulence_solver"],
                    float(run["linear_tolerance"]), run["line_implicit"])


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)


def _omega(value) -> float:
    """``[run] lusgs_omega``, at least 1.

    Raises
    ------
    ConfigError
        Below 1 (the implicit operator would not be diagonally dominant).
    """
    if value < 1:
        raise ConfigError(f"lusgs_omega must be at least 1, not {value}")
    return float(value)


def _max_update(value) -> float | None:
    """``[run] max_update``: 0 bounds nothing (positivity only).

    Raises
    ------
    ConfigError
        For a negative fraction.
    """
    if value < 0:
        raise ConfigError(f"max_update must be a fraction >= 0 (0: no bound), not {value}")
    return float(value) or None


def _implicit(case: Case) -> bool:
    return case.run["time_integrator"] in IMPLICIT


def _lusgs(case: Case) -> bool:
    run = case.run
    return run["time_integrator"] == "lusgs" or (
        run["time_integrator"] == "newton-krylov" and run["preconditioner"] == "lusgs")


def _limited(case: Case) -> bool:
    return case.scheme["flux"] != JST and case.scheme["order"] == 2


#: Keys of finite-volume cases that only some configurations read (besides
#: :data:`gpusolver.io.case.READ_BY`): (section, key) -> (what reads it, the test).
_READ_BY = {
    ("run", "cfl_max"): ("an implicit time_integrator", _implicit),
    ("run", "cfl_frozen"): ("an implicit time_integrator", _implicit),
    ("run", "sweeps"): ("an implicit time_integrator", _implicit),
    ("run", "max_update"): ("an implicit time_integrator", _implicit),
    ("run", "lusgs_omega"): ("LU-SGS steps or preconditioner", _lusgs),
    ("run", "line_implicit"): ("LU-SGS steps or preconditioner", _lusgs),
    ("run", "multigrid"): ("time_integrator = 'lusgs'",
                           lambda c: c.run["time_integrator"] == "lusgs"),
    ("run", "multigrid_cycle"): ("multigrid > 0", lambda c: c.run["multigrid"] > 0),
    ("run", "preconditioner"): ("time_integrator = 'newton-krylov'",
                                lambda c: c.run["time_integrator"] == "newton-krylov"),
    ("run", "krylov_vectors"): ("time_integrator = 'newton-krylov'",
                                lambda c: c.run["time_integrator"] == "newton-krylov"),
    ("run", "linear_tolerance"): ("time_integrator = 'newton-krylov'",
                                  lambda c: c.run["time_integrator"] == "newton-krylov"),
    ("run", "preconditioner_every"): ("time_integrator = 'newton-krylov'",
                                      lambda c: c.run["time_integrator"] == "newton-krylov"),
    ("scheme", "jst_k2"): ("flux = 'jst'", lambda c: c.scheme["flux"] == JST),
    ("scheme", "jst_k4"): ("flux = 'jst'", lambda c: c.scheme["flux"] == JST),
    ("scheme", "jst_stretching"): ("flux = 'jst'", lambda c: c.scheme["flux"] == JST),
    ("scheme", "limiter"): ("a Riemann flux at order = 2", _limited),
    ("scheme", "venkatakrishnan_k"): ("a Riemann flux at order = 2", _limited),
    ("scheme", "venkatakrishnan_cap"): ("a Riemann flux at order = 2", _limited),
    ("run", "freeze_limiter"): ("a Riemann flux at order = 2", _limited),
    ("run", "turbulence_cfl"): ("[physics] turbulence", lambda c: c.physics["turbulence"]
                                != "none"),
    ("run", "turbulence_steps"): ("[physics] turbulence",
                                  lambda c: c.physics["turbulence"] != "none"),
    ("run", "turbulence_solver"): ("[physics] turbulence",
                                   lambda c: c.physics["turbulence"] != "none"),
}


def unused_keys(case: Case) -> list[str]:
    """A line for each key ``case`` sets that nothing reads in its configuration.

    Examples
    --------
    >>> from pathlib import Path
    >>> from gpusolver.io.case import parse_case
    >>> case = parse_case({"mesh": {"file": "m.msh"}, "physics": {"mach": 0.5, "reynolds": 1e6},
    ...                    "boundaries": {"wall": "slip-wall"}, "run": {"cfl_max": 100}},
    ...                   Path("c.toml"), SCHEMA)
    >>> for line in unused_keys(case): print(line)
    c.toml: [physics] reynolds does nothing here (it needs equations = 'navier-stokes')
    c.toml: [run] cfl_max does nothing here (it needs an implicit time_integrator)
    """
    return keys_unread(case, READ_BY | _READ_BY)


#: A flat symmetry boundary that the free stream crosses at more than this angle (degrees)
#: gets a line in the log.
SYMMETRY_CROSSING_DEG = 0.01


def symmetry_crossings(case: Case, geometry: FVGeometry, gas: Gas,
                       to_host: Callable = np.asarray) -> list[str]:
    """A line for each flat symmetry boundary of ``geometry`` that the free stream of
    ``gas`` crosses: a half model needs the flow parallel to its symmetry plane, which the
    lift axis (the mesh's thickness axis) gives.

    Parameters
    ----------
    case : Case
        Its boundaries (each marker's condition, patterns resolved) and path.
    geometry : FVGeometry
        On the host or the GPU: only the symmetry faces' normals and areas are read.
    gas : Gas
        The free stream's direction and the lift axis.
    to_host : callable
        The backend's copy of an array to NumPy (``Backend.to_host`` for a GPU geometry).

    Returns
    -------
    list of str
        One line per crossed plane, its angle in degrees and the lift axis to try.
    """
    direction = gas.flow_direction
    axes = "xyz"[:gas.dim]
    lines = []
    for name, (first, end) in geometry.markers.items():
        spec = case.boundaries.get(name)
        if spec is None or spec.condition.name != "symmetry" or end == first:
            continue
        area, normal = (to_host(a) for a in (geometry.area[first:end],
                                             geometry.normal[:, first:end]))
        summed = normal @ area
        if np.linalg.norm(summed) < (1.0 - 1e-9) * area.sum():
            continue  # not flat
        normal = summed / np.linalg.norm(summed)
        angle = math.degrees(math.asin(min(1.0, abs(float(normal @ direction)))))
        if angle <= SYMMETRY_CROSSING_DEG:
            continue
        axis = axes[int(np.argmax(abs(normal)))]
        others = [a for a in axes if a not in ("x", axis)]
        hint = (f" ([physics] lift_axis = '{others[0]}' here?)"
                if gas.dim == 3 and axis != "x" and others and others[0] != gas.lift_axis
                else "")
        lines.append(f"{case.path}: the free stream crosses the symmetry plane {name!r} "
                     f"(normal {axis}) at {angle:.3g} degrees: a half model's flow is "
                     f"parallel to its symmetry plane{hint}")
    return lines
