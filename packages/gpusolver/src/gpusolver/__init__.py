"""gpusolver: CFD solvers on plan-ordered Structure-of-Arrays data, on the GPU or the CPU.

This package consumes meshes and plans from :mod:`meshorder`. Its solvers (finite
volume, RKDG, vortex) arrive in later releases; what exists now is the package
itself and the check that a plan belongs to the mesh it is used with.
"""

from meshorder import Mesh
from meshorder.plan import Plan

__version__ = "0.1.0"


class GpusolverError(Exception):
    """Root of every error gpusolver raises on purpose."""


def load_plan_for(mesh: Mesh, path: str) -> Plan:
    """Load the plan at ``path`` and check that it was made for ``mesh``.

    Raises
    ------
    meshorder.PlanError
        If the file is not a valid plan or belongs to another mesh.
    """
    plan = Plan.load(path)
    plan.check_mesh(mesh.digest(), mesh.source)
    return plan


__all__ = ["GpusolverError", "__version__", "load_plan_for"]
