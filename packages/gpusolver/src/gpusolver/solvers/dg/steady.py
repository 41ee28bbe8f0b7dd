"""Steady states of the modal DG discretisation by Newton's method, on the host.

For the small meshes of verification cases (Couette flow, a few thousand elements): the
Jacobian of :meth:`DGDiscretisation.rate` by finite differences, its columns grouped by a
distance-2 colouring of the elements, so that one rate evaluation per colour, variable
and mode gives every column of that group; each Newton step is then a sparse LU solve
(SciPy). The state that comes out is the discretisation's own steady solution to round-off,
with none of the slowly decaying modes that explicit pseudo-time steps leave behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpusolver.errors import SolverDivergedError
from meshorder.colouring import colour_cells
from meshorder.topology import CSR

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Finite-difference step, relative to the largest magnitude of the perturbed coefficient.
RELATIVE_STEP = 1e-7
#: Newton's method stops once a step is this small relative to the state.
ROUND_OFF = 1e-13


def element_graph(solver) -> CSR:
    """The elements whose rates couple: through an interior face or a periodic pair of
    boundary faces."""
    lay = solver.layout
    ni = lay.n_interior
    left, right = [lay.left[:ni]], [lay.right[:ni]]
    for name, (partners, _) in solver.periodic.items():
        first, end = lay.markers[name]
        left.append(lay.left[first:end])
        right.append(lay.left[ni + partners])
    return CSR.from_pairs(np.concatenate(left), np.concatenate(right), lay.n_elements)


def rate_jacobian(solver, u: np.ndarray, rate: np.ndarray | None = None) -> sp.csc_matrix:
    """The Jacobian of ``solver.rate`` at modal coefficients ``u`` (n_vars, n_modes,
    n_elements), rows and columns in ``u``'s flat order; ``rate``: ``solver.rate(u)``
    where the caller has it.

    Each element's rate depends on its own coefficients and its neighbours' (BR2 is
    compact), so elements of one colour of the graph's square perturb disjoint rows.

    Examples
    --------
    Against the differences of one coefficient at a time:

    >>> from meshorder.testing import grid_mesh
    >>> from gpusolver.physics.gas import Gas
    >>> from gpusolver.solvers.dg.discretisation import DGDiscretisation
    >>> box = {m: "farfield" for m in ("left", "right", "bottom", "top")}
    >>> gas = Gas(dim=2, mach=0.3, reynolds=100.0)
    >>> solver = DGDiscretisation(grid_mesh(3, 3, "quad"), gas, box, degree=1)
    >>> u = solver.u * (1 + 0.05 * np.random.default_rng(0).uniform(-1, 1, solver.u.shape))
    >>> coloured, base = rate_jacobian(solver, u).toarray(), solver.rate(u)
    >>> steps = 1e-7 * np.eye(u.size).reshape(u.size, *u.shape)
    >>> one_by_one = np.stack([(solver.rate(u + d) - base).ravel() / 1e-7 for d in steps], 1)
    >>> bool(np.abs(coloured - one_by_one).max() < 1e-12 * np.abs(one_by_one).max())
    True
    """
    graph = element_graph(solver).to_scipy()
    import scipy.sparse as sp
    closed = (graph + sp.identity(graph.shape[0], dtype=np.int8, format="csr")).tocsr()
    reach = (closed @ closed).tocsr()
    reach.setdiag(0)
    reach.eliminate_zeros()
    colours = colour_cells(CSR(reach.indptr, reach.indices))
    n_vars, n_modes, n_elements = u.shape
    base = solver.rate(u) if rate is None else rate
    rows, columns, values = [], [], []
    owner = np.empty(n_elements, dtype=np.int64)
    block = np.arange(n_vars * n_modes)[:, None] * n_elements
    for c in range(colours.n_colours):
        members = colours.order[colours.offsets[c]:colours.offsets[c + 1]]
        owner[:] = -1
        for e in members:  # each member owns its neighbours' rows
            owner[closed.indices[closed.indptr[e]:closed.indptr[e + 1]]] = e
        touched = np.flatnonzero(owner >= 0)
        for v in range(n_vars):
            for m in range(n_modes):
                step = RELATIVE_STEP * max(1.0, float(np.abs(u[v, m]).max()))
                shifted = u.copy()
                shifted[v, m, members] += step
                change = ((solver.rate(shifted) - base) / step).reshape(-1, n_elements)
                rows.append((block + touched[None]).ravel())
                columns.append(np.broadcast_to((v * n_modes + m) * n_elements
                                               + owner[touched], block.shape[:1]
                                               + touched.shape).ravel())
                values.append(change[:, touched].ravel())
    size = u.size
    return sp.csc_matrix((np.concatenate(values), (np.concatenate(rows),
                                                   np.concatenate(columns))),
                         shape=(size, size))


def newton_steady_state(solver, max_iterations: int = 10) -> list[float]:
    """Drive ``solver.u`` (NumPy backend) to ``rate(u) = 0`` by Newton's method, until a
    step changes no coefficient by more than :data:`ROUND_OFF` of the largest; returns
    the largest ``|rate|`` before each step and at the end.

    Raises
    ------
    SolverDivergedError
        If the rate turns non-finite, or the steps have not settled after
        ``max_iterations``.
    """
    u = np.array(solver.u, dtype=float)
    history = []
    for iteration in range(max_iterations):
        rate = solver.rate(u)
        history.append(float(np.abs(rate).max()))
        if not np.isfinite(history[-1]):
            raise SolverDivergedError(f"Newton's method: the rate is {history[-1]}",
                                      iteration, -1)
        import scipy.sparse.linalg as spla
        step = spla.splu(rate_jacobian(solver, u, rate)).solve(rate.ravel()).reshape(u.shape)
        u = u - step
        if np.abs(step).max() <= ROUND_OFF * np.abs(u).max():
            solver.u = u
            history.append(float(np.abs(solver.rate(u)).max()))
            return history
    raise SolverDivergedError(f"Newton's method has not settled after {max_iterations} "
                              f"steps (rate {history[-1]:.2e})", max_iterations, -1)
