"""``gpusolver bench``: the finite-volume solver per ordering x strategy x precision.

For each cell ordering a plan (greedy faces; face colours where the ``colour`` strategy
needs them) is made; then, per precision and strategy:

- the face-flux kernel (Rusanov, 5 variables) is timed, and its achieved bandwidth
  under the minimum-bytes model divided by the copy bandwidth measured in the same run;
- optionally the full second-order residual (Roe, least squares, Venkatakrishnan, far
  field on every marker) on the CuPy backend, per evaluation, per RK4 stage and per
  LU-SGS step, the same residual with the laminar viscous flux (Navier-Stokes), and
  the turbulent residual of each RANS model (SA-neg, SST: the eddy viscosity, the mean
  flow's residual with it and the model's own residual and implicit diagonal, the
  smallest marker a no-slip wall) against the laminar one;
- optionally the same residual on the NumPy backend, for the GPU/CPU ratio.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.bench.flux import cell_orders, device_and_topology, time_kernel
from gpusolver.bench.reference import GAMMA, random_state
from gpusolver.integrators import STAGES
from gpusolver.layout.faces import FaceLayout
from gpusolver.layout.geometry import build_geometry
from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from gpusolver.solvers.fv import face_kernels as kernels
from gpusolver.solvers.fv.accumulate import STRATEGIES as SOLVER_STRATEGIES
from meshorder import Mesh
from meshorder.blocks import DEFAULT_BLOCK_SIZE
from meshorder.pipeline import PlanOptions, make_plan

#: Columns of the markdown table.
COLUMNS = ("device", "mesh", "cells", "ordering", "strategy", "precision", "kernel_ms", "gb_s",
           "ratio_to_copy", "speedup_vs_native", "speedup_vs_native_atomic", "residual_ms",
           "residual_ns_per_cell", "residual_ratio_to_copy", "arrays_residual_ms",
           "rk_stage_ms", "lusgs_step_ms", "lusgs_vs_residual", "ns_residual_ms", "ns_vs_euler",
           "sa_residual_ms", "sa_vs_ns", "sst_residual_ms", "sst_vs_ns", "cpu_residual_ms",
           "gpu_vs_cpu")

#: The turbulence models timed, by their columns' prefix.
TURBULENCE_MODELS = {"sa": "sa-neg", "sst": "sst"}

#: Steps before timing: the first two of each state buffer run directly and record
#: CUDA graphs, the timed ones replay them.
STEP_WARMUP = 4


def bench_flow(mesh, topology, reynolds: float | None = None, wall: bool = False
               ) -> tuple[Gas, dict, Scheme]:
    """The benchmarks' flow: M 0.5 at 2 degrees, far field on every marker (``wall``:
    but the one whose faces span the smallest box, a body's, a no-slip wall), second
    order (Roe, least squares, Venkatakrishnan)."""
    names = np.unique(topology.face_marker[topology.face_marker >= 0])
    boundaries = {topology.marker_names[int(m)]: "farfield" for m in names}
    if wall and len(names):
        boundaries[topology.marker_names[int(_smallest_marker(mesh, topology, names))]] = (
            "no-slip-adiabatic")
    gas = Gas(dim=mesh.dim, mach=0.5, aoa_deg=2.0, reynolds=reynolds)
    return gas, boundaries, Scheme("roe", 2, "least-squares", "venkatakrishnan")


def _smallest_marker(mesh, topology, markers) -> int:
    """Of ``markers``, the one whose faces' nodes span the smallest bounding box."""
    def diagonal(marker):
        nodes = topology.face_nodes[topology.face_marker == marker]
        points = mesh.points[np.unique(nodes[nodes >= 0])]
        return np.linalg.norm(points.max(axis=0) - points.min(axis=0))

    return min(markers, key=diagonal)


def bench_solver(mesh, topology, plan, strategy, precision, backend, kernels="fused",
                 integrator="rk4", reynolds: float | None = None,
                 sweeps: str = "hyperplanes", multigrid: int = 0,
                 turbulence: str = "none") -> Solver:
    """The benchmarks' solver on ``mesh`` (:func:`bench_flow`, a wall where there is a
    ``turbulence`` model), free stream perturbed by 5% (seed 0); CFL 1 (explicit) or 20
    (implicit, LU-SGS levels of the kind ``sweeps``, ``multigrid`` coarse levels)."""
    gas, boundaries, scheme = bench_flow(mesh, topology, reynolds, wall=turbulence != "none")
    solver = Solver(mesh, gas, boundaries, scheme=scheme,
                    stepping=Stepping(integrator, cfl=1.0 if integrator == "rk4" else 20.0,
                                      sweeps=sweeps, multigrid=multigrid),
                    plan=plan, strategy=strategy, backend=backend,
                    precision=precision, kernels=kernels, turbulence=turbulence)
    w = solver.primitive()
    w *= 1.0 + 0.05 * np.random.default_rng(0).uniform(-1, 1, w.shape)
    solver.set_primitive(w)
    return solver


def run_solver_benchmark(mesh: Mesh, *, orderings: list[str], strategies: list[str],
                         precisions: list[str], repeats: int = 20,
                         residual_orderings: tuple[str, ...] = (), cpu: bool = False,
                         arrays: bool = True, log=print) -> list[dict]:
    """Rows of the solver benchmark on ``mesh`` (see the module docstring); ``arrays``:
    also time the residual's array code on the GPU."""
    cupy = get_backend("cupy").xp
    device, copy_gbs, topology = device_and_topology(mesh, log)
    orders = cell_orders(mesh, topology, orderings, log)
    state64 = random_state(mesh.n_cells, np.random.default_rng(0))
    rows, cpu_ms = [], {}
    for name, (order, _) in orders.items():
        colour = "colour" in strategies
        block = DEFAULT_BLOCK_SIZE if {"block-colour", "block-atomic"} & set(strategies) else 0
        plan = make_plan(mesh, PlanOptions(cells=name, colour=colour, blocks=block),
                         topology=topology, cell_order=order)
        # host tables of this plan's faces, shared by precisions and strategies; the face
        # blocks come from the plan, as every consumer's do
        tables = {("blocks", block): plan.face_blocks()} if block else {}
        geometry = build_geometry(mesh, plan)
        for precision in precisions:
            dtype = PRECISIONS[precision]
            faces = FaceLayout.from_geometry(geometry, dtype)
            minimum = faces.minimum_bytes(mesh.n_cells)
            state = cupy.asarray(state64.astype(dtype))
            for strategy in strategies:
                runner = kernels.FaceFlux(faces, mesh.n_cells, strategy, plan.colour_order,
                                          plan.colour_offsets, tables=tables)
                residual = cupy.zeros_like(state)
                seconds = time_kernel(lambda r=runner, s=state, out=residual:
                                      r(s, out, GAMMA), repeats)
                row = {"device": device, "mesh": mesh.source.split("/")[-1],
                       "cells": mesh.n_cells, "faces": faces.n_faces, "ordering": name,
                       "strategy": strategy, "precision": precision,
                       "kernel_ms": seconds * 1e3, "gb_s": minimum / seconds / 1e9,
                       "copy_gb_s": copy_gbs, "ratio_to_copy": minimum / seconds / 1e9 / copy_gbs,
                       "colours": len(plan.colour_offsets) - 1 if colour else None,
                       "extra_mb": runner.extra_bytes() / 1e6}
                if strategy == "block-colour":
                    row["block_colours"] = runner.blocks.n_block_colours
                if name in residual_orderings and strategy in SOLVER_STRATEGIES:
                    row |= _residual_times(mesh, topology, plan, strategy, precision, repeats,
                                           cpu, cpu_ms, copy_gbs, arrays)
                rows.append(row)
                log(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in row.items() if k not in ("device", "copy_gb_s")))
    for row in rows:
        row["speedup_vs_native"] = _native_ms(rows, row, row["strategy"]) / row["kernel_ms"]
        row["speedup_vs_native_atomic"] = _native_ms(rows, row, "atomic") / row["kernel_ms"]
    return rows


def _native_ms(rows: list[dict], row: dict, strategy: str) -> float:
    """Kernel time of ``strategy`` in the native order, in ``row``'s precision (NaN if absent)."""
    native = [r["kernel_ms"] for r in rows if r["ordering"] == "native"
              and r["precision"] == row["precision"] and r["strategy"] == strategy]
    return native[0] if native else np.nan


def _residual_times(mesh, topology, plan, strategy, precision, repeats, cpu, cpu_ms,
                    copy_gbs, arrays) -> dict:
    """The full residual (fused kernels and array code, Euler and Navier-Stokes), one RK4
    stage and one LU-SGS step, timed."""
    solver = bench_solver(mesh, topology, plan, strategy, precision, "cupy")
    timed = max(3, repeats // 4)
    residual = solver.discretisation.residual
    residual_s = solver.backend.median_seconds(lambda: residual(solver.u), timed, warmup=1)
    stages = STAGES[solver.stepping.integrator]
    step_s = solver.backend.median_seconds(solver.step, timed, warmup=STEP_WARMUP)
    out = {"residual_ms": residual_s * 1e3, "rk_stage_ms": step_s / stages * 1e3,
           "residual_ns_per_cell": residual_s / mesh.n_cells * 1e9}
    fused = solver.discretisation.fused
    if fused is not None:
        out["residual_ratio_to_copy"] = fused.minimum_bytes() / residual_s / 1e9 / copy_gbs
    solver = residual = None  # free its device memory before the next solver's
    implicit = bench_solver(mesh, topology, plan, strategy, precision, "cupy", integrator="lusgs")
    lusgs_s = implicit.backend.median_seconds(implicit.step, timed, warmup=STEP_WARMUP)
    out |= {"lusgs_step_ms": lusgs_s * 1e3, "lusgs_vs_residual": lusgs_s / residual_s}
    implicit = None
    viscous = bench_solver(mesh, topology, plan, strategy, precision, "cupy", reynolds=1e6)
    residual = viscous.discretisation.residual
    ns_s = viscous.backend.median_seconds(lambda: residual(viscous.u), timed, warmup=1)
    out |= {"ns_residual_ms": ns_s * 1e3, "ns_vs_euler": ns_s / residual_s}
    viscous = residual = None
    for prefix, model in TURBULENCE_MODELS.items():
        seconds = _turbulent_residual_seconds(mesh, topology, plan, strategy, precision,
                                              model, timed)
        out |= {f"{prefix}_residual_ms": seconds * 1e3, f"{prefix}_vs_ns": seconds / ns_s}
    if arrays:
        reference = bench_solver(mesh, topology, plan, strategy, precision, "cupy",
                                 kernels="arrays")
        residual = reference.discretisation.residual
        out["arrays_residual_ms"] = reference.backend.median_seconds(
            lambda: residual(reference.u), timed, warmup=1) * 1e3
    if cpu:
        if precision not in cpu_ms:
            reference = bench_solver(mesh, topology, plan, "atomic", precision, "numpy")
            evaluate = lambda: reference.rate(reference.u)  # noqa: E731
            cpu_ms[precision] = reference.backend.median_seconds(evaluate, 1, warmup=1) * 1e3
        out |= {"cpu_residual_ms": cpu_ms[precision],
                "gpu_vs_cpu": cpu_ms[precision] / out["residual_ms"]}
    return out


def _turbulent_residual_seconds(mesh, topology, plan, strategy, precision, model: str,
                                timed: int) -> float:
    """Median seconds of a RANS residual with ``model`` after two LU-SGS steps: the mean
    flow's residual (and its mass fluxes) with each face's eddy viscosity taken between
    its gradients and its fluxes, and the model's residual and implicit diagonal from
    the mean flow's gradients of that pass, as a fused step takes them."""
    solver = bench_solver(mesh, topology, plan, strategy, precision, "cupy",
                          integrator="lusgs", reynolds=1e6, turbulence=model)
    for _ in range(2):
        solver.step()
    return solver.backend.median_seconds(turbulent_residual(solver), timed, warmup=1)


def turbulent_residual(solver: Solver):
    """A call that evaluates ``solver``'s RANS residual at its state as a fused step
    takes it (see :func:`_turbulent_residual_seconds`), unit time steps: the mean flow's
    with its eddy pass, then :func:`model_residual`'s."""
    scalars, d = solver.turbulence[0], solver.discretisation
    model = model_residual(solver)

    def evaluate():
        d.fused.residual(solver.u, eddy=scalars.kernels.eddy_pass)
        model()

    return evaluate


def model_residual(solver: Solver):
    """A call that evaluates the turbulence model's own residual and implicit diagonal
    (unit time steps) from the mean flow's last fused residual: its gradients and mass
    fluxes."""
    scalars, d = solver.turbulence[0], solver.discretisation
    dt = scalars.kernels.cell_steps(1.0)

    def evaluate():
        scalars.take_residual_gradients(keep=False)
        scalars.kernels.evaluate_residual(solver.u, d.mass_flux, dt)

    return evaluate
