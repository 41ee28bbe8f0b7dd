"""``meshorder info FILE``: describe a mesh or a plan."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..plan import Plan
from ..report import table
from ..topology import Topology
from ..tune import tune_table
from .common import add_mesh_argument, load_mesh


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("info", help="describe a mesh or a plan",
                       description="Summarise a mesh (cells, markers, faces, components) or a "
                                   "plan file (.npz: parameters and metrics).")
    add_mesh_argument(p, "file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``meshorder info``."""
    if Path(args.file).suffix.lower() == ".npz":
        _plan_info(Plan.load(args.file))
    else:
        _mesh_info(args)
    return 0


def _mesh_info(args: argparse.Namespace) -> None:
    mesh = load_mesh(args, "file")
    topology = Topology(mesh)
    report = topology.report()
    print(f"{mesh.source}: {mesh.dim}D mesh, digest {mesh.digest()[:16]}")
    print(table(["cell type", "count"], [(b.type, len(b)) for b in mesh.cells]))
    axes = "xyz"[:mesh.dim]
    extents = marker_extents(mesh, topology)
    rows = [(name, count, *(f"{e:.4g}" for e in extent))
            for name, (count, extent) in extents.items()]
    print(table(["boundary marker", "faces", *(f"extent {a}" for a in axes)], rows))
    print(table(["quantity", "value"], list(report.items())))
    if report["components"] > 1:
        print(f"note: the mesh has {report['components']} disconnected components")
    if report["unreferenced_points"]:
        print(f"note: {report['unreferenced_points']} points are used by no cell")
    if mesh.dim == 3 and extents:
        name, (_, extent) = min(extents.items(), key=lambda item: float(np.max(item[1][1])))
        print(f"note: the smallest marker, {name}, extends most along {axes[np.argmax(extent)]} "
              f"and least along {axes[np.argmin(extent)]} (a wing's span and thickness: "
              "gpusolver's [physics] lift_axis is the thickness axis)")


def marker_extents(mesh, topology: Topology) -> dict[str, tuple[int, np.ndarray]]:
    """Per boundary marker: its faces and the extent of its points along each axis."""
    boundary = ~topology.interior
    markers, nodes = topology.face_marker[boundary], topology.face_nodes[boundary]
    extents = {}
    for key, name in sorted(topology.marker_names.items()):
        mine = nodes[markers == key]
        points = mesh.points[mine[mine >= 0], :mesh.dim]
        extent = np.ptp(points, axis=0) if len(points) else np.zeros(mesh.dim)
        extents[name] = (len(mine), extent)
    return extents


def _plan_info(plan: Plan) -> None:
    print(f"plan format {plan.format_version}, {plan.created_by}, mesh digest "
          f"{plan.mesh_digest[:16]}")
    print(f"{plan.n_cells} cells, {plan.n_faces} faces ({plan.n_interior_faces} interior), "
          f"{plan.n_parts} part{'s' if plan.n_parts > 1 else ''}")
    print(table(["parameter", "value"], list(plan.parameters.items())))
    shown = [(k, v) for k, v in plan.metrics.items() if not isinstance(v, dict | list)]
    print(table(["metric", "value"], shown))
    if "tune" in plan.metrics:
        print(tune_table(plan.metrics["tune"]))
    split = plan.partition()
    if split is not None:
        sizes = split.offsets[1:] - split.offsets[:-1]
        print(table(["part", "cells", "interior cells", "halo cells", "neighbours"],
                    [(p, int(sizes[p]), int(split.n_interior[p]),
                      sum(len(split.receive(p, q)) for q in split.neighbours(p)),
                      ",".join(map(str, split.neighbours(p))) or "-")
                     for p in range(split.n_parts)]))
    levels = plan.coarse_levels()
    if levels:
        print(table(["multigrid level", "cells", "fine cells per cell"],
                    [(k + 1, int(m.max()) + 1, f"{len(m) / (int(m.max()) + 1):.1f}")
                     for k, m in enumerate(levels)]))
    ranges = plan.boundary_ranges()
    if ranges:
        print(table(["boundary marker", "faces"], [(k, f"{a}..{b - 1}")
                                                   for k, (a, b) in ranges.items()]))
