"""The finite-volume System: :class:`~gpusolver.solvers.fv.solver.Solver` on the whole
mesh or on a rank's part."""

from __future__ import annotations

from gpusolver.io.case import Case
from gpusolver.solvers.fv.case import (
    SCHEMA,
    scheme_of,
    stepping_of,
    symmetry_crossings,
    unused_keys,
)
from gpusolver.solvers.fv.layout_check import predicted_layout, recheck_layout
from gpusolver.solvers.fv.solver import AUTO_STRATEGY, Solver, check_parts, plan_options
from gpusolver.solvers.mesh_system import MeshSystem
from meshorder import Mesh
from meshorder.pipeline import PlanOptions
from meshorder.plan import Plan, PlanPart


class FVSystem(MeshSystem):
    """Cell-centred finite volume (``[solver] method = "fv"``)."""

    method = "fv"
    schema = SCHEMA

    @classmethod
    def plan_options(cls, case: Case) -> PlanOptions:
        """Face colours, colour sweeps and coarse levels as the case's run asks."""
        return plan_options(stepping_of(case), case.run["strategy"])

    @classmethod
    def on_whole_mesh(cls, case: Case, mesh: Mesh, plan: Plan) -> Solver:
        """:class:`Solver` with the case's scheme, stepping and run settings; with
        ``strategy = "auto"`` on the GPU and a plan whose layout was predicted, the layout
        re-checked there (:mod:`gpusolver.solvers.fv.layout_check`)."""
        run = case.run

        def make(layout: Plan) -> Solver:
            return Solver(mesh, case.gas_for(mesh.dim), case.boundaries,
                          scheme=scheme_of(case), stepping=stepping_of(case), plan=layout,
                          strategy=run["strategy"], backend=run["backend"],
                          precision=run["precision"], reference_area=case.reference_area,
                          kernels=run["kernels"], turbulence=case.physics["turbulence"])

        solver = make(plan)
        if (run["strategy"] == AUTO_STRATEGY and predicted_layout(plan)
                and solver.backend.name == "cupy" and solver.strategy_times is not None):
            solver = recheck_layout(mesh, plan, solver, make)
        return solver

    def case_notes(self) -> list[str]:
        """The keys the case sets that its scheme and integrator do not read, and each flat
        symmetry boundary that the free stream crosses."""
        solver = self.solver
        crossings = [line for layout in solver.layouts
                     for line in symmetry_crossings(self.case, layout.geometry, solver.gas,
                                                    solver.backend.to_host)]
        return unused_keys(self.case) + list(dict.fromkeys(crossings))

    @classmethod
    def check_ranks(cls, case: Case) -> None:
        """What several ranks run (:func:`~gpusolver.solvers.fv.solver.check_parts`)."""
        check_parts(stepping_of(case), case.boundaries)

    @classmethod
    def on_part(cls, case: Case, part: PlanPart, backend: str, transport) -> Solver:
        """:class:`Solver` of this rank's part."""
        run = case.run
        return Solver([part], case.gas_for(part.mesh.mesh.dim), case.boundaries,
                      scheme=scheme_of(case), stepping=stepping_of(case), backend=backend,
                      precision=run["precision"], reference_area=case.reference_area,
                      transport=transport, kernels=run["kernels"], overlap=run["overlap"],
                      turbulence=case.physics["turbulence"])
