"""Time one rank's set-up of a part refined on its rank: reading its part of a coarse plan,
refining it, and the finite-volume solver's set-up on it (phases inclusive).

Usage: ``python scripts/time_rank_setup.py CASE.toml PLAN.npz [--part 0] [--levels 1]``.
The case gives the gas, boundaries, scheme and stepping; its multigrid is left out (the
coarse levels of parts exchange with the other parts, which one process does not hold).
Prints one line per phase and the part's own cells.
"""

import argparse
import dataclasses
import time

from gpusolver.physics.boundary import resolve_markers
from gpusolver.solvers.fv import Solver
from gpusolver.solvers.fv.case import scheme_of, stepping_of
from gpusolver.systems import load_case
from meshorder.part_refine import refine_part
from meshorder.plan import read_plan_part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("plan")
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--levels", type=int, default=1)
    args = parser.parse_args()
    case = load_case(args.case)
    start = time.perf_counter()
    part = read_plan_part(args.plan, args.part)
    read = time.perf_counter()
    fine = refine_part(part, args.levels)
    refined = time.perf_counter()
    Solver([fine], case.gas_for(fine.mesh.mesh.dim),
           resolve_markers(fine.boundary_markers, case.boundaries), scheme=scheme_of(case),
           stepping=dataclasses.replace(stepping_of(case), multigrid=0),
           backend=case.run["backend"] if case.run["backend"] != "auto" else "numpy")
    solver = time.perf_counter()
    print(f"part {args.part}: {part.mesh.mesh.n_cells:,} coarse cells -> "
          f"{fine.mesh.mesh.n_cells:,} ({len(fine.own()):,} own)")
    print(f"read {read - start:.2f} s, refine {refined - read:.2f} s, "
          f"solver set-up without multigrid (its own cells' colours included) "
          f"{solver - refined:.2f} s")


if __name__ == "__main__":
    main()
