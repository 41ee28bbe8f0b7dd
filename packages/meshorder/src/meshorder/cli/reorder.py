"""``meshorder reorder IN OUT``: compute a plan and save it (optionally the reordered mesh)."""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path

import numpy as np

from ..atomic import atomic_path, check_writable
from ..blocks import MAX_BLOCK_SIZE
from ..errors import MeshWriteError, UsageError
from ..faceorder import FACE_ORDERS
from ..io import check_format, write_mesh
from ..options import non_negative_int, positive_float, positive_int
from ..orderings import ORDERINGS
from ..partition import PartitionError
from ..pipeline import (
    DEFAULT_CELLS,
    DEFAULT_FACES,
    FACE_WEIGHTS,
    PlanOptions,
    check_weights,
    make_plan,
)
from ..plan import Plan
from ..progress import activity
from ..report import table
from ..topology import Topology
from ..tune import (
    AUTO,
    DEFAULT_TUNE_SECONDS,
    PRECISIONS,
    TUNE_CELLS,
    TUNE_FACES,
    TUNE_SWEEPS,
    candidates,
    find_timer,
    tune_layout,
    tune_table,
)
from .common import add_mesh_argument, load_mesh

SHOWN_METRICS = ("bandwidth", "profile", "mean_span", "sectors_per_warp_fp32",
                 "sectors_per_warp_fp64", "repeated_adds_per_warp")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("reorder", help="compute and save a reordering plan",
                       description="Compute cell, face (and node) orders, colourings and "
                                   "LU-SGS hyperplanes, and save them as a plan (.npz).")
    add_mesh_argument(p)
    p.add_argument("out", help="plan file to write (.npz)")
    p.add_argument("--cells", choices=[*sorted(ORDERINGS), AUTO], default=DEFAULT_CELLS,
                   help=f"cell ordering (default {DEFAULT_CELLS}); auto: the fastest of "
                        f"{', '.join(TUNE_CELLS)} for this mesh (timed on a GPU where "
                        "gpusolver finds one, else predicted)")
    p.add_argument("--faces", choices=[*sorted(FACE_ORDERS), AUTO], default=DEFAULT_FACES,
                   help=f"face ordering (default {DEFAULT_FACES}); auto: the fastest of "
                        f"{', '.join(TUNE_FACES)}")
    p.add_argument("--nodes", choices=sorted(ORDERINGS), default=None,
                   help="node ordering for cell-vertex schemes; also orders and colours edges")
    p.add_argument("--colour", "--color", action="store_true", help="colour faces (and edges)")
    p.add_argument("--sweeps", choices=[*TUNE_SWEEPS, AUTO], default=None,
                   help="LU-SGS sweep levels: hyperplanes (wavefronts), colours (multicolour "
                        "sweeps: a few wide levels instead of hundreds of hyperplanes) or "
                        "auto (the faster LU-SGS step on this mesh); default none")
    p.add_argument("--hyperplanes", dest="sweeps", action="store_const", const="hyperplanes",
                   help="the same as --sweeps hyperplanes")
    p.add_argument("--sweep-colours", dest="sweeps", action="store_const", const="colours",
                   help="the same as --sweeps colours")
    p.add_argument("--renumber-by-level", action="store_true",
                   help="renumber cells level by level (keeps the LU-SGS sweep exactly)")
    p.add_argument("--seed-markers", default=None, metavar="A,B",
                   help="boundary markers seeding the 'layers' ordering (default: all)")
    p.add_argument("--seed", type=int, default=0, help="random seed (random, metis)")
    p.add_argument("--cluster-size", type=positive_int, default=256,
                   help="cells per METIS cluster")
    p.add_argument("--write-mesh", metavar="FILE", default=None,
                   help="also write the reordered mesh (any format meshio writes)")
    p.add_argument("--blocks", type=non_negative_int, default=0, metavar="FACES",
                   help="also cut faces into coloured blocks of FACES faces for the "
                        "block kernels (gpusolver's block-colour, block-atomic); 0: none")
    p.add_argument("--partitions", type=positive_int, default=1, metavar="N",
                   help="split the cells into N parts for N GPUs (METIS; each part interior "
                        "cells first, in the --cells order; halo lists in the plan)")
    p.add_argument("--weights", default=None, metavar="faces|FILE",
                   help="with --partitions: balance the parts' work, not their cells: "
                        "'faces' weighs each cell by its number of faces; FILE (.npy, or "
                        "text: one number per line) holds a positive weight per cell, in the "
                        "mesh file's order")
    p.add_argument("--multigrid", type=non_negative_int, default=0, metavar="LEVELS",
                   help="store this many coarse levels of agglomeration multigrid "
                        "(gpusolver [run] multigrid)")
    p.add_argument("--tune-seconds", type=positive_float, default=DEFAULT_TUNE_SECONDS,
                   metavar="S", help="with auto: stop timing candidates on the GPU after S "
                                     f"seconds (default {DEFAULT_TUNE_SECONDS:g})")
    p.add_argument("--tune-precision", choices=PRECISIONS, default="fp64",
                   help="with auto: the precision the layout is chosen for (default fp64)")
    p.add_argument("--compress", action="store_true",
                   help="deflate the plan's arrays (smaller file, slower to write and load)")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder reorder``."""
    if args.blocks > MAX_BLOCK_SIZE:
        raise UsageError(f"--blocks {args.blocks}: at most {MAX_BLOCK_SIZE} faces per block")
    outputs = [args.out, *([args.write_mesh] if args.write_mesh else [])]
    if args.write_mesh:
        check_format(args.write_mesh)
        if Path(args.write_mesh).resolve() == Path(args.out).resolve():
            raise UsageError(f"--write-mesh {args.write_mesh} is the plan's own path")
    for path in outputs:
        check_writable(path)
        if Path(path).resolve() == Path(args.mesh).resolve():
            raise UsageError(f"{path} is the input mesh; choose another output name")
    if Path(args.out).suffix.lower() != ".npz":
        raise UsageError(f"{args.out}: a plan is written as .npz; name it plan.npz (the "
                         "reordered mesh goes to --write-mesh)")
    if args.renumber_by_level:
        if args.sweeps not in (None, "hyperplanes"):
            raise UsageError(f"--sweeps {args.sweeps} and --renumber-by-level exclude each "
                             "other (renumbering keeps hyperplane sweeps)")
        args.sweeps = "hyperplanes"
    options = PlanOptions(
        cells=args.cells, faces=args.faces, nodes=args.nodes, colour=args.colour,
        hyperplanes=args.sweeps == "hyperplanes", sweep_colours=args.sweeps == "colours",
        renumber_by_level=args.renumber_by_level,
        seed_markers=tuple(args.seed_markers.split(",")) if args.seed_markers else None,
        seed=args.seed, cluster_size=args.cluster_size, blocks=args.blocks,
        partitions=args.partitions, weights=args.weights, multigrid=args.multigrid)
    if args.weights is not None and args.partitions < 2:
        raise UsageError("--weights balances parts: it needs --partitions N with N >= 2")
    weights = (read_weights(args.weights) if args.weights not in (None, FACE_WEIGHTS)
               else None)
    if args.partitions > 1 and args.renumber_by_level:
        raise UsageError("--partitions and --renumber-by-level exclude each other")
    started = time.perf_counter()
    mesh = load_mesh(args)
    read_s = time.perf_counter() - started
    if args.partitions > mesh.n_cells:
        raise UsageError(f"--partitions {args.partitions}: the mesh has only {mesh.n_cells} "
                         "cells")
    if weights is not None:
        check_weights(weights, mesh.n_cells, args.weights)
    plan = _plan(mesh, options, args, weights)
    writing = time.perf_counter()
    with (contextlib.ExitStack() as stack,  # every output or none: renamed together at the end
          activity(f"writing {args.out}", show=not args.quiet)):
        temporary = [stack.enter_context(atomic_path(path)) for path in outputs]
        plan.save(temporary[0], compress=args.compress)
        if args.write_mesh:
            try:
                write_mesh(mesh, temporary[1], cell_order=plan.cell_order,
                           node_order=plan.node_order)
            except MeshWriteError as error:  # name the user's path, not the temporary one
                reason = str(error).split(": ", 1)[-1]
                raise MeshWriteError(f"{args.write_mesh}: {reason}") from None
    if not args.quiet:
        native = plan.metrics["native"]
        rows = [(k, native[k], plan.metrics[k]) for k in SHOWN_METRICS]
        extra = [(k, v) for k, v in plan.metrics.items()
                 if k not in SHOWN_METRICS and k not in ("timings", "native", "tune")]
        print(f"{mesh.source}: {mesh.n_cells} cells, {plan.n_faces} faces -> {args.out}")
        # the file's own cell and face order; `meshorder compare` puts greedy faces on
        # every cell order, native included, so its native row differs in sectors
        chosen = f"{plan.parameters['cells']}+{plan.parameters['faces']}"
        print(table(["metric", "file order (cells+faces)", chosen], rows))
        if extra:
            print(table(["metric", "value"], extra))
        if "tune" in plan.metrics:
            print(tune_table(plan.metrics["tune"]))
        timings = {"read": read_s, **plan.metrics["timings"],
                   "write": time.perf_counter() - writing}
        print("time: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items())
              + f"; total {time.perf_counter() - started:.2f}s")
    return 0


def _plan(mesh, options: PlanOptions, args: argparse.Namespace,
          weights: np.ndarray | None) -> Plan:
    """The plan of ``options``; where a layout option is ``auto``, of the fastest candidate
    (:func:`meshorder.tune.tune_layout`), its trials recorded in the plan's metrics."""
    if AUTO not in (args.cells, args.faces, args.sweeps):
        return make_plan(mesh, options, cell_weights=weights, progress=not args.quiet)
    topology = Topology(mesh)
    timer = find_timer()
    with activity("tuning the layout" + (f" on {timer.device}" if timer else " (predicted)"),
                  show=not args.quiet):
        tuning = tune_layout(mesh, options, candidates(args.cells, args.faces, args.sweeps),
                             topology=topology, timer=timer, precision=args.tune_precision,
                             budget_s=args.tune_seconds)
    plan = make_plan(mesh, tuning.choice.options(options), topology=topology,
                     cell_order=tuning.cell_order, cell_weights=weights,
                     progress=not args.quiet)
    plan.metrics["tune"] = tuning.record()
    return plan


def read_weights(path: str) -> np.ndarray:
    """The cell weights in ``path``: a ``.npy`` array, or text with one number per line.

    Raises
    ------
    PartitionError
        If the file cannot be read as numbers (the reader's reason, with its line).
    """
    try:
        if path.endswith(".npy"):
            return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64).ravel()
        return np.atleast_1d(np.loadtxt(path, dtype=np.float64, ndmin=1))
    except FileNotFoundError:
        raise PartitionError(f"{path}: no such weights file") from None
    except (OSError, ValueError) as exc:
        raise PartitionError(f"{path}: not one number per cell ({exc})") from None
