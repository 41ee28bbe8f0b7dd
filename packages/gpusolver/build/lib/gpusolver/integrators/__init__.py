"""Time integrators, registered by name: explicit Runge-Kutta and implicit steady solvers.

An integrator needs of its system only the residual and its time step; the systems
(``gpusolver.solvers``) import integrators, never the other way round.
"""

from gpusolver.integrators.explicit import INTEGRATORS

#: The implicit integrators, for steady states: LU-SGS sweeps
#: (:class:`gpusolver.solvers.fv.lusgs.LUSGS`) and Newton-Krylov preconditioned by them
#: (:class:`gpusolver.integrators.newton_krylov.NewtonKrylov`).
IMPLICIT = ("lusgs", "newton-krylov")

#: Residual evaluations per step (Newton-Krylov: one more per Krylov vector).
STAGES = {"ssprk3": 3, "rk4": 4, "lusgs": 1, "newton-krylov": 1}

__all__ = ["IMPLICIT", "INTEGRATORS", "STAGES"]
