"""The Newton-Krylov preconditioner's exact LU timed: levels on the GPU against SuperLU.

Usage: ``python scripts/time_exact_solves.py CASE.toml [CASE ...] [--steps 20]
[--repeat 5] [--json F] [--markdown F]``. Each case runs on CuPy for ``--steps`` steps;
then the first-order implicit operator of that state (its blocks assembled on the GPU) is
factorised and solved ``--repeat`` times by block cyclic reduction over levels of cells
on the GPU and by SuperLU on the host (vectors travelling both ways), and the two
solutions of one right-hand side are compared. Times are medians, each to the GPU's end.
"""

import argparse
import dataclasses
import json
import time

import numpy as np

from gpusolver.run import build_system
from gpusolver.solvers.fv import jacobian
from gpusolver.systems import load_case


def _median_seconds(work, backend, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        backend.synchronize()
        start = time.perf_counter()
        result = work()
        backend.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def time_case(path: str, steps: int, repeat: int, backend: str = "cupy") -> list[dict]:
    """Rows of the table for one case (see the module docstring)."""
    case = load_case(path)
    solver = build_system(dataclasses.replace(case, run={**case.run, "backend": backend})
                          ).solver
    for _ in range(steps):
        solver.step()
    d, u = solver.discretisations[0], solver.states[0]
    backend, n_vars = d.backend, u.shape[0]
    dt = solver.time_step(u)
    assembly, blocks = _median_seconds(lambda: jacobian.implicit_blocks(d, u, dt), backend,
                                       repeat)
    rhs = backend.asarray(np.random.default_rng(0).normal(size=u.shape))
    rows, solutions = [], []
    for name, entries in (("levels (GPU)", jacobian.MAX_LEVEL_ENTRIES), ("SuperLU (host)", 0)):
        start = time.perf_counter()
        exact = jacobian.ExactSolver(d, n_vars, max_level_entries=entries)
        setup = time.perf_counter() - start
        factorise, solve = _median_seconds(lambda e=exact: e.factorise(blocks), backend, repeat)
        solve_s, x = _median_seconds(lambda s=solve: s(rhs), backend, repeat)
        solutions.append(backend.to_host(x))
        level = exact.level_lu
        rows.append({"case": path, "device": backend.device_name(), "cells": d.geometry.n_cells,
                     "unknowns": n_vars * d.geometry.n_cells, "solver": name,
                     "levels": None if level is None else level.n_levels,
                     "block_width": None if level is None else level.width,
                     "setup_s": setup, "assembly_ms": assembly * 1e3,
                     "factorise_ms": factorise * 1e3, "solve_ms": solve_s * 1e3})
    gap = np.abs(solutions[0] - solutions[1]).max() / np.abs(solutions[1]).max()
    for row in rows:
        row["relative_difference"] = float(gap)
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    lines = ["| case | device | cells | unknowns | solver | levels x width | set-up s | "
             "assembly ms | factorise ms | solve ms | solutions differ by |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        shape = "" if r["levels"] is None else f"{r['levels']} x {r['block_width']}"
        lines.append(f"| {r['case']} | {r['device']} | {r['cells']:,} | {r['unknowns']:,} | "
                     f"{r['solver']} | {shape} | {r['setup_s']:.2f} | {r['assembly_ms']:.1f} | "
                     f"{r['factorise_ms']:.1f} | {r['solve_ms']:.2f} | "
                     f"{r['relative_difference']:.1e} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", default="cupy", help="numpy: SuperLU twice")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    rows = [row for path in args.cases for row in time_case(path, args.steps, args.repeat,
                                                             args.backend)]
    table = markdown(rows)
    print(table, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
