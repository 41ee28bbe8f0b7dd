"""``gpusolver`` command line. Subcommands: ``run``, ``bench``, ``bench-flux``,
``bench-vortex``, ``bench-layout``, ``bench-parallel``.

Exit codes: 0 success, 1 bad input (mesh, plan, case file), 2 usage, 3 the
solution diverged.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import traceback

from gpusolver import __version__, load_plan_for
from gpusolver.backends import PRECISIONS, cupy_available
from gpusolver.bench.dg import COLUMNS as DG_COLUMNS
from gpusolver.bench.dg import run_dg_benchmark
from gpusolver.bench.flux import default_orderings, run_benchmark, valid_orderings
from gpusolver.bench.layout import COLUMNS as LAYOUT_COLUMNS
from gpusolver.bench.layout import SolverTimer, run_layout_benchmark
from gpusolver.bench.parallel import COLUMNS as PARALLEL_COLUMNS
from gpusolver.bench.parallel import run_dg_parallel_benchmark, run_parallel_benchmark
from gpusolver.bench.solver import COLUMNS as SOLVER_COLUMNS
from gpusolver.bench.solver import run_solver_benchmark
from gpusolver.bench.vortex import CLOUDS, run_vortex_benchmark
from gpusolver.bench.vortex import COLUMNS as VORTEX_COLUMNS
from gpusolver.errors import GpusolverError, SolverDivergedError, UsageError
from gpusolver.parallel import TRANSPORTS, mpi_world, use_local_gpu
from gpusolver.rank_watch import RANK_TIMEOUT, RankWatch
from gpusolver.run import run_case
from gpusolver.solvers.fv.face_kernels import STRATEGIES
from gpusolver.solvers.vortex.biot_savart import METHODS
from gpusolver.systems import load_case
from meshorder import MeshorderError, Topology, read_mesh
from meshorder.faceorder import FACE_ORDERS
from meshorder.generate import GEOMETRIES, generate
from meshorder.options import non_negative_int, positive_int, unit_fraction
from meshorder.pipeline import DEFAULT_FACES, PlanOptions, make_plan
from meshorder.report import check_result_paths, table, write_results
from meshorder.termination import interrupt_handled, reader_left, terminate_as_interrupt

PROGRAM = "gpusolver"

COLUMNS = ("device", "mesh", "cells", "ordering", "strategy", "precision", "time_ms", "gb_s",
           "ratio_to_copy", "speedup_vs_native", "speedup_vs_random", "sectors_per_warp")


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of the ``gpusolver`` command."""
    parser = argparse.ArgumentParser(prog="gpusolver", description="GPU CFD solvers and benchmarks")
    parser.add_argument("--version", action="version", version=f"gpusolver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a case file (TOML)")
    r.add_argument("case", help="case file, e.g. case.toml")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    b = sub.add_parser("bench", help="time the FV kernels and residual per ordering, "
                       "strategy and precision (or the DG right-hand side per degree)")
    _mesh_source(b)
    b.add_argument("--solver", choices=("fv", "dg"), default="fv",
                   help="fv (default) or dg: the DG right-hand side per ordering, degree and "
                        "precision (--degrees; --strategies and --residual-orderings unused)")
    b.add_argument("--degrees", default="1,2,3", help="dg: polynomial degrees, comma-separated")
    b.add_argument("--orderings", default="native,rcm,metis,random",
                   help="cell orderings to time, comma-separated (meshorder's and the peers')")
    b.add_argument("--strategies", default=",".join(STRATEGIES),
                   help="accumulation strategies of the face kernel, comma-separated")
    b.add_argument("--precisions", default="fp32,fp64", help="fp32 and/or fp64")
    b.add_argument("--residual-orderings", default="native,rcm",
                   help="orderings for which the full residual is timed too ('' for none)")
    b.add_argument("--cpu", action="store_true",
                   help="also time one CPU core, for the GPU/CPU ratio: the NumPy residual "
                   "(FV) or the DG kernels compiled for the CPU (the benchmark itself needs "
                   "a GPU)")
    b.add_argument("--repeats", type=positive_int, default=20, help="timed runs per kernel")
    b.add_argument("--json", default=None, help="write every row as JSON here")
    b.add_argument("--markdown", default=None, help="write the table as markdown here")
    p = sub.add_parser("bench-flux", help="time the face-flux kernel under every ordering")
    _mesh_source(p)
    p.add_argument("--orderings", default=",".join(default_orderings()),
                   help="cell orderings to time, comma-separated (default: all but networkx)")
    p.add_argument("--precisions", default="fp32,fp64", help="fp32 and/or fp64")
    p.add_argument("--repeats", type=positive_int, default=20, help="timed runs per kernel")
    p.add_argument("--no-check", action="store_true", help="skip the NumPy comparison")
    p.add_argument("--json", default=None, help="write every row as JSON here")
    p.add_argument("--markdown", default=None, help="write the table as markdown here")
    v = sub.add_parser("bench-vortex", help="time the vortex method's velocities: the direct "
                       "Biot-Savart kernel (interactions per second) and the tree (time and "
                       "error over its accuracy parameter)")
    v.add_argument("--elements", default=[65536, 1048576], type=positive_ints,
                   help="element counts N (N^2 interactions each), comma-separated")
    v.add_argument("--precisions", default="fp32,fp64", help="fp32 and/or fp64")
    v.add_argument("--repeats", type=positive_int, default=5, help="timed runs per row")
    v.add_argument("--methods", default="direct", help="direct and/or tree")
    v.add_argument("--clouds", default="uniform", help=f"element clouds: {', '.join(CLOUDS)}")
    v.add_argument("--thetas", default=[0.5], type=unit_fractions,
                   help="tree: accuracy parameters in (0, 1), comma-separated")
    v.add_argument("--terms", default=[16], type=positive_ints,
                   help="tree: multipole coefficients per box, comma-separated")
    v.add_argument("--json", default=None, help="write every row as JSON here")
    v.add_argument("--markdown", default=None, help="write the table as markdown here")
    y = sub.add_parser("bench-layout", help="time every candidate layout (cell order, face "
                       "order, LU-SGS sweep levels) of each mesh, the cost model's prediction "
                       "of it, and what meshorder's --cells auto chooses with and without a GPU")
    y.add_argument("meshes", nargs="+", help="mesh files")
    y.add_argument("--precisions", default="fp64,fp32", help="fp32 and/or fp64")
    y.add_argument("--no-sweeps", action="store_true",
                   help="the residual only (no LU-SGS steps over hyperplanes and colours)")
    y.add_argument("--repeats", type=positive_int, default=10, help="timed runs per layout")
    y.add_argument("--trials-json", default=None, help="write every layout's row as JSON here "
                   "(what scripts/fit_layout_model.py reads)")
    y.add_argument("--json", default=None, help="write the choices' rows as JSON here")
    y.add_argument("--markdown", default=None, help="write the choices' table as markdown here")
    m = sub.add_parser("bench-parallel", help="time the fused FV or DG solver on several "
                       "GPUs, one part per rank (run it under mpiexec -n N)")
    m.add_argument("--mesh", required=True, help="mesh file")
    m.add_argument("--solver", choices=("fv", "dg"), default="fv",
                   help="fv: the second-order finite-volume flow; dg: modal DG (2-D, "
                        "fp64, far field on every marker)")
    m.add_argument("--degree", type=int, choices=range(4), default=2,
                   help="dg: the polynomial degree")
    m.add_argument("--plan", default=None, help="plan with one part per rank (default: "
                   "made at start, rcm cells)")
    m.add_argument("--faces", choices=sorted(FACE_ORDERS), default=DEFAULT_FACES,
                   help="face order inside each part, and of the whole mesh's plan when "
                        "made at start")
    m.add_argument("--transports", default=",".join(TRANSPORTS),
                   help="halo transports to time, comma-separated")
    m.add_argument("--precision", choices=tuple(PRECISIONS), default="fp64",
                   help="floating-point precision of the solver")
    m.add_argument("--repeats", type=positive_int, default=20, help="timed steps per row")
    m.add_argument("--check-steps", type=positive_int, default=10,
                   help="steps after which the state is compared with one GPU's")
    m.add_argument("--json", default=None, help="write every row as JSON here")
    m.add_argument("--markdown", default=None, help="write the table as markdown here")
    return parser


def positive_ints(text: str) -> list[int]:
    """An argparse type: comma-separated integers of 1 or more."""
    return [positive_int(part) for part in text.split(",")]


def unit_fractions(text: str) -> list[float]:
    """An argparse type: comma-separated numbers strictly between 0 and 1."""
    return [unit_fraction(part) for part in text.split(",")]


def _mesh_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--mesh", help="mesh file")
    source.add_argument("--generate", metavar="GEOMETRY:CELLS", type=geometry_and_cells,
                        help="mesh a reference geometry first, e.g. wing:10000000")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="gmsh threads when generating")
    parser.add_argument("--prism-layers", type=non_negative_int, default=None,
                        help="wing only: prism layers when generating (default 5; 0: none)")


def geometry_and_cells(text: str) -> tuple[str, int]:
    """An argparse type: ``GEOMETRY:CELLS`` with a known geometry and a positive count."""
    name, _, cells = text.partition(":")
    if name not in GEOMETRIES:
        raise argparse.ArgumentTypeError(f"unknown geometry {name!r}; valid: "
                                         f"{', '.join(sorted(GEOMETRIES))}")
    return name, positive_int(cells)


def load_bench_mesh(args: argparse.Namespace):
    """The mesh of ``--mesh`` or ``--generate``."""
    if args.generate:
        name, cells = args.generate
        options = {"threads": args.threads} if name in ("box", "wing") else {}
        if name == "wing" and args.prism_layers is not None:
            options["prism_layers"] = args.prism_layers
        mesh = timed(f"meshing {name} with gmsh", lambda: generate(name, None, int(cells),
                                                                     **options))
        return dataclasses.replace(mesh, source=f"{name}_{cells}")
    return timed(f"reading {args.mesh}", lambda: read_mesh(args.mesh))


def timed(label: str, work):
    """Run ``work()``, print how long it took, return its result."""
    start = time.perf_counter()
    result = work()
    print(f"{label}: {time.perf_counter() - start:.1f} s", flush=True)
    return result


def names(value: str, valid, what: str) -> list[str]:
    """The comma-separated ``value`` as a list; exits (usage error) on a name not in ``valid``."""
    chosen = value.split(",")
    unknown = sorted(set(chosen) - set(valid))
    if unknown:
        raise UsageError(f"unknown {what} {', '.join(unknown)}; valid: {', '.join(valid)}")
    return chosen


def report(rows: list[dict], columns: tuple[str, ...], args: argparse.Namespace) -> int:
    """Print a benchmark's rows as a table of ``columns`` (blank where a row has none) and
    write them to ``--json`` and ``--markdown`` if given; exit code 0."""
    text = table(columns, [[row.get(c, "") for c in columns] for row in rows])
    print(text)
    write_results(rows, text, args.json, args.markdown)
    return 0


def need_gpu(command: str) -> None:
    """Stop before any work when no CUDA GPU with CuPy is usable."""
    if not cupy_available():
        raise GpusolverError(f"{command} times CUDA kernels and needs a CUDA GPU with CuPy "
                             "(cupy-cuda13x); none is usable on this machine")


def bench_flux(args: argparse.Namespace) -> int:
    """Execute ``gpusolver bench-flux``."""
    check_result_paths(args.json, args.markdown)
    precisions = names(args.precisions, PRECISIONS, "precision(s)")
    orderings = names(args.orderings, valid_orderings(), "ordering(s)")
    need_gpu("gpusolver bench-flux")
    mesh = load_bench_mesh(args)
    rows = run_benchmark(mesh, orderings=orderings, precisions=precisions,
                         repeats=args.repeats, check=not args.no_check,
                         log=lambda s: print(s, flush=True))
    return report(rows, COLUMNS, args)


def bench(args: argparse.Namespace) -> int:
    """Execute ``gpusolver bench``."""
    check_result_paths(args.json, args.markdown)
    strategies = names(args.strategies, STRATEGIES, "strategy(ies)")
    precisions = names(args.precisions, PRECISIONS, "precision(s)")
    orderings = names(args.orderings, valid_orderings(), "ordering(s)")
    residual_orderings = (names(args.residual_orderings, valid_orderings(), "ordering(s)")
                          if args.residual_orderings else [])
    degrees = [int(d) for d in names(args.degrees, ("0", "1", "2", "3"), "degree(s)")]
    need_gpu("gpusolver bench")
    if args.solver == "dg":
        return _bench_dg(args, orderings, degrees, precisions)
    mesh = load_bench_mesh(args)
    rows = run_solver_benchmark(
        mesh, orderings=orderings, strategies=strategies,
        precisions=precisions, repeats=args.repeats,
        residual_orderings=tuple(residual_orderings),
        cpu=args.cpu, log=lambda s: print(s, flush=True))
    return report(rows, SOLVER_COLUMNS, args)


def _bench_dg(args: argparse.Namespace, orderings: list[str], degrees: list[int],
              precisions: list[str]) -> int:
    mesh = load_bench_mesh(args)
    rows = run_dg_benchmark(mesh, orderings=orderings, degrees=degrees, precisions=precisions,
                            repeats=args.repeats, cpu=args.cpu,
                            log=lambda s: print(s, flush=True))
    return report(rows, DG_COLUMNS, args)


def run(args: argparse.Namespace) -> int:
    """Execute ``gpusolver run`` (every rank of ``mpiexec``, each watched by a
    :class:`~gpusolver.rank_watch.RankWatch`: a rank that fails, dies or hangs stops
    them all)."""
    comm = mpi_world()
    if comm is None:
        return _run(args, load_case(args.case), None)
    watch = RankWatch(comm, RANK_TIMEOUT)  # before anything that may fail on one rank
    try:
        case = load_case(args.case)
        watch.timeout = case.loop.rank_timeout
        code = _run(args, case, comm, watch.pulse)
    except BaseException as error:  # told to the other ranks, then handled by main
        code, kind, message = outcome(error)
        if not watch.failed(message or kind):  # the other ranks went on
            if code is None:
                traceback.print_exc()
            print(error_line(kind, message, f"rank {comm.rank} of {comm.size}: "),
                  file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(1 if code is None else code)
        raise
    watch.close()
    return code


def _run(args: argparse.Namespace, case, comm, pulse=lambda stepping: None) -> int:
    """``gpusolver run`` of ``case`` on this rank (``comm``: the ranks, or None)."""
    if comm is not None and comm.rank == 0:
        print(f"{comm.size} ranks", flush=True)
    root = comm is None or comm.rank == 0

    def notify(line: str) -> None:
        if root:
            print(line, flush=True)

    result = run_case(case, progress=not args.quiet, notify=notify, pulse=pulse)
    code = 130 if result.interrupted else 0
    if not result.system.is_root:
        return code
    status = {None: "", True: "converged: ", False: "not converged: "}[result.converged]
    if result.interrupted:
        status = "interrupted: "
    target = case.loop.residual_reduction
    goal = f", residual_reduction {target:g}" if target is not None else ""
    print(f"{status}{result.system.summary(result.report)} ({result.seconds:.1f} s{goal})")
    for path in result.files:
        print(f"wrote {path}")
    return code


def bench_vortex(args: argparse.Namespace) -> int:
    """Execute ``gpusolver bench-vortex``."""
    check_result_paths(args.json, args.markdown)
    precisions = names(args.precisions, PRECISIONS, "precision(s)")
    methods = names(args.methods, METHODS, "method(s)")
    clouds = names(args.clouds, CLOUDS, "cloud(s)")
    need_gpu("gpusolver bench-vortex")
    rows = run_vortex_benchmark(args.elements, precisions, args.repeats,
                                log=lambda s: print(s, flush=True), methods=tuple(methods),
                                clouds=tuple(clouds), thetas=tuple(args.thetas),
                                terms=tuple(args.terms))
    return report(rows, VORTEX_COLUMNS, args)


def bench_layout(args: argparse.Namespace) -> int:
    """Execute ``gpusolver bench-layout``."""
    check_result_paths(args.json, args.markdown, args.trials_json)
    precisions = names(args.precisions, PRECISIONS, "precision(s)")
    need_gpu("gpusolver bench-layout")
    timer = SolverTimer(repeats=args.repeats)
    trials, choices = [], []
    for path in args.meshes:
        mesh = timed(f"reading {path}", lambda p=path: read_mesh(p))
        rows = run_layout_benchmark(mesh, precisions=precisions, sweeps=not args.no_sweeps,
                                    timer=timer,
                                    log=lambda s: print(s, flush=True))
        trials += rows[0]
        choices += rows[1]
    if args.trials_json:
        write_results(trials, "", args.trials_json, None)
    return report(choices, LAYOUT_COLUMNS, args)


def bench_parallel(args: argparse.Namespace) -> int:
    """Execute ``gpusolver bench-parallel`` (every rank of ``mpiexec``)."""
    transports = names(args.transports, TRANSPORTS, "transport(s)")
    if args.solver == "dg" and args.precision != "fp64":
        raise UsageError("--solver dg times fp64 only")
    comm = mpi_world()
    if comm is None:
        raise UsageError("bench-parallel times several ranks; run it as "
                         "`mpiexec -n N gpusolver bench-parallel ...` with N >= 2")
    if comm.rank == 0:
        check_result_paths(args.json, args.markdown)
    start = time.perf_counter()
    mesh = read_mesh(args.mesh)
    read_s = time.perf_counter() - start
    if args.solver == "dg" and mesh.dim != 2:
        raise UsageError(f"{args.mesh}: --solver dg needs a 2-D mesh; this one is 3-D")
    need_gpu("gpusolver bench-parallel")
    use_local_gpu(comm)
    start = time.perf_counter()
    topology = Topology(mesh)
    mesh_setup_s = read_s + time.perf_counter() - start
    if args.plan:
        plan = load_plan_for(mesh, args.plan)
    else:
        plan = make_plan(mesh, PlanOptions(partitions=comm.size, faces=args.faces),
                         topology=topology)
    if plan.n_parts != comm.size:
        raise UsageError(f"{args.plan}: {plan.n_parts} part(s) for {comm.size} ranks; make "
                         f"it with `meshorder reorder --partitions {comm.size}`")
    log = (lambda s: print(s, flush=True)) if comm.rank == 0 else (lambda s: None)
    if args.solver == "dg":
        rows = run_dg_parallel_benchmark(mesh, topology, plan, comm, transports=transports,
                                         overlaps=[True, False], degree=args.degree,
                                         repeats=args.repeats, check_steps=args.check_steps,
                                         plan_path=args.plan, faces=args.faces,
                                         log=log)
        return report(rows, PARALLEL_COLUMNS, args) if comm.rank == 0 else 0
    rows = run_parallel_benchmark(mesh, topology, plan, comm, transports=transports,
                                  overlaps=[True, False], precision=args.precision,
                                  repeats=args.repeats, check_steps=args.check_steps,
                                  mesh_setup_s=mesh_setup_s, plan_path=args.plan,
                                  faces=args.faces, log=log)
    return report(rows, PARALLEL_COLUMNS, args) if comm.rank == 0 else 0


COMMANDS = {"run": run, "bench": bench, "bench-flux": bench_flux, "bench-vortex": bench_vortex,
            "bench-layout": bench_layout,
            "bench-parallel": bench_parallel}


def outcome(error: BaseException) -> tuple[int | None, str, str]:
    """What a command that raised ``error`` ends with: the exit code (None for an error
    that is not the user's: a traceback), the kind of end and the message."""
    if isinstance(error, UsageError):
        return 2, "usage", str(error)
    if isinstance(error, SolverDivergedError):
        return 3, "diverged", str(error)
    if isinstance(error, (MeshorderError, GpusolverError)):
        return 1, "error", str(error)
    if isinstance(error, OSError) and not isinstance(error, BrokenPipeError):
        return 1, "error", f"{error.filename or ''}: {error.strerror or error}"
    if isinstance(error, KeyboardInterrupt):  # before the first step: nothing written
        return 130, "interrupted", ""
    return None, "error", f"{type(error).__name__}: {error}"


def error_line(kind: str, message: str, rank: str = "") -> str:
    """The one line of standard error that ends a command (``rank``: which rank)."""
    if kind == "interrupted":
        return f"\n{PROGRAM}: {rank}interrupted"
    return f"{PROGRAM}: {kind}: {rank}{message}"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        with terminate_as_interrupt():  # SIGTERM (a scheduler's time limit) ends as Ctrl-C
            return COMMANDS[args.command](args)
    except BrokenPipeError:  # `gpusolver run case.toml | head -1`: the reader left
        reader_left()
        return 0
    except (Exception, KeyboardInterrupt) as error:
        code, kind, message = outcome(error)
        if code is None:
            raise
        if isinstance(error, KeyboardInterrupt):
            interrupt_handled()
        print(error_line(kind, message), file=sys.stderr)
        return code
