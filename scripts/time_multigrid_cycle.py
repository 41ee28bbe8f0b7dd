"""Where a step's time goes in a fused LU-SGS + multigrid run, piece by piece, on the GPU.

Usage: ``python scripts/time_multigrid_cycle.py CASE.toml [--warmup 20] [--repeats 20]``.
The case as it is (``[run] multigrid`` of at least 1, fused kernels on the cupy backend),
after ``--warmup`` steps: the whole step (host sync of its norms included), the fine
level's LU-SGS step, the multigrid cycle as the run replays it (one CUDA graph), and the
cycle's pieces (the methods the cycle itself calls): the fine residual, and per coarse
level its restriction, its residual, its LU-SGS step (residual, both sweeps, the update
and the choice of its result) and its prolongation, each launched from Python and
replayed as a CUDA graph of its own (the device's time without the launches' host
overhead). Medians of CUDA-event timings, with each level's cells,
sweep levels (one launch each per sweep) and slots per cell (the sweep kernel's loop).
"""

import argparse

from gpusolver.backends.graphs import StepGraphs
from gpusolver.run import build_system
from gpusolver.solvers.fv.fused import limiter_input
from gpusolver.solvers.fv.multigrid import residual_into
from gpusolver.systems import load_case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    solver = build_system(load_case(args.case)).solver
    mg = solver.multigrid
    if mg is None or mg.kernels is None or solver.fused_implicit is None:
        raise SystemExit(f"{args.case}: needs fused LU-SGS steps with multigrid on the GPU")
    for _ in range(args.warmup):
        solver.step()
    backend = solver.backend
    print(f"| piece | cells | sweep levels | ms launched ({args.case}, median of "
          f"{args.repeats}) | ms as a graph |")
    print("| --- | --- | --- | --- | --- |")
    for piece, cells, levels, work in _pieces(solver):
        launched = backend.median_seconds(work, args.repeats)
        replayed = ""
        if piece.startswith("cycle:"):
            graphs = StepGraphs(backend)
            seconds = backend.median_seconds(lambda p=piece, w=work, g=graphs: g.run(p, w),
                                             args.repeats, warmup=3)
            replayed = f"{seconds * 1e3:.4f}"
        print(f"| {piece} | {cells} | {levels} | {launched * 1e3:.4f} | {replayed} |",
              flush=True)


def _pieces(solver):
    """``(piece, cells, sweep levels, work)`` of one step of ``solver``."""
    mg, kernels = solver.multigrid, solver.multigrid.kernels
    fine, part = mg.fines[0], kernels.parts[0]
    u = solver.states[0].copy()
    steps = solver.fused_implicit[0]
    phi, mode = limiter_input(fine)
    phi = part.phi if phi is None else phi
    mg.correct([u], solver.cfl)  # every level's buffers hold a cycle's values
    part.u_in[...] = u
    yield "the whole step", fine.fused.n_cells, "", solver.step
    yield ("fine LU-SGS step", fine.fused.n_cells, _sweep_levels(steps.kernels),
           lambda: steps(u, solver.cfl))
    yield "multigrid cycle (its graph)", fine.fused.n_cells, "", lambda: mg.correct(
        [u], solver.cfl)
    yield "cycle: fine residual", fine.fused.n_cells, "", lambda: residual_into(
        fine.fused, part.u_in, part.residual, phi, mode)
    finer_state, finer_residual = part.u_in, part.residual
    for k, level in enumerate(mg.levels):
        b, cells, name = part.levels[k], level.discretisation.fused.n_cells, f"cycle: level {k + 1}"
        scratch = kernels.xp.empty_like(finer_state)
        yield (f"{name}: restriction", cells, "",
               lambda level=level, b=b, state=finer_state, residual=finer_residual:
               kernels.restrict_into(level, b, state, residual))
        yield f"{name}: residual", cells, "", lambda level=level, b=b: residual_into(
            level.discretisation.fused, b["start"], b["residual"])
        yield (f"{name}: LU-SGS step", cells, _sweep_levels(level.steps.kernels),
               lambda level=level, b=b: kernels.smooth_into(level, b, b["start"]))
        yield (f"{name}: prolongation", cells, "",
               lambda b=b, state=finer_state, out=scratch: kernels.prolong_into(b, state, out))
        finer_state, finer_residual = b["state"], b["residual"]


def _sweep_levels(level_kernels) -> str:
    """The forward and backward sweeps' level counts, and the slots of each cell."""
    counts = " + ".join(str(len(t.offsets) - 1) for t in level_kernels.sweeps)
    return f"{counts} ({level_kernels.sweeps[0].upstream.shape[0]} slots)"


if __name__ == "__main__":
    main()
