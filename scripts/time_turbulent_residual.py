"""Where a RANS residual's time goes against the laminar one, part by part, on the GPU.

Usage: ``python scripts/time_turbulent_residual.py MESH [--precisions fp64,fp32]
[--repeats 20]``. The benchmarks' solver (:func:`gpusolver.bench.solver.bench_solver`:
Roe, least squares, Venkatakrishnan, the smallest marker a no-slip wall, Re 1e6) on
``MESH`` with RCM cells and atomic sums; per precision the laminar residual, and per
model (SA-neg, SST) after two LU-SGS steps: the whole turbulent residual as
``gpusolver bench`` times it, the mean flow's residual with and without its eddy pass,
the eddy viscosity's cell and face kernels, and the model's face and matrix kernels and
(the rest of its residual) its cell kernel, which takes the scalars' gradients too.
Medians of CUDA-event timings; each part also as a multiple of the laminar residual.
"""

import argparse

from gpusolver.bench.solver import bench_solver, model_residual, turbulent_residual
from meshorder import Topology, read_mesh
from meshorder.pipeline import PlanOptions, make_plan

MODELS = ("sa-neg", "sst")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mesh")
    parser.add_argument("--precisions", default="fp64,fp32")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    mesh = read_mesh(args.mesh)
    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(cells="rcm", colour=False), topology=topology)
    print("| precision | model | part | ms | against the laminar residual |")
    print("| --- | --- | --- | --- | --- |")
    for precision in args.precisions.split(","):
        reference = _laminar_seconds(mesh, topology, plan, precision, args.repeats)
        print(f"| {precision} | none | laminar residual ({mesh.n_cells:,} cells) | "
              f"{reference * 1e3:.4f} | 1 |")
        for model in MODELS:
            for part, seconds in _parts(mesh, topology, plan, precision, model, args.repeats):
                print(f"| {precision} | {model} | {part} | {seconds * 1e3:.4f} | "
                      f"{seconds / reference:.3f} |", flush=True)


def _laminar_seconds(mesh, topology, plan, precision: str, repeats: int) -> float:
    """Median seconds of the laminar residual (its solver freed on return)."""
    laminar = bench_solver(mesh, topology, plan, "atomic", precision, "cupy", reynolds=1e6)
    return laminar.backend.median_seconds(
        lambda: laminar.discretisation.residual(laminar.u), repeats)


def _parts(mesh, topology, plan, precision: str, model: str, repeats: int):
    """``(part, median seconds)`` of one model's turbulent residual."""
    solver = bench_solver(mesh, topology, plan, "atomic", precision, "cupy",
                          integrator="lusgs", reynolds=1e6, turbulence=model)
    for _ in range(2):
        solver.step()
    scalars, d = solver.turbulence[0], solver.discretisation
    kernels, u = scalars.kernels, solver.u
    dt = kernels.cell_steps(1.0)

    time = solver.backend.median_seconds
    parts = {
        "whole (as `gpusolver bench`)": turbulent_residual(solver),
        "mean flow with its eddy pass": lambda: d.fused.residual(u, eddy=kernels.eddy_pass),
        "mean flow, eddy viscosity as it is": lambda: d.fused.residual(u),
        "eddy viscosity, cell kernel": lambda: kernels.cell_eddy_viscosity(
            u, d.fused.raw_gradient),
        "eddy viscosity, face kernel": lambda: kernels.face_eddy_viscosity(kernels.mu_t),
        "model: face and matrix kernels": lambda: kernels.scalar_residuals(None, d.mass_flux,
                                                                           dt),
    }
    seconds = {part: time(work, repeats) for part, work in parts.items()}
    model_s = time(model_residual(solver), repeats)
    seconds["model: cell kernel with the scalars' gradients (its residual less the above)"] = (
        model_s - seconds["model: face and matrix kernels"])
    return list(seconds.items())


if __name__ == "__main__":
    main()
