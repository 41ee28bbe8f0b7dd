"""Run the shipped steady settings on meshes made by other people: a table of how far each
converges.

Usage: ``python scripts/corpus.py [--meshes NAME,...] [--iterations N] [--json out.json]
[--backend auto] [--settings CASE.toml]``. Each mesh of :data:`CORPUS` (read from
``../shared/meshes``) runs as ``python -m gpusolver run`` with the [scheme] and [run]
sections of ``cases/naca0012_transonic.toml`` (the project's recommended steady settings;
no per-mesh tuning; ``--settings``: another case's) at its own condition, to six orders
or ``--iterations`` steps. Per mesh it prints and records the cells, the orders the
density residual fell (at the end, and at its lowest: a residual that wanders ends
anywhere between), the steps, the whole run's seconds, CL, CD and the run's notes (CFL
back-offs, limiter freezes, where an unconverged residual sits). ``--make`` first makes
the generated meshes that are missing (:data:`GENERATED`'s commands, and gmsh for
:data:`GEOMETRIES`). ``tests/gpusolver/test_corpus.py`` runs the 2-D ones for a few
steps in CI.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESHES = ROOT.parent / "shared" / "meshes"
SETTINGS = ROOT / "cases" / "naca0012_transonic.toml"

#: The mesh size factors at which gmsh meshes its ``naca12.geo`` for the corpus (the
#: shipped ``gmsh_naca12_3d_cl0.3.msh`` is 0.3).
NACA12_SIZES = (0.5, 0.2, 0.15)

#: Orders of the density residual's fall a run aims for (issue target).
ORDERS = 6


@dataclass(frozen=True)
class Entry:
    """One mesh of the corpus and the condition it runs at."""

    name: str
    path: str
    origin: str
    boundaries: dict
    physics: dict = field(default_factory=dict)
    dim: int = 2
    #: The folder ``path`` is in (the repository's own meshes: :data:`ROOT`).
    root: Path = MESHES

    @property
    def file(self) -> Path:
        """The mesh file."""
        return self.root / self.path


CORPUS = [
    Entry("su2-naca0012", "su2/mesh_NACA0012_inv.su2", "SU2 TestCases",
          {"airfoil": "slip-wall", "farfield": "farfield"}, {"mach": 0.8, "aoa_deg": 1.25}),
    Entry("su2-naca0012-c-grid", "su2/n0012_225-65.su2", "SU2 TestCases (TMR's 225x65)",
          {"airfoil": "slip-wall", "farfield": "farfield"}, {"mach": 0.8, "aoa_deg": 1.25}),
    Entry("tmr-naca0012-113x33", "tmr/naca0012/grids/n0012_113-33.p2dfmt",
          "NASA TMR's 113x33 C-grid (plot3d and its Neutral Map File)",
          {"viscous_solid": "slip-wall", "farfield_riem": "farfield"},
          {"mach": 0.8, "aoa_deg": 1.25}),
    Entry("su2-cylinder", "su2/mesh_cylinder_lam.su2", "SU2 TestCases",
          {"cylinder": "slip-wall", "farfield": "farfield"}, {"mach": 0.3}),
    Entry("pyfr-inc-cylinder", "pyfr/inc-cylinder.msh", "PyFR-Test-Cases (second-order elements)",
          {"wall": "slip-wall", "inlet": "farfield", "outlet": "farfield"}, {"mach": 0.3}),
    Entry("gmsh-boundary-layer", "gmsh/naca_boundary_layer_2d.msh", "gmsh's API example",
          {"curve_[12]": "slip-wall", "curve_*": "farfield"}, {"mach": 0.5, "aoa_deg": 2.0}),
    Entry("gmsh-wing-flap", "gmsh/gmsh_wing_flap_2d.msh", "gmsh's benchmarks/2d/wing.geo",
          {"curve_37[7-9]": "farfield", "curve_38?": "farfield", "curve_39?": "farfield",
           "curve_400": "farfield", "curve_*": "slip-wall"}, {"mach": 0.3, "aoa_deg": 4.0}),
    Entry("gmsh-naca12-wing", "gmsh/gmsh_naca12_3d_cl0.3.msh", "gmsh's benchmarks/3d/naca12.geo",
          {"surface_??": "slip-wall", "surface_110[01]": "symmetry",
           "surface_110[2-6]": "farfield"}, {"mach": 0.8, "aoa_deg": 2.0}, dim=3),
    # made where they run (--make: GENERATED's commands, GEOMETRIES), into
    # ../shared/meshes/generated
    Entry("generated-wing-prisms", "generated/wing_prisms.msh",
          "meshorder generate wing --cells 250000 (its 5 prism layers)",
          {"wing": "slip-wall", "symmetry": "symmetry", "farfield": "farfield"},
          {"mach": 0.8, "aoa_deg": 2.0}, dim=3),
    Entry("generated-oneram6-far1000", "generated/oneram6_far1000.msh",
          "meshorder generate oneram6 --cells 500000 --far 1000",
          {"wing": "slip-wall", "symmetry": "symmetry", "farfield": "farfield"},
          {"mach": 0.8395, "aoa_deg": 3.06}, dim=3),
    *(Entry(f"gmsh-naca12-geo-{factor}", f"generated/naca12_geo_{factor}.msh",
            f"gmsh's naca12.geo meshed by gmsh at mesh size factor {factor}",
            {"surface_??": "slip-wall", "surface_110[01]": "symmetry",
             "surface_110[2-6]": "farfield"}, {"mach": 0.8, "aoa_deg": 2.0}, dim=3)
      for factor in NACA12_SIZES),
    Entry("repository-wing", "data/wing.msh", "the repository's (thickness along y)",
          {"wing": "slip-wall", "symmetry": "symmetry", "farfield": "farfield"},
          {"mach": 0.8, "aoa_deg": 2.0, "lift_axis": "y", "reference_area": 2.25}, dim=3,
          root=ROOT),
]

#: The commands that make the generated meshes of :data:`CORPUS` (``meshorder`` on the
#: PATH, or ``python -m meshorder``).
GENERATED = {
    "generated/wing_prisms.msh": "meshorder generate wing {out} --cells 250000 --threads 16",
    "generated/oneram6_far1000.msh":
        "meshorder generate oneram6 {out} --cells 500000 --far 1000 --threads 16",
}

#: gmsh geometries meshed into generated files: ``{file: (geometry, mesh size factor)}``.
GEOMETRIES = {f"generated/naca12_geo_{factor}.msh": ("gmsh/naca12.geo", factor)
              for factor in NACA12_SIZES}


def make_generated(entries: list[Entry]) -> None:
    """Make the generated meshes of ``entries`` that are missing: by :data:`GENERATED`'s
    commands, and :data:`GEOMETRIES` meshed by gmsh."""
    from meshorder.io.read import read_mesh
    from meshorder.io.write import write_mesh

    for entry in entries:
        out = entry.file
        if out.exists():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if entry.path in GEOMETRIES:
            geometry, factor = GEOMETRIES[entry.path]
            write_mesh(read_mesh(MESHES / geometry, mesh_size_factor=factor), out)
        elif entry.path in GENERATED:
            command = GENERATED[entry.path].format(out=out).split()
            subprocess.run([sys.executable, "-m", *command], check=True)


def case_text(entry: Entry, iterations: int, backend: str, out: Path,
              settings_file: Path = SETTINGS) -> str:
    """The case file of ``entry``: the steady settings of ``settings_file``, its mesh and
    condition."""
    with open(settings_file, "rb") as f:
        settings = tomllib.load(f)
    run = settings["run"] | {"backend": backend, "iterations": iterations,
                             "residual_reduction": 10.0 ** -ORDERS}
    return toml_text({"mesh": {"file": str(entry.file)},
                      "physics": {"equations": "euler"} | entry.physics,
                      "boundaries": entry.boundaries, "scheme": settings["scheme"],
                      "run": run,
                      "output": {"directory": str(out), "checkpoint_every": iterations}})


def toml_text(sections: dict[str, dict]) -> str:
    """A case file of ``sections`` (``{section: {key: value}}``; values TOML takes as
    JSON writes them: strings, numbers, booleans)."""
    lines = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{json.dumps(key)} = {json.dumps(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def run_entry(entry: Entry, iterations: int, backend: str,
              settings_file: Path = SETTINGS) -> dict:
    """One run of ``entry`` (see the module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out"
        case = Path(folder) / "case.toml"
        case.write_text(case_text(entry, iterations, backend, out, settings_file))
        row = {"mesh": entry.name, "origin": entry.origin, "file": entry.path}
        return row | run_case_file(case, out)


def run_case_file(case: Path, out: Path, orders: float = ORDERS) -> dict:
    """``python -m gpusolver run case --quiet`` (its output folder ``out``), summed up:
    the whole run's seconds, its log lines (``notes``), and either its last error line
    (``error``) or the cells, steps, orders the density residual fell (at the end and
    at its lowest), CL, CD and whether it fell ``orders`` orders."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpusolver", "run", str(case), "--quiet"],
                          capture_output=True, text=True)
    row = {"seconds": round(time.perf_counter() - start, 2),
           "notes": [line for line in done.stdout.strip().splitlines()
                     if not line.startswith("wrote ")]}
    if done.returncode != 0:
        return row | {"error": done.stderr.strip().splitlines()[-1:]}
    with open(out / "history.csv", newline="") as f:
        history = list(csv.DictReader(f))
    first, last = float(history[0]["residual_0"]), float(history[-1]["residual_0"])
    lowest = min(float(h["residual_0"]) for h in history)
    return row | {"cells": solution_cells(out / "solution.vtu"), "steps": len(history),
                  "orders": round(-math.log10(max(last / first, 1e-300)), 2),
                  "best_orders": round(-math.log10(max(lowest / first, 1e-300)), 2),
                  "cl": float(history[-1]["cl"]), "cd": float(history[-1]["cd"]),
                  "converged": last <= 10.0 ** -orders * first}


def solution_cells(path: Path) -> int:
    """The ``NumberOfCells`` of a ``.vtu`` file's piece, read from its header."""
    with open(path, "rb") as f:
        header = f.read(4096).decode("ascii", errors="replace")
    return int(re.search(r'NumberOfCells="(\d+)"', header).group(1))


def markdown(rows: list[dict]) -> str:
    """The table of ``rows``."""
    lines = ["| mesh | origin | cells | steps | orders (lowest on the way) | whole run s | CL "
             "| CD |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['mesh']} | {r['origin']} | | failed: {' '.join(r['error'])} "
                         "| | | | |")
            continue
        lines.append(f"| {r['mesh']} | {r['origin']} | {r['cells']:,} | {r['steps']} "
                     f"| {r['orders']} ({r['best_orders']}) | {r['seconds']} | {r['cl']:.5f} "
                     f"| {r['cd']:.5f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meshes", default=",".join(e.name for e in CORPUS))
    parser.add_argument("--iterations", type=int, default=8000)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--make", action="store_true",
                        help="first make the generated meshes that are missing")
    parser.add_argument("--settings", type=Path, default=SETTINGS,
                        help="the case whose [scheme] and [run] every mesh runs with")
    args = parser.parse_args()
    wanted = args.meshes.split(",")
    unknown = sorted(set(wanted) - {e.name for e in CORPUS})
    if unknown:
        parser.error(f"unknown mesh(es) {', '.join(unknown)}; valid: "
                     f"{', '.join(e.name for e in CORPUS)}")
    if args.make:
        make_generated([entry for entry in CORPUS if entry.name in wanted])
    rows = []
    for entry in CORPUS:
        if entry.name in wanted:
            rows.append(run_entry(entry, args.iterations, args.backend, args.settings))
            print(json.dumps(rows[-1]), flush=True)
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
