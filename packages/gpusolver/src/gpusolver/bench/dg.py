"""``gpusolver bench --solver dg``: the DG right-hand side per ordering x degree x precision.

For each cell ordering a plan is made; then per degree the DG layout, and per precision
the right-hand side in the kernels of :mod:`gpusolver.solvers.dg.fused` is timed on the
isentropic vortex (far field on every marker, LLF flux). The rows give seconds per
degree of freedom (a mode of one element; the four variables count once, as PyFR counts
solution points) and per element per right-hand side evaluation, and, with ``cpu``, the
time of the same kernels compiled for one CPU core (``-O3 -march=native``, the host
shim's loops; not the NumPy reference) for the GPU/CPU ratio.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.fused import FusedDG
from gpusolver.solvers.dg.solver import DGSolver
from meshorder import Mesh, Topology
from meshorder.pipeline import PlanOptions, make_plan

#: Columns of the markdown table.
COLUMNS = ("device", "mesh", "elements", "ordering", "degree", "precision", "dofs", "rhs_ms",
           "s_per_dof_rhs", "s_per_element_rhs", "cpu_rhs_ms", "gpu_vs_cpu")


def vortex_state(gas: Gas, strength: float = 5.0) -> Callable:
    """Shu's isentropic vortex about the mesh's centre, scaled to its size: a smooth,
    non-trivial state for timing."""
    def state(points, t):
        centre = points.mean(axis=1, keepdims=True)
        size = np.ptp(points, axis=1).max() / 10.0
        x, y = (points - centre) / size
        r2 = x * x + y * y
        f = strength / (2 * np.pi) * np.exp(0.5 * (1 - r2))
        temperature = 1 - (gas.gamma - 1) * strength ** 2 / (8 * gas.gamma * np.pi ** 2) \
            * np.exp(1 - r2)
        rho = temperature ** (1 / (gas.gamma - 1))
        u, v = 0.5 - f * y, f * x
        p = rho ** gas.gamma / gas.gamma
        return np.stack([rho, rho * u, rho * v, p / (gas.gamma - 1) + 0.5 * rho * (u * u + v * v)])
    return state


def farfield_everywhere(topology: Topology) -> dict[str, str]:
    """A far-field condition on every boundary marker of a mesh."""
    return {topology.marker_names[int(m)]: "farfield"
            for m in np.unique(topology.face_marker[topology.face_marker >= 0])}


def run_dg_benchmark(mesh: Mesh, *, orderings: list[str], degrees: list[int],
                     precisions: list[str], repeats: int = 20, cpu: bool = False,
                     backend: str = "cupy", log=print) -> list[dict]:
    """Rows of the DG benchmark on ``mesh`` (see the module docstring)."""
    device_backend = get_backend(backend)
    device = ("CPU (host-compiled kernels)" if device_backend.name == "numpy" else
              device_backend.xp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    topology = Topology(mesh)
    boundaries = farfield_everywhere(topology)
    gas = Gas(dim=2, mach=0.5)
    rows = []
    for ordering in orderings:
        plan = make_plan(mesh, PlanOptions(cells=ordering), topology=topology)
        for degree in degrees:
            solver = DGSolver(mesh, gas, boundaries, degree=degree, flux="llf", plan=plan)
            u = solver.discretisation.project(vortex_state(gas))
            n, dofs = solver.layout.n_elements, solver.layout.n_elements * solver.layout.n_modes
            for precision in precisions:
                dtype = PRECISIONS[precision]
                cpu_ms = None
                if cpu:
                    host = get_backend("numpy")
                    kernels = FusedDG(solver.discretisation, host, dtype, optimised=True)
                    host_state = u.astype(dtype)
                    cpu_ms = host.median_seconds(lambda f=kernels, x=host_state: f.rate(x),
                                                 3, 1) * 1e3
                fused = FusedDG(solver.discretisation, device_backend, dtype)
                state = device_backend.asarray(u, dtype)
                start = time.perf_counter()
                seconds = device_backend.median_seconds(lambda f=fused, s=state: f.rate(s),
                                                        repeats)
                row = {"device": device, "mesh": mesh.source, "elements": n,
                       "ordering": ordering, "degree": degree, "precision": precision,
                       "dofs": dofs, "rhs_ms": seconds * 1e3, "s_per_dof_rhs": seconds / dofs,
                       "s_per_element_rhs": seconds / n, "cpu_rhs_ms": cpu_ms,
                       "gpu_vs_cpu": None if cpu_ms is None else cpu_ms / (seconds * 1e3)}
                rows.append(row)
                log(f"{ordering} p={degree} {precision}: {row['rhs_ms']:.3f} ms, "
                    f"{row['s_per_dof_rhs']:.3e} s/DOF/RHS"
                    + ("" if cpu_ms is None else f", one CPU core {cpu_ms:.1f} ms")
                    + f" ({time.perf_counter() - start:.1f} s)")
    return rows
