"""Where the line-implicit LU-SGS sweeps of a case spend their time on the GPU.

Usage: ``python scripts/time_line_sweeps.py CASE.toml [--warmup 20] [--repeats 50]``
(a case with ``line_implicit = true``; on NumPy the kernels compiled for the CPU). After
``--warmup`` steps, prints the lines (count, cells in lines longer than one, longest,
colours), then the
median device time (CUDA events) of a whole step, of both sweeps of one step's residual
(:meth:`~gpusolver.solvers.fv.lusgs.LevelKernels.launches`), of the lines'
factorisation alone, and of the sweeps with only the cells' right-hand sides or only
the lines' solves launched.
"""

import argparse

import numpy as np

from gpusolver.run import build_system
from gpusolver.systems import load_case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    solver = build_system(load_case(args.case)).solver
    if solver.fused_implicit is None:  # NumPy: the kernels compiled for the CPU
        solver.fuse()
    for _ in range(args.warmup):
        solver.step()
    backend, (steps,) = solver.backend, solver.fused_implicit
    kernels = steps.kernels
    levels = solver.part_sweeps[0].levels[0]
    lengths = np.diff(levels.line_offsets)
    print(f"{args.case}: {solver.n_cells} cells, {lengths.size} lines, "
          f"{int((lengths > 1).sum())} longer than one cell ({int(lengths[lengths > 1].sum())} "
          f"cells), longest {int(lengths.max())}, {levels.n_levels} colours", flush=True)
    fused = steps.fused
    du = backend.xp.empty_like(steps.residual)
    inputs = (solver.u, steps.diagonal, fused.speed, steps.residual, du)

    def milliseconds(work) -> float:
        return backend.median_seconds(work, args.repeats, warmup=2) * 1e3

    print(f"step {milliseconds(solver.step):.3f} ms", flush=True)
    print(f"both sweeps {milliseconds(lambda: kernels.launches(*inputs)):.3f} ms", flush=True)
    print(f"the lines' factorisation "
          f"{milliseconds(lambda: kernels.factorise_lines(*inputs[:3])):.3f} ms", flush=True)
    launch, launch_lines = kernels.launch, kernels.launch_lines

    def skipped(*_):
        pass

    kernels.launch_lines = [skipped, skipped]
    print(f"both sweeps, the cells' right-hand sides only "
          f"{milliseconds(lambda: kernels.launches(*inputs)):.3f} ms (with the factorisation)",
          flush=True)
    kernels.launch_lines, kernels.launch = launch_lines, [skipped, skipped]
    print(f"both sweeps, the lines' solves only "
          f"{milliseconds(lambda: kernels.launches(*inputs)):.3f} ms (with the factorisation)",
          flush=True)
    kernels.launch = launch


if __name__ == "__main__":
    main()
