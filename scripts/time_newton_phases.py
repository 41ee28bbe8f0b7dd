"""Where a Newton-Krylov step's time goes: its phases timed to the GPU's end.

Usage: ``python scripts/time_newton_phases.py CASE.toml [STEPS]``. The case runs on CuPy
with fused kernels (NumPy with array code where CuPy is missing) for 30 steps, then
``STEPS`` (default 40) more with each phase wrapped by a timer that waits for the GPU before
and after it: the mean flow's step, FGMRES, the preconditioner's assembly and
factorisation, each exact solve, the residual, and the turbulence model's sub-steps and
eddy viscosity. Nested phases count inside their parents; the waits make the step a little
slower than in a run. Prints milliseconds a step and a call, largest first.
"""

import collections
import dataclasses
import sys
import time

import gpusolver.integrators.newton_krylov as newton_krylov
from gpusolver.run import build_system
from gpusolver.solvers.fv import jacobian
from gpusolver.systems import load_case

try:
    import cupy

    synchronize = cupy.cuda.Device().synchronize
    BACKEND = {"backend": "cupy", "kernels": "fused"}
except ImportError:
    def synchronize():
        """NumPy: nothing to wait for."""

    BACKEND = {"backend": "numpy", "kernels": "arrays"}

SECONDS: collections.defaultdict = collections.defaultdict(float)
CALLS: collections.Counter = collections.Counter()


def timed(function, label: str):
    """``function`` that adds its time to the GPU's end to phase ``label``."""
    def wrapper(*args, **kwargs):
        synchronize()
        start = time.perf_counter()
        result = function(*args, **kwargs)
        synchronize()
        SECONDS[label] += time.perf_counter() - start
        CALLS[label] += 1
        return result
    return wrapper


def main() -> None:
    case_file = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    factorise = jacobian.ExactSolver.factorise

    def timed_factorise(exact, blocks):
        solve = timed(factorise, f"factorise, {exact.n_vars} unknowns a cell")(exact, blocks)
        return timed(solve, f"solve, {exact.n_vars} unknowns a cell")

    jacobian.ExactSolver.factorise = timed_factorise
    newton_krylov.fgmres = timed(newton_krylov.fgmres, "FGMRES (its solves and residuals)")
    case = load_case(case_file)
    solver = build_system(dataclasses.replace(case, run={**case.run, **BACKEND})).solver
    discretisation = solver.discretisations[0]
    discretisation.residual = timed(discretisation.residual, "mean flow residual")
    solver._mean_flow_step = timed(solver._mean_flow_step, "mean flow step")
    preconditioner = solver.newton.preconditioner
    preconditioner.operator = timed(preconditioner.operator,
                                    "preconditioner (assembly, factorisation)")
    for model in solver.turbulence or []:
        model.step = timed(model.step, "turbulence sub-step")
        model.set_eddy_viscosity = timed(model.set_eddy_viscosity, "eddy viscosity")
    for _ in range(30):
        solver.step()
    SECONDS.clear()
    CALLS.clear()
    synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        solver.step()
    synchronize()
    seconds = time.perf_counter() - start
    print(f"{case_file}: {steps} steps after 30, {seconds / steps * 1e3:.1f} ms a step, "
          f"CFL {solver.cfl:.3g}")
    for label, total in sorted(SECONDS.items(), key=lambda item: -item[1]):
        print(f"  {label:45s} {CALLS[label]:5d} calls {total / steps * 1e3:8.2f} ms a step "
              f"{total / CALLS[label] * 1e3:8.3f} ms a call")


if __name__ == "__main__":
    main()
