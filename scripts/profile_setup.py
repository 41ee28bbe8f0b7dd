"""Where a whole ``gpusolver run`` spends its time: inclusive wall seconds of its phases.

Usage: ``python scripts/profile_setup.py CASE.toml [--iterations N] [--steps] [--output DIR]
[--repeat N]``.
Runs the case in this process (output in a temporary folder, or ``DIR``: under
``mpiexec -n N`` every rank must name the same one, and each prints its own phases, a
part refined on its rank included) with timers around the functions that make
up the set-up (reading, plan, backend, geometry, discretisations, multigrid levels,
kernels), the loop and the outputs; each timer waits for the GPU before it stops, so
asynchronous work is charged to the phase that queued it. Prints one line per phase
(calls, seconds; nested phases are included in their callers) and the whole run, the
imports included. Unlike cProfile it adds no cost per Python call. ``--steps`` times the
parts of a finite-volume step instead (mean flow, multigrid, turbulence model); there
each timer's wait for the GPU keeps the phases from overlapping. ``--repeat N`` runs the
case N times in this process and prints each run's phases: what a later run no longer
pays (CUDA's start, kernels loaded, imports, memory first touched) is what the first
pays once.
"""

import time

START = time.perf_counter()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import functools  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import gpusolver.cli  # noqa: E402,F401  (what `gpusolver run` imports)
from meshorder.options import positive_int  # noqa: E402

IMPORTED = time.perf_counter()

#: ``module:qualified name`` of each timed function, outermost first.
PHASES = [
    "gpusolver.systems:load_case",
    "gpusolver.run:build_system",
    "gpusolver.solvers.mesh_system:_read_with_plan",
    "meshorder.plan:read_plan_part",
    "meshorder.part_refine:refine_part",
    "meshorder.io.read:read_mesh",
    "meshorder.plan:Plan.load",
    "gpusolver:plan_for",
    "gpusolver:load_plan_for",
    "gpusolver.backends:get_backend",
    "gpusolver.solvers.fv.solver:Solver.__init__",
    "gpusolver.layout.geometry:build_geometry",
    "gpusolver.layout.parts:whole_mesh_layout",
    "gpusolver.layout.parts:layout_of_part",
    "gpusolver.parallel:halo_lists",
    "gpusolver.solvers.fv.discretisation:Discretisation.__init__",
    "gpusolver.layout.geometry:FVGeometry.to",
    "gpusolver.solvers.fv.fused:FusedResidual.__init__",
    "gpusolver.solvers.fv.solver:Solver._build_steps",
    "gpusolver.solvers.fv.solver:Solver._turbulence",
    "gpusolver.layout.wall_distance:wall_distance",
    "gpusolver.solvers.fv.lusgs:line_sweeps",
    "meshorder.lines:implicit_lines",
    "meshorder.lines:line_levels",
    "gpusolver.solvers.fv.solver:Solver._levels",
    "gpusolver.solvers.fv.lusgs:LUSGS.__init__",
    "gpusolver.solvers.fv.lusgs:LevelKernels.__init__",
    "gpusolver.solvers.fv.lusgs:FusedLUSGS.__init__",
    "gpusolver.solvers.fv.multigrid:Multigrid.__init__",
    "gpusolver.solvers.fv.multigrid:_part_levels",
    "gpusolver.layout.agglomeration:coarse_geometry",
    "gpusolver.solvers.fv.multigrid:MultigridKernels.__init__",
    "gpusolver.solvers.fv.solver:Solver._uniform",
    "gpusolver.solvers.parts:Parts._start_loads",
    "gpusolver.solvers.mesh_system:MeshSystem.advance",
    "gpusolver.solvers.mesh_system:MeshSystem.snapshot",
    "gpusolver.io.checkpoint:save_checkpoint",
    "gpusolver.solvers.mesh_system:MeshSystem.diagnose",
    "gpusolver.solvers.mesh_system:MeshSystem.write_outputs",
    "gpusolver.io.output:write_solution",
    "gpusolver.io.output:write_partitioned_solution",
    "gpusolver.solvers.parts:Parts.gather_walls",
    "gpusolver.io.output:write_surface_pressure",
    "gpusolver.io.output:write_forces",
]

#: The parts of a finite-volume step (``--steps``).
STEP_PHASES = [
    "gpusolver.solvers.mesh_system:MeshSystem.advance",
    "gpusolver.solvers.fv.solver:Solver._mean_flow_step",
    "gpusolver.solvers.fv.solver:Solver._fused_implicit_step",
    "gpusolver.solvers.fv.solver:Solver._implicit_step",
    "gpusolver.solvers.fv.multigrid:Multigrid.correct",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV.set_eddy_viscosity",
    "gpusolver.solvers.fv.solver:_cell_steps",
    "gpusolver.solvers.fv.solver:Solver._turbulence_time_steps",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV.step_report",
    "gpusolver.solvers.fv.turbulence:SpalartAllmarasFV.step",
    "gpusolver.solvers.fv.turbulence:MenterSSTFV.step",
    "gpusolver.solvers.fv.turbulence:SpalartAllmarasFV.residual",
    "gpusolver.solvers.fv.turbulence:MenterSSTFV.residual",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV._mean_flow",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV._matrix",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV._swept",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV._solve",
    "gpusolver.solvers.fv.turbulence:TurbulenceFV._sum_squares",
    "gpusolver.solvers.fv.fused_turbulence:FusedSpalartAllmaras.step",
    "gpusolver.solvers.fv.fused_turbulence:FusedSpalartAllmaras._sweep",
    "gpusolver.solvers.fv.fused_turbulence:FusedSpalartAllmaras.advance",
    # Newton-Krylov: FGMRES (its residuals and preconditioner solves inside), the
    # preconditioner's assembly and factorisation, the exact solves on the GPU
    "gpusolver.integrators.newton_krylov:fgmres",
    "gpusolver.solvers.fv.discretisation:Discretisation.residual",
    "gpusolver.solvers.fv.jacobian:SparseLU.operator",
    "gpusolver.solvers.fv.jacobian:ExactSolver.factorise",
    "gpusolver.solvers.fv.level_lu:KernelSolve.solve",
    "gpusolver.backends:Backend.inverse",
]

TOTALS: dict[str, list] = defaultdict(lambda: [0, 0.0])


def _synchronise() -> None:
    """Wait for the GPU, once CuPy is imported (a thread may still be importing it)."""
    try:
        cupy = sys.modules["cupy"]
        if cupy.cuda.runtime.getDeviceCount():
            cupy.cuda.Device().synchronize()
    except (KeyError, AttributeError):
        pass


def _timed(name: str, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _synchronise()
            TOTALS[name][0] += 1
            TOTALS[name][1] += time.perf_counter() - start
    return wrapper


def _install(phase: str) -> None:
    """Wrap ``phase``'s function where it is defined and wherever it was imported (a
    function this version of the code lacks is skipped)."""
    module_name, qualified = phase.split(":")
    owner = importlib.import_module(module_name)
    *path, attribute = qualified.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, attribute, None)
    if original is None:
        return
    wrapped = _timed(qualified, original)
    setattr(owner, attribute, wrapped)
    if not path:  # a module-level function: also where it was imported by name
        for module in list(sys.modules.values()):
            if getattr(module, attribute, None) is original:
                setattr(module, attribute, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", type=Path)
    parser.add_argument("--iterations", type=int, help="steps (default: the case's)")
    parser.add_argument("--steps", action="store_true",
                        help="time the parts of a finite-volume step, not the set-up")
    parser.add_argument("--repeat", type=positive_int, default=1,
                        help="runs of the case in this process, each with its phases")
    parser.add_argument("--output", type=Path,
                        help="output folder (default: a temporary one; under mpiexec: "
                             "required, the same on every rank)")
    args = parser.parse_args()
    from gpusolver.parallel import mpi_world

    comm = mpi_world()
    if comm is not None and args.output is None:
        parser.error("under mpiexec give --output DIR, the same on every rank")
    phases = STEP_PHASES if args.steps else PHASES
    for phase in phases:
        _install(phase)
    from gpusolver.run import run_case
    from gpusolver.systems import load_case

    with contextlib.ExitStack() as stack:
        out = (args.output.resolve() if args.output is not None
               else stack.enter_context(tempfile.TemporaryDirectory()))
        text = args.case.read_text()
        text = re.sub(r"^directory\s*=.*$", f'directory = "{out}"', text, flags=re.M)
        if args.iterations is not None:
            text = re.sub(r"^(iterations|steps)\s*=.*$", rf"\1 = {args.iterations}", text,
                          flags=re.M)
        rank = "" if comm is None else f"rank {comm.rank}: "
        own = "" if comm is None else f"{comm.rank}_"  # each rank its own copy of the case
        copy = args.case.with_name(f".profiled_{own}{args.case.name}")
        copy.write_text(text)
        try:
            for repeat in range(args.repeat):
                TOTALS.clear()
                start = time.perf_counter()
                result = run_case(load_case(copy), progress=False)
                whole = time.perf_counter() - (START if repeat == 0 else start)
                _report(phases, f"{rank}{args.case}", result.system.iteration, whole,
                        f"imports {IMPORTED - START:.2f} s" if repeat == 0
                        else f"run {repeat + 1} in this process", rank)
        finally:
            copy.unlink()


def _report(phases: list[str], what: str, steps: int, whole: float, first: str,
            rank: str) -> None:
    """Print one run's phases (:data:`TOTALS`)."""
    lines = [f"{what}: {steps} steps; {first}; whole {whole:.2f} s"]
    for phase in phases:
        name = phase.split(":")[1]
        calls, seconds = TOTALS.get(name, (0, 0.0))
        if calls:
            lines.append(f"{rank}  {name:40s} {calls:5d} calls {seconds:8.3f} s")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
