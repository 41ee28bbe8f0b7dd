"""The case-file reference (``docs/case_format.md``), generated from every method's schema
(:data:`gpusolver.systems.SYSTEMS`) and the boundary conditions' registry."""

from __future__ import annotations

from gpusolver.io.schema import schema_tables
from gpusolver.physics.boundary import CONDITIONS
from gpusolver.systems import SYSTEMS

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
    """The case-file format as markdown: a section per method with a table per section of
    its schema, the boundary conditions and examples.

    ``docs/case_format.md`` is this text (a test keeps them equal).
    """
    lines = ["# Case files (`gpusolver run case.toml`)", "",
             "Generated from each method's schema by `gpusolver.case_reference`; do not edit.",
             "Paths are relative to the case file. An unknown section, key, value or marker",
             "stops the run before any work, naming the valid ones; numbers must be finite.",
             "`[solver] method` picks the method: " + ", ".join(f"`{m}`" for m in SYSTEMS)
             + " (default `fv`).", ""]
    for method, system in SYSTEMS.items():
        lines += [f"# `method = \"{method}\"`", "", system.__doc__.strip().splitlines()[0], ""]
        lines += schema_tables(system.schema, level="##")
        if method == "fv":
            lines += _boundaries()
    return "\n".join(lines)


def _boundaries() -> list[str]:
    """The [boundaries] section of the mesh-based methods, with examples."""
    lines = ["## [boundaries]", "",
             "One entry per mesh marker: `marker = \"condition\"`, or a table",
             "`marker = { type = \"condition\", option = value }` (finite volume and DG).",
             "A key may be a glob pattern (`\"curve_*\" = \"slip-wall\"`, `*`, `?` and",
             "`[...]` as in Python's fnmatch) for meshes that name every curve apart: a",
             "marker's own entry wins, then the first pattern that matches it, in file order.",
             "",
             "| condition | options | meaning |", "| --- | --- | --- |"]
    for name, condition in CONDITIONS.items():
        options = "; ".join(f"`{k}`: {v}" for k, v in condition.options.items())
        doc = condition.summary or (condition.ghost.__doc__ or "").strip().splitlines()[0]
        lines.append(f"| `{name}` | {options} | {doc} |")
    lines += ["", "## Examples", "", "Steady, implicit (`cases/naca0012_transonic.toml`):",
              "", "```toml", STEADY_EXAMPLE.strip(), "```", "",
              "Explicit, restarted from a checkpoint:", "", "```toml",
              EXPLICIT_EXAMPLE.strip(), "```", ""]
    return lines
