"""Time one rank's set-up of a part refined on its rank: reading its part of a coarse plan,
refining it, and the finite-volume solver's set-up on it (phases inclusive).

Usage: ``python scripts/time_rank_setup.py CASE.toml PLAN.npz [--part 0] [--levels 1]``.
The case gives the gas, boundaries, scheme and stepping; its multigrid is left out (the
coarse levels of parts exchange with the other parts, which one process does not hold),
but the coarse levels' maps are timed both ways: the refinement's generations (each own
cell's parent, each parent's parent: what a run takes) and an agglomeration of the own
cells (what parts took before).
Prints one line per phase and the part's own cells.
"""

import argparse
import dataclasses
import time

from gpusolver.physics.boundary import resolve_markers
from gpusolver.solvers.fv import Solver
from gpusolver.solvers.fv.case import scheme_of, stepping_of
from gpusolver.solvers.fv.multigrid import refined_parents
from gpusolver.systems import load_case
from meshorder.agglomeration import agglomerate
from meshorder.part_refine import refine_part
from meshorder.plan import read_plan_part
from meshorder.topology import CSR


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
    solver = Solver([fine], case.gas_for(fine.mesh.mesh.dim),
                    resolve_markers(fine.boundary_markers, case.boundaries),
                    scheme=scheme_of(case),
                    stepping=dataclasses.replace(stepping_of(case), multigrid=0),
                    backend=case.run["backend"] if case.run["backend"] != "auto" else "numpy")
    set_up = time.perf_counter()
    layout = solver.layouts[0]
    host, n_own = layout.geometry, layout.n_own
    left, right = host.left[:host.n_interior], host.right[:host.n_interior]
    inside = (left < n_own) & (right < n_own)
    graph = CSR.from_pairs(left[inside], right[inside], n_own)  # multigrid makes it anyway
    before_parents = time.perf_counter()
    refined_parents(layout.cells[:layout.n_own], fine.children)
    parents = time.perf_counter()
    agglomerate(graph)
    agglomerated = time.perf_counter()
    print(f"part {args.part}: {part.mesh.mesh.n_cells:,} coarse cells -> "
          f"{fine.mesh.mesh.n_cells:,} ({len(fine.own()):,} own)")
    print(f"read {read - start:.2f} s, refine {refined - read:.2f} s, "
          f"solver set-up without multigrid (its own cells' colours included) "
          f"{set_up - refined:.2f} s")
    print(f"the coarse levels' maps: the generations {parents - before_parents:.2f} s (an "
          f"agglomeration of the own cells instead: {agglomerated - parents:.2f} s)")


if __name__ == "__main__":
    main()
