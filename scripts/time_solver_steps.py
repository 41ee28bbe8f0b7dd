"""Mean wall time of one solver iteration for a case file, per accumulation strategy.

Usage: ``python scripts/time_solver_steps.py CASE.toml [--strategies atomic,reduce]
[--iterations 200] [--warmup 20]``. The case's backend, precision, scheme and boundaries
are used as they are; each step ends with a host copy of the residual norms, so the
timing includes the device synchronisation.
"""

import argparse
import dataclasses
import time

from gpusolver.run import build_system
from gpusolver.systems import load_case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("--strategies", default="atomic,colour,reduce")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    case = load_case(args.case)
    for strategy in args.strategies.split(","):
        variant = dataclasses.replace(case, run={**case.run, "strategy": strategy})
        solver = build_system(variant).solver
        for _ in range(args.warmup):
            solver.step()
        start = time.perf_counter()
        for _ in range(args.iterations):
            solver.step()
        seconds = (time.perf_counter() - start) / args.iterations
        print(f"{args.case} {solver.backend.name} {case.run['precision']} {strategy}: "
              f"{seconds * 1e3:.3f} ms per iteration (mean of {args.iterations})", flush=True)


if __name__ == "__main__":
    main()
