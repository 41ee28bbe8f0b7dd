"""gpusolver: CFD solvers on plan-ordered Structure-of-Arrays data, on the GPU or the CPU.

This package consumes meshes and plans from :mod:`meshorder`. Each solution method is a
:class:`~gpusolver.solvers.base.System` (finite volume, DG, the vortex method), registered
by name in :mod:`gpusolver.systems`; ``gpusolver run case.toml`` drives the case's one
through the run loop of :mod:`gpusolver.run`. The layers: ``docs/architecture.md``.
"""

from gpusolver.errors import ConfigError, GpusolverError, SolverDivergedError
from meshorder import Mesh, Topology
from meshorder.plan import Plan

__version__ = "0.1.0"


def load_plan_for(mesh: Mesh, path: str) -> Plan:
    """Load the plan at ``path`` and check that it was made for ``mesh``.

    Raises
    ------
    meshorder.PlanError
        If the file is not a valid plan or belongs to another mesh.
    """
    return plan_for(mesh, Plan.load(path))


def plan_for(mesh: Mesh, plan: Plan) -> Plan:
    """``plan`` (loaded) checked against ``mesh`` and completed from it where its format
    lacks the faces' nodes.

    Raises
    ------
    meshorder.PlanError
        If the plan belongs to another mesh.
    """
    plan.check_mesh(mesh.digest(), mesh.source)
    if not plan.has_face_nodes():  # format 2 or older: the faces' nodes from the mesh
        topology = Topology(mesh)
        plan = plan.replace(face_nodes=topology.face_nodes[plan.face_order],
                            face_facet=topology.face_facet[plan.face_order])
    return plan


__all__ = ["ConfigError", "GpusolverError", "SolverDivergedError", "__version__", "load_plan_for",
           "plan_for"]
