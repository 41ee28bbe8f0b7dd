"""Run outputs: forces, surface Cp and the VTU solution.

Every file is written through a temporary file and a rename, so an interrupted run
never leaves a half-written output behind.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import TYPE_CHECKING

import meshio
import numpy as np

from gpusolver.monitors.forces import surface_walk
from meshorder.atomic import atomic_path

if TYPE_CHECKING:
    from gpusolver.solvers.fv.solver import Solver


def write_forces(path: Path, solver: Solver) -> None:
    """``forces.csv``: force vector, CL and CD per wall marker and in total."""
    dim = solver.gas.dim
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["marker"] + [f"f{axis}" for axis in "xyz"[:dim]] + ["cl", "cd"])
        for name, forces in solver.wall_forces().items():
            writer.writerow([name] + [f"{v:.10g}" for v in forces.force]
                            + [f"{forces.lift:.10g}", f"{forces.drag:.10g}"])


def write_surface_pressure(directory: Path, solver: Solver) -> list[Path]:
    """``cp_<marker>.csv`` per wall marker: face centre and pressure coefficient.

    In 2-D the rows follow the wall (:func:`gpusolver.monitors.forces.surface_walk`:
    from the trailing edge over the upper surface) with the arc length ``s`` as the
    first column, so that a line plot of Cp does not zigzag.
    """
    paths = []
    host = solver.host
    for name in solver.wall_markers:
        centre, cp = solver.surface_pressure(name)
        columns = [*list("xyz"[:solver.gas.dim]), "cp"]
        rows = np.column_stack([centre.T, cp])
        if solver.gas.dim == 2:
            first, end = host.markers[name]
            edges = host.boundary_nodes[first - host.n_interior:end - host.n_interior]
            order, arc = surface_walk(edges, solver.mesh.points)
            columns, rows = ["s", *columns], np.column_stack([arc, rows[order]])
        path = directory / f"cp_{name}.csv"
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            writer.writerows(rows.tolist())
        paths.append(path)
    return paths


def write_solution(path: Path, solver: Solver) -> None:
    """``solution.vtu`` with cell data density, velocity, pressure, mach (ParaView-ready)."""
    mesh, gas = solver.mesh, solver.gas
    w = solver.primitive()
    velocity = np.zeros((3, mesh.n_cells))
    velocity[:gas.dim] = w[1:-1]
    speed = np.sqrt((w[1:-1] ** 2).sum(axis=0))
    fields = {"density": w[0], "velocity": velocity.T, "pressure": w[-1],
              "mach": speed / gas.sound_speed(w)}
    offsets = mesh.block_offsets()
    cells = [(block.type, block.nodes) for block in mesh.cells]
    cell_data = {name: [values[a:b] for a, b in itertools.pairwise(offsets)]
                 for name, values in fields.items()}
    with atomic_path(path) as tmp:
        meshio.write(tmp, meshio.Mesh(mesh.points, cells, cell_data=cell_data))


def write_high_order_solution(path: Path, solver) -> None:
    """``solution_high_order.vtu``: a DG solution on its elements cut into sub-cells, with
    point data density, velocity, pressure and mach (:meth:`DGSolver.high_order_view`)."""
    points, cells, w = solver.high_order_view()
    velocity = np.zeros((len(points), 3))
    velocity[:, :2] = w[1:-1].T
    speed = np.sqrt((w[1:-1] ** 2).sum(axis=0))
    point_data = {"density": w[0], "velocity": velocity, "pressure": w[-1],
                  "mach": speed / solver.gas.sound_speed(w)}
    xyz = np.column_stack([points, np.zeros(len(points))])
    with atomic_path(path) as tmp:
        meshio.write(tmp, meshio.Mesh(xyz, cells, point_data=point_data))
