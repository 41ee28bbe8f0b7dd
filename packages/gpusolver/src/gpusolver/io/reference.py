"""The case-file reference (``docs/case_format.md``), generated from the schemas."""

from __future__ import annotations

from gpusolver.io.case import SCHEMA
from gpusolver.io.schema import schema_tables
from gpusolver.io.vortex_case import VORTEX_SCHEMA
from gpusolver.physics.boundary import CONDITIONS

STEADY_EXAMPLE = """
[mesh]
file = "../../shared/meshes/su2/mesh_NACA0012_inv.su2"

[physics]
mach = 0.8
aoa_deg = 1.25

[boundaries]
airfoil = "slip-wall"
farfield = "farfield"

[run]
time_integrator = "lusgs"
sweeps = "colours"
cfl = 50
cfl_max = 1e4
freeze_limiter = 1e-2
iterations = 40000
residual_reduction = 1e-8
"""

EXPLICIT_EXAMPLE = """
[mesh]
file = "../data/naca0012_tri.msh"
plan = "../out/demo/plan.npz"          # meshorder reorder ... --colour --hyperplanes

[physics]
mach = 0.63
aoa_deg = 2.0

[boundaries]
airfoil = "slip-wall"
farfield = { type = "farfield", vortex = true }

[run]
strategy = "colour"
time_integrator = "rk4"
cfl = 1.5
iterations = 2000
restart = "../out/naca0012/checkpoint.npz"   # continue a finished run

[output]
directory = "../out/naca0012"
"""


def case_reference() -> str:
    """The case-file format as markdown, generated from :data:`SCHEMA` and the registries.

    ``docs/case_format.md`` is this text (a test keeps them equal).
    """
    lines = ["# Case files (`gpusolver run case.toml`)", "",
             "Generated from `gpusolver.io.case.SCHEMA` by `case_reference()`; do not edit.",
             "Paths are relative to the case file. An unknown section, key, value or marker",
             "stops the run before any work, naming the valid ones; numbers must be finite.",
             ""]
    lines += schema_tables(SCHEMA)
    lines += ["## [boundaries]", "",
              "One entry per mesh marker: `marker = \"condition\"`, or a table",
              "`marker = { type = \"condition\", option = value }`.", "",
              "| condition | options | meaning |", "| --- | --- | --- |"]
    for name, condition in CONDITIONS.items():
        options = "; ".join(f"`{k}`: {v}" for k, v in condition.options.items())
        doc = condition.summary or (condition.ghost.__doc__ or "").strip().splitlines()[0]
        lines.append(f"| `{name}` | {options} | {doc} |")
    lines += ["", "## Examples", "", "Steady, implicit (`cases/naca0012_transonic.toml`):", "",
              "```toml", STEADY_EXAMPLE.strip(), "```", "",
              "Explicit, restarted from a checkpoint:", "", "```toml",
              EXPLICIT_EXAMPLE.strip(), "```", ""]
    lines += ["# Vortex cases (`[solver] method = \"vortex\"`)", "",
              "No mesh and no [boundaries]: a body contour and these sections.", ""]
    lines += schema_tables(VORTEX_SCHEMA, level="##")
    return "\n".join(lines)
