"""Where a step's time goes in a fused LU-SGS + multigrid run, piece by piece, on the GPU.

Usage: ``python scripts/time_multigrid_cycle.py CASE.toml [--warmup 20] [--repeats 20]``.
The case as it is (``[run] multigrid`` of at least 1, fused kernels on the cupy backend),
after ``--warmup`` steps: the whole step (host sync of its norms included), the fine
level's LU-SGS step, the multigrid cycle as the run replays it (one CUDA graph), and the
cycle's pieces: the fine residual, and per coarse level its restriction, its residual,
its LU-SGS step (residual, both sweeps and the update) and its prolongation, each
launched from Python and replayed as a CUDA graph of its own (the device's time without
the launches' host overhead). Medians of CUDA-event timings, with each level's cells,
sweep levels (one launch each per sweep) and slots per cell (the sweep kernel's loop).
"""

import argparse

from gpusolver.backends.cuda import NULL
from gpusolver.backends.graphs import StepGraphs
from gpusolver.run import build_system
from gpusolver.solvers.fv.fused import VENKATAKRISHNAN, limiter_input
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
    xp, n = kernels.xp, fine.fused.n_cells
    u = solver.states[0].copy()
    steps = solver.fused_implicit[0]
    phi, mode = limiter_input(fine)
    phi = part.phi if phi is None else phi
    mg.correct([u], solver.cfl)  # every level's buffers hold a cycle's values
    part.u_in[...] = u
    yield "the whole step", n, "", solver.step
    yield "fine LU-SGS step", n, _sweep_levels(steps.kernels), lambda: steps(u, solver.cfl)
    yield "multigrid cycle (its graph)", n, "", lambda: mg.correct([u], solver.cfl)
    yield "cycle: fine residual", n, "", lambda: fine.fused.update(
        fine.fused.face_pass(part.u_in, phi, mode, NULL, speed=False),
        residual_out=part.residual)
    finer_state, finer_residual = part.u_in, part.residual
    for k, level in enumerate(mg.levels):
        b, f, level_steps = part.levels[k], level.discretisation.fused, level.steps
        cells, name = f.n_cells, f"cycle: level {k + 1}"

        def restrict(b=b, f=f, level=level, state=finer_state, residual=finer_residual):
            b["u_sum"].fill(0)
            b["r_sum"].fill(0)
            kernels._transfer(kernels.restrict, state.shape[1], b, level.finer_volume, state,
                              residual, b["u_sum"], b["r_sum"])
            xp.divide(b["u_sum"], f.volume, out=b["start"])

        def step(b=b, level_steps=level_steps):
            first, new = level_steps.states
            first[...] = b["start"]
            level_steps._launches(first, new, True, NULL, VENKATAKRISHNAN)

        yield f"{name}: restriction", cells, "", restrict
        yield f"{name}: residual", cells, "", lambda b=b, f=f: f.update(
            f.face_pass(b["start"], NULL, VENKATAKRISHNAN, NULL, speed=False),
            residual_out=b["residual"])
        yield f"{name}: LU-SGS step", cells, _sweep_levels(level_steps.kernels), step
        yield f"{name}: prolongation", cells, "", lambda b=b, state=finer_state: (
            kernels._transfer(kernels.prolong, state.shape[1], b, state, b["state"],
                              b["start"], xp.empty_like(state)))
        finer_state, finer_residual = b["state"], b["residual"]


def _sweep_levels(level_kernels) -> str:
    """The forward and backward sweeps' level counts, and the slots of each cell."""
    counts = " + ".join(str(len(t.offsets) - 1) for t in level_kernels.sweeps)
    return f"{counts} ({level_kernels.sweeps[0].upstream.shape[0]} slots)"


if __name__ == "__main__":
    main()
