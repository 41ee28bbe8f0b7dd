"""Run outputs: forces, surface Cp and the VTU solution.

Every file is written through a temporary file and a rename, so an interrupted run
never leaves a half-written output behind.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Protocol

import numpy as np

from gpusolver.io.vtu import write_vtu
from gpusolver.monitors.forces import Forces, surface_walk
from gpusolver.physics.gas import Gas
from meshorder import Mesh
from meshorder.atomic import atomic_path


class Solution(Protocol):
    """What the writers read of a mesh-based solver (finite volume or DG, on the whole
    mesh or on parts)."""

    gas: Gas
    mesh: Mesh
    wall_markers: list[str]

    def primitive(self) -> np.ndarray:
        """Primitive state in the file's cell order."""

    def wall_forces(self) -> dict[str, Forces]:
        """Forces per wall marker and ``"total"``."""

    def surface_pressure(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """Face centres and pressure coefficients of one wall."""

    def wall_edges(self, marker: str) -> tuple[np.ndarray, np.ndarray]:
        """2-D: the nodes of the wall's faces, and the points they index."""

    def model_fields(self) -> dict[str, np.ndarray]:
        """More cell fields (a turbulence model's) in the file's cell order."""

    #: Cell fields that show where a run that did not converge struggles, in the file's
    #: cell order (empty unless it was diagnosed).
    diagnostics: dict[str, np.ndarray]

def write_forces(path: Path, solver: Solution, split: dict | None = None) -> None:
    """``forces.csv``: force vector, CL and CD per wall marker and in total; with
    ``split`` (:meth:`~gpusolver.solvers.parts.Parts.force_split`), their pressure and
    friction parts too."""
    dim = solver.gas.dim
    parts = ["cl_pressure", "cd_pressure", "cl_friction", "cd_friction"] if split else []
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["marker"] + [f"f{axis}" for axis in "xyz"[:dim]] + ["cl", "cd"]
                        + parts)
        for name, forces in solver.wall_forces().items():
            row = [forces.force.tolist(), [forces.lift, forces.drag]]
            if split:
                pressure, friction = split[name]
                row.append([pressure.lift, pressure.drag, friction.lift, friction.drag])
            writer.writerow([name] + [f"{v:.10g}" for values in row for v in values])


def write_surface_pressure(directory: Path, solver: Solution) -> list[Path]:
    """``cp_<marker>.csv`` per wall marker: face centre and pressure coefficient.

    In 2-D the rows follow the wall (:func:`gpusolver.monitors.forces.surface_walk`:
    from the trailing edge over the upper surface) with the arc length ``s`` as the
    first column, so that a line plot of Cp does not zigzag.
    """
    paths = []
    for name in solver.wall_markers:
        centre, cp = solver.surface_pressure(name)
        paths.append(_write_wall_rows(directory / f"cp_{name}.csv", solver, name, ["cp"],
                                      centre, [cp]))
    return paths


def _write_wall_rows(path: Path, solver, marker: str, names: list[str], centre: np.ndarray,
                     values: list[np.ndarray]) -> Path:
    """A wall's csv: face centre and ``values`` (columns ``names``), per face; in 2-D
    ordered along the wall, the arc length ``s`` first."""
    columns = [*list("xyz"[:solver.gas.dim]), *names]
    rows = np.column_stack([centre.T, *values])
    if solver.gas.dim == 2:
        order, arc = surface_walk(*solver.wall_edges(marker))
        columns, rows = ["s", *columns], np.column_stack([arc, rows[order]])
    line = ",".join(["%r"] * rows.shape[1]) + "\n"  # one format for all rows: csv's speed x1.6
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        f.write(",".join(columns) + "\n")
        f.write((line * len(rows)) % tuple(rows.ravel().tolist()))
    return path


def write_skin_friction(directory: Path, solver) -> list[Path]:
    """``cf_<marker>.csv`` per no-slip wall of a Navier-Stokes run (``friction_markers``):
    face centre, skin-friction coefficient along the free stream and the first cell's y+;
    in 2-D ordered along the wall with the arc length ``s`` first, as the Cp files."""
    paths = []
    for name in solver.friction_markers:
        centre, cf, y_plus = solver.surface_friction(name)
        paths.append(_write_wall_rows(directory / f"cf_{name}.csv", solver, name,
                                      ["cf", "y_plus"], centre, [cf, y_plus]))
    return paths


def write_solution(path: Path, solver: Solution, compression: str = "none") -> None:
    """``solution.vtu`` with cell data density, velocity, pressure, mach, the model's
    fields (RANS: ``nu_tilde``, ``eddy_viscosity_ratio``) and, after a run that did not
    converge, the solver's diagnostics (finite volume: the density residual and the cells'
    quality; ParaView-ready), its arrays
    compressed by ``compression`` (a key of :data:`gpusolver.io.vtu.COMPRESSORS`)."""
    mesh = solver.mesh
    fields = (_cell_fields(solver.gas, solver.primitive()) | solver.model_fields()
              | solver.diagnostics)
    _write_vtu(path, mesh, fields, np.arange(mesh.n_cells), compression)


def write_partitioned_solution(path: Path, solver, compression: str = "none") -> list[Path]:
    """``solution.pvtu`` (by the root) and a ``solution_<part>.vtu`` piece of each part's
    own cells (by the process computing it): ParaView opens the ``.pvtu`` as one mesh.

    Every process calls it, and writes its parts' pieces from their own cells (no
    process gathers the solution); it returns the files this process wrote.
    ``compression``: as :func:`write_solution`.
    """
    written, names = [], []
    for part, cells, of_cells in zip(solver.parts, solver.own_cells(), solver.own_fields(),
                                     strict=True):
        piece = path.with_name(f"{path.stem}_{part.mesh.part}.vtu")
        own = np.sort(part.own())
        entry = np.empty(part.mesh.mesh.n_cells, dtype=np.int64)  # of each own cell
        entry[cells] = np.arange(len(cells))
        at = entry[own]
        fields = {name: values[..., at] for name, values in
                  (_cell_fields(solver.gas, of_cells.pop("w")) | of_cells).items()}
        _write_vtu(piece, part.mesh.mesh, fields, own, compression)
        written.append(piece)
        names = list(fields)
    if solver.is_root:
        arrays = "\n".join(f'      <PDataArray type="Float64" Name="{name}" '
                           f'NumberOfComponents="{3 if name == "velocity" else 1}"/>'
                           for name in names)
        pieces = "\n".join(f'    <Piece Source="{path.stem}_{p}.vtu"/>'
                           for p in range(solver.n_parts))
        with atomic_path(path) as tmp:
            Path(tmp).write_text(
                '<?xml version="1.0"?>\n<VTKFile type="PUnstructuredGrid" version="0.1" '
                'byte_order="LittleEndian">\n  <PUnstructuredGrid GhostLevel="0">\n'
                '    <PPoints>\n      <PDataArray type="Float64" NumberOfComponents="3"/>\n'
                f'    </PPoints>\n    <PCellData>\n{arrays}\n    </PCellData>\n{pieces}\n'
                '  </PUnstructuredGrid>\n</VTKFile>\n')
        written.append(path)
    return written


def _cell_fields(gas, w: np.ndarray) -> dict[str, np.ndarray]:
    """Density, velocity ``(3, n)``, pressure and Mach number from primitive states."""
    velocity = np.zeros((3, w.shape[1]))
    velocity[:gas.dim] = w[1:-1]
    speed = np.sqrt((w[1:-1] ** 2).sum(axis=0))
    return {"density": w[0], "velocity": velocity, "pressure": w[-1],
            "mach": speed / gas.sound_speed(w)}


def _write_vtu(path: Path, mesh, fields: dict[str, np.ndarray], cells: np.ndarray,
               compression: str) -> None:
    """``cells`` (increasing) of ``mesh`` with their ``fields`` (one value, or a column of
    ``(3, n)``, per cell of ``cells``) as a VTU file."""
    offsets = mesh.block_offsets()
    blocks, data = [], {name: [] for name in fields}
    for block, (a, b) in zip(mesh.cells, itertools.pairwise(offsets), strict=True):
        first, end = np.searchsorted(cells, [a, b])
        if end > first:
            blocks.append((block.type, block.nodes[cells[first:end] - a]))
            for name, values in fields.items():
                data[name].append(values[..., first:end].T if values.ndim > 1
                                  else values[first:end])
    write_vtu(path, mesh.points, blocks,
              cell_data={name: np.concatenate(values) for name, values in data.items()},
              compression=compression)


def write_high_order_solution(path: Path, solver, compression: str = "none") -> list[Path]:
    """``solution_high_order.vtu``: a DG solution on its elements cut into sub-cells, with
    point data density, velocity, pressure and mach (:meth:`DGSolver.high_order_view`).

    On parts every process calls it (the view is gathered) and the root writes; returns
    the files this process wrote. ``compression``: as :func:`write_solution`.
    """
    view = solver.high_order_view()
    if view is None:
        return []
    points, cells, w = view
    velocity = np.zeros((len(points), 3))
    velocity[:, :2] = w[1:-1].T
    speed = np.sqrt((w[1:-1] ** 2).sum(axis=0))
    point_data = {"density": w[0], "velocity": velocity, "pressure": w[-1],
                  "mach": speed / solver.gas.sound_speed(w)}
    xyz = np.column_stack([points, np.zeros(len(points))])
    write_vtu(path, xyz, cells, point_data=point_data, compression=compression)
    return [path]
