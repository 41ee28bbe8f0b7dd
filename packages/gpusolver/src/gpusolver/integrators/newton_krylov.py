"""Pseudo-transient Newton-Krylov steps, preconditioned by the LU-SGS sweeps.

One step solves ``(V / dt - dR/dU) dU = R(U)`` (``R`` the full second-order residual)
by flexible GMRES (Saad 1993) with right preconditioning. The Jacobian-vector product
is a finite difference of the residual,

    (dR/dU) v ~ (R(U + eps v) - R(U)) / eps,   eps = sqrt(machine eps) (1 + |U|) / |v|,

taken with the limiter frozen at its values for ``U`` (the limiter's ``min`` is not
differentiable). The preconditioner inverts the first-order operator: exactly by a
sparse LU factorisation of its assembled matrix (:class:`gpusolver.solvers.fv.jacobian.SparseLU`,
the default: two-dimensional and moderate meshes) or approximately by one forward and
one backward LU-SGS sweep (:class:`gpusolver.solvers.fv.lusgs.LUSGSOperator`: matrix-free, for
any size, but a weak preconditioner at large CFL numbers). As the CFL
number grows the steps become Newton steps of the steady problem, which is what
brings transonic cases down many orders where LU-SGS alone stalls.

A factorisation may serve several steps (``refresh_every``): in between, the Krylov
solves are preconditioned by the operator of an earlier state, which FGMRES corrects
with a few more vectors. It is made anew once it has served its steps, and whenever the
mean time step has changed by more than :data:`REFRESH_RATIO` since (the CFL ramp's
first steps, a back-off).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Krylov vectors per step (one residual and one LU-SGS sweep pair each).
DEFAULT_KRYLOV_VECTORS = 12

#: The linear solve stops when its residual has fallen by this factor.
DEFAULT_LINEAR_TOLERANCE = 0.05

#: Where the residual of the steps rises or stalls at the largest CFL number
#: (``Solver._back_off``) the linear solves tighten once to this tolerance and at least
#: :data:`STALLED_KRYLOV_VECTORS` vectors before the CFL number is cut: inexact solves can
#: make the pseudo-time iteration grow at large CFL numbers (TMR's NACA 0012 at 0
#: degrees, SA-neg, cycled 7 orders down near CFL 1,000 at 0.05; at 1e-5 it fell
#: steadily at 1e4).
STALLED_LINEAR_TOLERANCE = 1e-5
STALLED_KRYLOV_VECTORS = 100

#: A kept preconditioner is made anew when the mean time step has grown or shrunk by
#: more than this factor since it was made.
REFRESH_RATIO = 2.0


def fgmres(matvec: Callable, precondition: Callable, rhs, tolerance: float,
           max_vectors: int, xp):
    """Flexible GMRES from a zero initial guess: ``x`` with ``|rhs - A x| <= tol |rhs|``.

    Parameters
    ----------
    matvec, precondition : callable
        ``A v`` and ``M^-1 v`` of arrays shaped like ``rhs``.
    rhs : array
    tolerance : float
        Relative reduction of the linear residual at which to stop.
    max_vectors : int
        Most Krylov vectors (no restart: the step takes what it has).
    xp : module
        ``numpy`` or ``cupy``.

    Returns
    -------
    array
        The approximate solution, shaped like ``rhs``.

    Examples
    --------
    >>> a = np.array([[4.0, 1.0], [2.0, 3.0]])
    >>> x = fgmres(lambda v: a @ v, lambda v: v, np.array([1.0, 2.0]), 1e-12, 2, np)
    >>> bool(np.allclose(a @ x, [1.0, 2.0]))
    True
    """
    shape, size = rhs.shape, rhs.size
    beta = float(xp.linalg.norm(rhs))
    if beta == 0.0:
        return xp.zeros_like(rhs)
    basis = xp.empty((max_vectors + 1, size), dtype=rhs.dtype)
    directions = xp.empty((max_vectors, size), dtype=rhs.dtype)
    basis[0] = rhs.reshape(-1) / beta
    hessenberg = np.zeros((max_vectors + 1, max_vectors))
    target = np.zeros(max_vectors + 1)
    target[0] = beta
    for j in range(max_vectors):
        directions[j] = precondition(basis[j].reshape(shape)).reshape(-1)
        w = matvec(directions[j].reshape(shape)).reshape(-1)
        column = xp.zeros(j + 2, dtype=rhs.dtype)
        for _ in range(2):  # classical Gram-Schmidt, twice
            projection = basis[:j + 1] @ w
            w = w - projection @ basis[:j + 1]
            column[:j + 1] += projection
        column[j + 1] = xp.linalg.norm(w)
        # the column's one transfer to the host (the Krylov vector's only wait)
        hessenberg[:j + 2, j] = column.get() if hasattr(column, "get") else column
        h = hessenberg[:j + 2, :j + 1]
        y = np.linalg.lstsq(h, target[:j + 2], rcond=None)[0]
        residual = np.linalg.norm(target[:j + 2] - h @ y)
        if residual <= tolerance * beta or hessenberg[j + 1, j] <= 1e-14 * beta:
            break
        basis[j + 1] = w / column[j + 1]
    weights = xp.asarray(y, dtype=rhs.dtype)
    return (weights @ directions[:len(y)]).reshape(shape)


class NewtonKrylov:
    """Implicit pseudo-time steps by Jacobian-free Newton-Krylov.

    Parameters
    ----------
    discretisation : gpusolver.solvers.fv.Discretisation
        The system: its ``residual(u)`` (keeping ``limiter_values`` and obeying
        ``frozen_limiter``), ``geometry.volume``, ``backend`` and ``dtype``.
    preconditioner : object
        Its ``operator(u, dt, speeds)`` is the step's approximate inverse
        (``gpusolver.solvers.fv.lusgs.LUSGS`` or ``gpusolver.solvers.fv.jacobian.SparseLU``).
    max_vectors : int
        Krylov vectors per step.
    tolerance : float
        Relative linear residual at which a step's solve stops.
    refresh_every : int
        Steps one preconditioner serves at most (see the module docstring); 1 makes it
        anew at every step.
    """

    def __init__(self, discretisation, preconditioner,
                 max_vectors: int = DEFAULT_KRYLOV_VECTORS,
                 tolerance: float = DEFAULT_LINEAR_TOLERANCE, refresh_every: int = 1):
        if refresh_every < 1:
            raise ValueError(f"a preconditioner serves at least one step, not {refresh_every}")
        self.discretisation, self.preconditioner = discretisation, preconditioner
        self.max_vectors, self.tolerance = max_vectors, tolerance
        self.refresh_every = refresh_every
        #: Preconditioners made since the start (each a factorisation, for ``lu``).
        self.refreshes = 0
        self._kept: tuple[Callable, float] | None = None  # operator, its mean time step
        self._served = 0

    def _operator(self, u, dt, speeds) -> Callable:
        """The step's preconditioner: the kept one, or a new one when it is due."""
        xp = self.discretisation.backend.xp
        scale = float(xp.mean(xp.asarray(dt)))
        if (self._kept is None or self._served >= self.refresh_every
                or not 1.0 / REFRESH_RATIO <= scale / self._kept[1] <= REFRESH_RATIO):
            self._kept = (self.preconditioner.operator(u, dt, speeds), scale)
            self._served = 0
            self.refreshes += 1
        self._served += 1
        return self._kept[0]

    def tighten(self) -> bool:
        """Solve more exactly from now on: :data:`STALLED_LINEAR_TOLERANCE` with at least
        :data:`STALLED_KRYLOV_VECTORS` vectors; False where the solves are that tight
        already."""
        if self.tolerance <= STALLED_LINEAR_TOLERANCE:
            return False
        self.tolerance = STALLED_LINEAR_TOLERANCE
        self.max_vectors = max(self.max_vectors, STALLED_KRYLOV_VECTORS)
        return True

    def __call__(self, u, residual, dt, speeds=None):
        """The change ``dU`` of one step from ``u``, whose residual is ``residual``.

        ``residual`` must be the last residual the discretisation computed (its
        limiter values are frozen for the Jacobian-vector products).
        """
        d = self.discretisation
        xp = d.backend.xp
        shift = d.geometry.volume / dt
        epsilon = float(np.sqrt(np.finfo(d.dtype).eps)) * (1.0 + float(xp.linalg.norm(u)))
        kept = d.frozen_limiter, d.boundary_flux, d.mass_flux
        d.frozen_limiter = d.limiter_values

        def matvec(v):  # the step on the backend: no wait for the norm
            step = epsilon / xp.maximum(xp.linalg.norm(v), 1e-300)
            return shift * v - (d.residual(u + step * v) - residual) / step

        try:
            return fgmres(matvec, self._operator(u, dt, speeds), residual, self.tolerance,
                          self.max_vectors, xp)
        finally:
            d.frozen_limiter, d.boundary_flux, d.mass_flux = kept
