"""Run one case on several meshes of one generator recipe: does it converge on each?

Usage: ``python scripts/recipe_meshes.py CASE.toml --generate "GEOMETRY --cells N ..."
[--reorder="--sweep-colours --multigrid 2"] [--meshes 3] [--iterations N] [--json out.json]``.

``meshorder generate`` numbers cells in its threads' order, so each call of one recipe
makes another mesh (another cell count, other cells at a trailing edge); a case that
converges on one of them may not on the next. Each mesh is generated, planned with
``meshorder reorder`` and ``--reorder``'s options (no plan when that is empty), and run
as ``python -m gpusolver run`` with the case's settings, its mesh and plan replaced
(``--iterations``: another step limit). Per mesh it prints and records the seconds to
generate and to plan, then what ``scripts/corpus.py`` records of a run: the cells, the
steps, the orders the density residual fell (at the end and at its lowest), CL, CD,
the whole run's seconds, the run's log lines (CFL back-offs, a limiter frozen) or its
error (a divergence). A markdown table ends the output. Nothing is kept but the JSON.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from corpus import run_case_file, toml_text


def case_sections(case: Path, mesh: Path, plan: Path | None, out: Path,
                  iterations: int | None) -> dict[str, dict]:
    """The sections of ``case`` with its mesh, plan and output folder replaced (and its
    step limit, with ``iterations``)."""
    with open(case, "rb") as f:
        sections = tomllib.load(f)
    sections["mesh"] = {k: v for k, v in sections.get("mesh", {}).items() if k != "plan"}
    sections["mesh"]["file"] = str(mesh)
    if plan is not None:
        sections["mesh"]["plan"] = str(plan)
    if iterations is not None:
        sections["run"] = sections.get("run", {}) | {"iterations": iterations}
    output = sections.get("output", {}) | {"directory": str(out)}
    sections["output"] = {k: v for k, v in output.items() if k != "restart"}
    return sections


def timed(command: list[str]) -> float:
    """Run ``python -m`` ``command``; its seconds. Raises on failure, with its error."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: {done.stderr.strip().splitlines()[-1:]}")
    return round(time.perf_counter() - start, 2)


def run_mesh(case: Path, generate: list[str], reorder: list[str] | None, folder: Path,
             iterations: int | None) -> dict:
    """Generate one mesh of the recipe in ``folder``, plan it and run ``case`` on it."""
    mesh, plan, out = folder / "mesh.msh", folder / "plan.npz", folder / "out"
    row = {"generate_s": timed(["meshorder", "generate", generate[0], str(mesh),
                                *generate[1:]])}
    if reorder is not None:
        row["reorder_s"] = timed(["meshorder", "reorder", str(mesh), str(plan), *reorder,
                                  "--quiet"])
    case_file = folder / "case.toml"
    case_file.write_text(toml_text(case_sections(case, mesh, plan if reorder is not None
                                                 else None, out, iterations)))
    return row | run_case_file(case_file, out)


def markdown(rows: list[dict]) -> str:
    """The table of ``rows``."""
    lines = ["| mesh | cells | generate + plan s | steps | orders (lowest on the way) "
             "| whole run s | CL | CD |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for k, r in enumerate(rows, 1):
        made = r["generate_s"] + r.get("reorder_s", 0.0)
        if "error" in r:
            lines.append(f"| {k} | | {made:.1f} | failed: {' '.join(r['error'])} | | "
                         f"{r['seconds']} | | |")
            continue
        lines.append(f"| {k} | {r['cells']:,} | {made:.1f} | {r['steps']} | {r['orders']} "
                     f"({r['best_orders']}) | {r['seconds']} | {r['cl']:.5f} | {r['cd']:.6f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", type=Path)
    parser.add_argument("--generate", required=True,
                        help="meshorder generate's geometry and options, without the file")
    parser.add_argument("--reorder", default="",
                        help="meshorder reorder's options, after '=' (empty: the case runs "
                             "without a plan)")
    parser.add_argument("--meshes", type=int, default=3)
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.case.is_file():
        parser.error(f"{args.case}: no such case file")
    generate = shlex.split(args.generate)
    reorder = shlex.split(args.reorder) if args.reorder.strip() else None
    rows = []
    for _ in range(args.meshes):
        with tempfile.TemporaryDirectory() as folder:
            rows.append(run_mesh(args.case.resolve(), generate, reorder, Path(folder),
                                 args.iterations))
        print(json.dumps(rows[-1]), flush=True)
        if args.json:  # after each mesh: a run cut short keeps what it measured
            args.json.write_text(json.dumps(rows, indent=1))
    print(markdown(rows))


if __name__ == "__main__":
    main()
