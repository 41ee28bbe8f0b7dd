"""Time PyFR's and gpusolver's DG right-hand sides side by side on the same meshes (issue 17).

For each element shape and degree, a structured square [-10, 10]^2 of quadrilaterals (or
each one split into two triangles) is sized so that PyFR has about ``--points`` solution
points. PyFR imports it (gmsh 2.2 ASCII, written here) and runs Shu's isentropic vortex
(2-D Euler, Rusanov, RK4 at a fixed step, characteristic far field on the four sides) in
this process through its Python API. Its time per right-hand side is the wall time of
``--steps`` steps after as many warm-up steps, over four right-hand sides a step. Then
``gpusolver bench --solver dg``'s :func:`~gpusolver.bench.dg.run_dg_benchmark` times our
right-hand side on the same mesh (native and ``rcm`` orders), in the same precisions.

Run on the device machine with PyFR's wheels installed (see docs/benchmarks.md)::

    python scripts/pyfr_side_by_side.py --out results/pyfr_side_by_side

Writes ``OUT.json`` and ``OUT.md``: per row, the code, shape, degree, precision, elements,
DOFs (PyFR's solution points; our modes), milliseconds per right-hand side, seconds per DOF
and per element per right-hand side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import meshio
import numpy as np

from gpusolver.bench.dg import run_dg_benchmark
from meshorder.testing import grid_mesh

#: Solution points per element of degree p in PyFR: tensor on quads, P_p on triangles.
PYFR_POINTS = {"quad": lambda p: (p + 1) ** 2, "tri": lambda p: (p + 1) * (p + 2) // 2}

#: The vortex of gpusolver.bench.dg.vortex_state on [-10, 10]^2 (centre 0, scale 2,
#: strength 5, free stream u = 0.5, rho = 1, p = 1 / gamma), as PyFR expressions.
VORTEX = {
    "rho": "pow(1 - 0.4*25/(8*1.4*pi*pi)*exp(1 - (x*x + y*y)/4), 2.5)",
    "u": "0.5 - 5/(2*pi)*exp(0.5*(1 - (x*x + y*y)/4))*y/2",
    "v": "5/(2*pi)*exp(0.5*(1 - (x*x + y*y)/4))*x/2",
    "p": "pow(1 - 0.4*25/(8*1.4*pi*pi)*exp(1 - (x*x + y*y)/4), 3.5)/1.4",
}

SIDES = ("left", "right", "bottom", "top")


def square(shape: str, degree: int, points: float):
    """The structured square for ``shape`` at ``degree`` with about ``points`` PyFR
    solution points, as a meshorder Mesh on [-10, 10]^2."""
    elements = points / PYFR_POINTS[shape](degree)
    side = round((elements if shape == "quad" else elements / 2) ** 0.5)
    mesh = grid_mesh(side, side, "quad" if shape == "quad" else "triangle")
    return dataclasses.replace(mesh, points=mesh.points * [20.0, 20.0, 1.0] - [10.0, 10.0, 0.0])


def write_pyfr_gmsh(mesh, path: Path) -> None:
    """``mesh`` as gmsh 2.2 ASCII with PyFR's physical names (``fluid``, the sides)."""
    cells, physical = [], []
    for block in mesh.cells:
        cells.append((block.type, block.nodes))
        physical.append(np.ones(len(block), int))
    ids = {name: i + 2 for i, name in enumerate(mesh.marker_names.values())}
    for block, markers in zip(mesh.facets, mesh.facet_markers, strict=True):
        cells.append((block.type, block.nodes))
        physical.append(np.array([ids[mesh.marker_names[int(m)]] for m in markers]))
    field_data = {"fluid": np.array([1, 2])} | {name: np.array([i, 1]) for name, i in ids.items()}
    out = meshio.Mesh(mesh.points, cells, field_data=field_data,
                      cell_data={"gmsh:physical": physical, "gmsh:geometrical": physical})
    meshio.write(path, out, file_format="gmsh22", binary=False)


def pyfr_config(degree: int, precision: str, dt: float, shape: str) -> str:
    """PyFR's configuration of the vortex run."""
    far = "\n".join(f"[soln-bcs-{side}]\ntype = char-riem-inv\nrho = 1.0\nu = 0.5\nv = 0.0\n"
                    f"p = {1 / 1.4!r}\n" for side in SIDES)
    ics = "\n".join(f"{k} = {v}" for k, v in VORTEX.items())
    points = "gauss-legendre" if shape == "quad" else "williams-shunn"
    return f"""[backend]
precision = {"double" if precision == "fp64" else "single"}
rank-allocator = linear

[constants]
gamma = 1.4

[solver]
system = euler
order = {degree}

[solver-time-integrator]
formulation = std
scheme = rk4
controller = none
tstart = 0.0
tend = 1.0
dt = {dt!r}

[solver-interfaces]
riemann-solver = rusanov

[solver-interfaces-line]
flux-pts = gauss-legendre

[solver-elements-{shape}]
soln-pts = {points}

{far}
[soln-ics]
{ics}
"""


def time_pyfr(mesh_path: Path, config: str, backend_name: str, steps: int, dt: float) -> float:
    """Seconds per right-hand side of PyFR (4 per RK4 step) over ``steps`` steps, after
    as many warm-up steps."""
    import mpi4py

    mpi4py.rc.initialize = False  # as PyFR's own command line: it starts MPI itself
    from mpi4py import MPI
    from pyfr.backends import get_backend
    from pyfr.inifile import Inifile
    from pyfr.mpiutil import init_mpi
    from pyfr.readers.native import NativeReader
    from pyfr.solvers import get_solver

    if not MPI.Is_initialized():
        init_mpi()
    cfg = Inifile(config)
    backend = get_backend(backend_name, cfg)
    solver = get_solver(backend, NativeReader(str(mesh_path)).mesh, None, cfg)
    solver.advance_to(steps * dt)
    backend.wait()
    start = time.perf_counter()
    solver.advance_to(2 * steps * dt)
    backend.wait()
    return (time.perf_counter() - start) / (4 * steps)


#: Columns of the markdown table (ours only: the CPU ones).
COLUMNS = ("code", "shape", "degree", "precision", "ordering", "elements", "dofs", "rhs_ms",
           "s_per_dof_rhs", "s_per_element_rhs", "cpu_rhs_ms", "gpu_vs_cpu")


def pyfr_rows(mesh, shape: str, degree: int, precisions: list[str], args) -> list[dict]:
    """PyFR's rows on ``mesh``: written, imported and timed per precision."""
    n = mesh.n_cells
    msh, pyfrm = args.work / f"{shape}{degree}.msh", args.work / f"{shape}{degree}.pyfrm"
    start = time.perf_counter()
    write_pyfr_gmsh(mesh, msh)
    subprocess.run([sys.executable, "-m", "pyfr", "import", "-t", "gmsh", str(msh), str(pyfrm)],
                   check=True)
    print(f"{shape} p={degree}: {n} elements, mesh written and imported in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    h = 20.0 / (n if shape == "quad" else n / 2) ** 0.5
    dt = 0.1 * h / (1.5 * (2 * degree + 1))  # well inside RK4's limit
    rows = []
    for precision in precisions:
        seconds = time_pyfr(pyfrm, pyfr_config(degree, precision, dt, shape),
                            args.pyfr_backend, args.steps, dt)
        dofs = n * PYFR_POINTS[shape](degree)
        rows.append({"code": "PyFR 3.1", "shape": shape, "degree": degree,
                     "precision": precision, "ordering": "native", "elements": n, "dofs": dofs,
                     "rhs_ms": seconds * 1e3, "s_per_dof_rhs": seconds / dofs,
                     "s_per_element_rhs": seconds / n})
        print(f"  PyFR {precision}: {seconds * 1e3:.3f} ms/RHS, {seconds / dofs:.3e} s/DOF/RHS",
              flush=True)
    return rows


def our_rows(mesh, shape: str, degree: int, precisions: list[str], args) -> list[dict]:
    """gpusolver's rows on ``mesh`` (native and ``rcm`` orders)."""
    rows = run_dg_benchmark(mesh, orderings=["native", "rcm"], degrees=[degree],
                            precisions=precisions, cpu=args.cpu, backend=args.ours,
                            log=lambda line: print("  ours", line, flush=True))
    return [{"code": "gpusolver", "shape": shape} | {k: row[k] for k in COLUMNS[2:]}
            for row in rows]


def markdown(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    def cell(row: dict, column: str) -> str:
        value = row.get(column)
        if value is None:
            return ""
        if column.startswith("s_"):
            return f"{value:.3e}"
        if column.endswith("ms"):
            return f"{value:.3f}"
        if column == "gpu_vs_cpu":
            return f"{value:.0f}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row, c) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="quad,tri")
    parser.add_argument("--degrees", default="2,3")
    parser.add_argument("--precisions", default="fp64,fp32")
    parser.add_argument("--points", type=float, default=13e6,
                        help="PyFR solution points per mesh (about)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--pyfr-backend", default="cuda")
    parser.add_argument("--ours", default="cupy", help="gpusolver backend (cupy or numpy)")
    parser.add_argument("--cpu", action="store_true",
                        help="also time our kernels compiled for one CPU core")
    parser.add_argument("--work", type=Path, default=Path("out/pyfr"))
    parser.add_argument("--out", type=Path, default=Path("results/pyfr_side_by_side"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    precisions = args.precisions.split(",")
    rows = []
    for shape in args.shapes.split(","):
        for degree in map(int, args.degrees.split(",")):
            mesh = square(shape, degree, args.points)
            rows += pyfr_rows(mesh, shape, degree, precisions, args)
            rows += our_rows(mesh, shape, degree, precisions, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    table = markdown(rows)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
