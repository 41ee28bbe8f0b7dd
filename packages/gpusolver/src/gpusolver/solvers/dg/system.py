"""The DG System: :class:`~gpusolver.solvers.dg.solver.DGSolver` on the whole mesh or on
a rank's part."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.io.case import Case
from gpusolver.io.output import write_high_order_solution
from gpusolver.solvers.dg.case import SCHEMA
from gpusolver.solvers.dg.solver import DGSolver
from gpusolver.solvers.mesh_system import MeshSystem
from meshorder import Mesh
from meshorder.plan import Plan, PlanPart


class DGSystem(MeshSystem):
    """Modal discontinuous Galerkin (``[solver] method = "dg"``)."""

    method = "dg"
    schema = SCHEMA

    @classmethod
    def on_whole_mesh(cls, case: Case, mesh: Mesh, plan: Plan) -> DGSolver:
        """:class:`DGSolver` with the case's degree, flux and stepping."""
        return DGSolver(mesh, case.gas_for(mesh.dim), case.boundaries, plan=plan,
                        backend=case.run["backend"], **_options(case))

    @classmethod
    def on_part(cls, case: Case, part: PlanPart, backend: str, transport) -> DGSolver:
        """:class:`DGSolver` of this rank's part."""
        return DGSolver([part], case.gas_for(part.mesh.mesh.dim), case.boundaries,
                        transport=transport, backend=backend, **_options(case))

    def take_steps(self, steps: int) -> np.ndarray:
        """One batch (:meth:`DGSolver.advance`: the state is checked once, after the last
        step; every rank takes the same steps)."""
        return self.solver.advance(steps)

    def write_outputs(self, out: Path) -> list[Path]:
        """Those of every mesh-based System and ``solution_high_order.vtu``."""
        files = super().write_outputs(out)
        if self.solver.has_loads:  # the view is gathered on the root
            files += write_high_order_solution(out / "solution_high_order.vtu", self.solver,
                                               self.case.vtu_compression)
        return files


def _options(case: Case) -> dict:
    """The DG solver's options from ``case``, after refusing what it does not run yet."""
    run, scheme = case.run, case.scheme
    if run["precision"] != "fp64":
        raise ConfigError(f"{case.path}: [solver] method = 'dg' runs fp64 so far")
    return {"degree": scheme["degree"], "flux": scheme["flux"],
            "integrator": run["time_integrator"], "cfl": float(run["cfl"]),
            "reference_area": case.reference_area, "local_time_step": run["local_time_step"],
            "shock_capturing": scheme["shock_capturing"]}
