"""First-order flux Jacobians, the assembled implicit operator and its LU factorisation.

The implicit operator of a pseudo-time step is ``M = V / dt - dR/dU``. Its
first-order part is assembled face by face from the Jacobians of the numerical
flux times area with respect to the two cells' conserved states, ``J_L = dF/dU_L``
and ``J_R = dF/dU_R``, taken by one-sided finite differences of the scheme's own
flux function (Roe, Rusanov, AUSMPW+) and boundary conditions, so the operator
matches the discretisation, boundary ghosts included (no lagged boundaries):

    M_ii = V_i / dt_i + sum_{f: i left} J_L - sum_{f: i right} J_R
    M_ij = J_R (i left of f, j right),   M_ji = -J_L.

Viscous flux adds ``lambda_v A`` to the diagonal and ``-lambda_v A`` off it (the
thin-layer spectral radius). :class:`SparseLU` inverts ``M`` exactly: the
Newton-Krylov preconditioner that brings transonic airfoils down ten orders in a
few dozen steps, where block Gauss-Seidel sweeps, block DILU and threshold ILU of
the same matrix were tried and did not (docs/validation.md). Periodic faces are
approximate here: their ghost follows the partner face's cell, which the
finite differences attribute to the face's own cell (the preconditioner is weaker
there; the residual, and so the converged solution, is exact).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from functools import cached_property

import numpy as np

from gpusolver.backends import array_module
from gpusolver.errors import SingularMatrixError
from gpusolver.solvers.fv.discretisation import Discretisation
from gpusolver.solvers.fv.level_lu import LevelLU, level_cost, narrowest_levels
from meshorder.graph import pseudo_peripheral_node
from meshorder.orderings.metis import nested_dissection
from meshorder.topology import CSR

#: Partial pivoting only where a diagonal entry is below this fraction of its column. At
#: large CFL numbers the diagonal blocks lose their dominance: on TMR's 137x97 flat plate
#: (SA-neg, CFL 1e6) a threshold of 0.1 pivoted often enough to quadruple the fill-in (32.7M
#: entries in L + U against 8.9M) and took ten times as long to factorise (3.2 s against
#: 0.46 s on the H200's host, 2026-11-28); the solves' error stays near 1e-13.
PIVOT_THRESHOLD = 1e-4

#: Most entries of the dense blocks of a factorisation on the GPU (4 GiB in fp64): above,
#: the host's SuperLU (:class:`ExactSolver`).
MAX_LEVEL_ENTRIES = 2**29


def _perturbation(u_side, k: int, dtype):
    """Finite-difference steps of variable ``k`` on one side of each face."""
    eps = np.sqrt(np.finfo(dtype).eps)
    return eps * (1.0 + abs(u_side[k]))


def face_jacobians(d: Discretisation, u):
    """``J_L, J_R``: ``(n_vars, n_vars, n_faces)`` Jacobians of the first-order flux x area.

    ``J[:, k, f]`` is the change of face ``f``'s flux per unit change of conserved
    variable ``k`` of its left (right) cell. On boundary faces the ghost state follows
    the left cell through its boundary condition, and ``J_R`` is zero. Where the
    discretisation runs the fused residual (and not JST's cell pass), in its kernel.
    """
    if d.fused_riemann:
        return d.fused.face_jacobians(u)
    xp = d.backend.xp
    g, gas, ni = d.geometry, d.gas, d.n_interior
    u_left = u[:, g.left]
    u_right = u[:, g.right[:ni]]

    def flux(ul, ur_interior):
        wl = gas.to_primitive(ul)
        wr = xp.concatenate([gas.to_primitive(ur_interior), d.ghost_states(wl)], axis=1)
        return d.flux(gas, wl, wr, g.normal) * g.area

    base = flux(u_left, u_right)
    n_vars = u.shape[0]
    jac_left = xp.empty((n_vars, n_vars, g.n_faces), dtype=u.dtype)
    jac_right = xp.zeros_like(jac_left)
    for k in range(n_vars):
        h = _perturbation(u_left, k, d.dtype)
        shifted = u_left.copy()
        shifted[k] += h
        jac_left[:, k] = (flux(shifted, u_right) - base) / h
        h = _perturbation(u_right, k, d.dtype)
        shifted = u_right.copy()
        shifted[k] += h
        jac_right[:, k, :ni] = (flux(u_left, shifted) - base)[:, :ni] / h
    return jac_left, jac_right


def operator_pattern(left: np.ndarray, right: np.ndarray, n_cells: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The rows' and columns' cells of the blocks of a face-coupled matrix: each cell's
    diagonal block, then per interior face (``left``, ``right``) the left cell's row in
    the right cell's column, then the reverse."""
    cells = np.arange(n_cells)
    return np.concatenate([cells, left, right]), np.concatenate([cells, right, left])


def implicit_blocks(d: Discretisation, u, dt, speeds=None):
    """The blocks ``(n_vars, n_vars, n_blocks)`` of ``M = V / dt - dR/dU`` of the
    first-order scheme, on the backend, in the order of :func:`operator_pattern`."""
    xp = d.backend.xp
    g = d.geometry
    n_vars, n_cells, ni = u.shape[0], g.n_cells, d.n_interior
    jac_left, jac_right = face_jacobians(d, u)
    if d.viscous:
        speeds = d.face_wave_speeds(u) if speeds is None else speeds
        viscous = (speeds.viscous * g.area)[None, None]
        eye = xp.eye(n_vars, dtype=u.dtype)[:, :, None]
        jac_left = jac_left + eye * viscous
        jac_right = jac_right - eye * viscous
        jac_right[:, :, ni:] = 0.0
    diagonal = xp.zeros((n_vars, n_vars, n_cells), dtype=u.dtype)
    diagonal[xp.arange(n_vars), xp.arange(n_vars)] = xp.broadcast_to(g.volume / dt, (n_cells,))
    d.accumulator.combine(jac_left, -jac_right, out=diagonal)
    # M_ij = J_R and M_ji = -J_L per face
    return xp.concatenate([diagonal, jac_right[:, :, :ni], -jac_left[:, :, :ni]], axis=2)


def block_matrix(blocks, rows, cols, sparse):
    """The ``sparse`` (SciPy's or CuPy's) CSR matrix of ``blocks`` ``(n_vars, n_vars,
    n_blocks)`` at cells ``rows``, ``cols``, its unknowns numbered cell-major
    (``cell * n_vars + variable``: each cell's block contiguous)."""
    xp = array_module(blocks)
    n_vars = blocks.shape[0]
    k = xp.arange(n_vars)
    row_index = xp.broadcast_to(rows[None, None] * n_vars + k[:, None, None], blocks.shape)
    col_index = xp.broadcast_to(cols[None, None] * n_vars + k[None, :, None], blocks.shape)
    size = n_vars * (int(rows.max()) + 1)
    return sparse.coo_matrix((blocks.ravel(), (row_index.ravel(), col_index.ravel())),
                             shape=(size, size)).tocsr()


def implicit_operator(d: Discretisation, u, dt, speeds=None):
    """``M = V / dt - dR/dU`` of the first-order scheme as a sparse CSR matrix on the
    discretisation's backend (SciPy or CuPy), unknowns numbered cell-major."""
    g, ni, to_host = d.geometry, d.n_interior, d.backend.to_host
    rows, cols = (d.backend.asarray(a) for a in operator_pattern(
        to_host(g.left[:ni]), to_host(g.right[:ni]), g.n_cells))
    return block_matrix(implicit_blocks(d, u, dt, speeds), rows, cols, d.backend.sparse)


class _CellOrders:
    """What every exact solver of one discretisation shares (the mean flow's and the
    turbulence model's), each made on its first use: the pattern of its face-coupled
    matrices, the cells' narrowest breadth-first levels (seeded from each boundary and
    from a far cell) and their nested-dissection order."""

    def __init__(self, d: Discretisation):
        self.discretisation = d
        ni = d.n_interior
        self.left = d.backend.to_host(d.geometry.left)[:ni]
        self.right = d.backend.to_host(d.geometry.right)[:ni]
        self.pattern = operator_pattern(self.left, self.right, d.geometry.n_cells)

    @cached_property
    def levels(self):
        d = self.discretisation
        graph = CSR.from_pairs(self.left, self.right, d.geometry.n_cells)
        everyone = d.backend.to_host(d.geometry.left)
        seeds = [everyone[b.faces] for b in d.boundaries if b.faces.stop > b.faces.start]
        return narrowest_levels(graph, [*seeds, np.array([pseudo_peripheral_node(graph, 0)])])

    @cached_property
    def elimination(self) -> np.ndarray:
        return elimination_order(self.left, self.right, self.discretisation.geometry.n_cells)


#: Per discretisation, its :class:`_CellOrders` (kept while the discretisation lives).
_ORDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cell_orders(d: Discretisation) -> _CellOrders:
    """``d``'s :class:`_CellOrders`, made on the first call."""
    if d not in _ORDERS:
        _ORDERS[d] = _CellOrders(d)
    return _ORDERS[d]


class ExactSolver:
    """Exact solves of the matrices of one face-coupled pattern (:func:`operator_pattern`).

    On CuPy, block cyclic reduction over the cells' breadth-first levels on the GPU
    (:class:`~gpusolver.solvers.fv.level_lu.LevelLU`), where its dense blocks hold at most
    :data:`MAX_LEVEL_ENTRIES` entries (two-dimensional meshes), seeded from the boundary
    whose levels are narrowest; otherwise SuperLU on the host, the cells eliminated in
    METIS's nested-dissection order (on SU2's 10,216-cell NACA 0012 mesh: a third of the
    fill-in of SuperLU's own COLAMD and a fifth of its factorisation time), pivoting only
    where a diagonal entry is tiny (:data:`PIVOT_THRESHOLD`).

    Parameters
    ----------
    discretisation : Discretisation
    n_vars : int
        Unknowns per cell.
    max_level_entries : int
        Most entries of the GPU's dense blocks (0: SuperLU on the host always).
    """

    def __init__(self, discretisation: Discretisation, n_vars: int,
                 max_level_entries: int = MAX_LEVEL_ENTRIES):
        self.discretisation = d = discretisation
        cells = _cell_orders(d)
        self.rows, self.cols = cells.pattern
        self.n_vars = n_vars
        #: The GPU's factorisation of the pattern (None: SuperLU on the host).
        self.level_lu = None
        if d.backend.name == "cupy" and level_cost(cells.levels, n_vars) <= max_level_entries:
            self.level_lu = LevelLU(cells.levels, self.rows, self.cols, n_vars, d.backend)
        if self.level_lu is None:
            #: Unknowns (cell-major) in elimination order, new -> old.
            self.order = (cells.elimination[:, None] * n_vars + np.arange(n_vars)).ravel()

    def factorise(self, blocks, slot: Hashable | None = None) -> Callable:
        """The solve of the matrix of ``blocks`` (``(n_vars, n_vars, n_blocks)`` on the
        backend): a map of a ``(n_vars, n_cells)`` array on the backend to the solution,
        of the same shape and dtype. On the GPU a factorisation of the same ``slot``
        reuses the buffers of the one before
        (:meth:`~gpusolver.solvers.fv.level_lu.LevelLU.factorise`).

        Raises
        ------
        SingularMatrixError
            If SuperLU finds the matrix exactly singular.
        """
        if self.level_lu is not None:
            return self.level_lu.factorise(blocks, slot)
        import scipy.sparse
        backend = self.discretisation.backend
        matrix = block_matrix(backend.to_host(blocks).astype(np.float64), self.rows,
                              self.cols, scipy.sparse)
        solve_vector = ordered_lu(matrix, self.order)

        def solve(rhs):
            vector = backend.to_host(rhs).astype(np.float64).T.reshape(-1)
            solution = solve_vector(vector).reshape(rhs.shape[::-1]).T
            return backend.asarray(solution, dtype=rhs.dtype)
        return solve


class SparseLU:
    """Exact inverse of the first-order implicit operator (:class:`ExactSolver`): on the
    GPU, or by SuperLU on the host, where CuPy's own solves of SuperLU's factors
    (``cupyx.scipy.sparse.linalg.splu``) were 19 times slower than the host's on the flat
    plate (H200, 2026-11-28)."""

    def __init__(self, discretisation: Discretisation):
        self.discretisation = discretisation
        self.exact = ExactSolver(discretisation, discretisation.gas.n_vars)

    def operator(self, u, dt, speeds=None):
        """The factorisation's solve at the state ``u``, as a map of ``(n_vars, n_cells)``."""
        return self.exact.factorise(implicit_blocks(self.discretisation, u, dt, speeds))


def suspect_row(matrix) -> int:
    """The first row of the SciPy sparse ``matrix`` with a non-finite entry, else the first
    with no non-zero entry; -1 if none.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> suspect_row(sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 0.0]])))
    1
    >>> suspect_row(sp.csr_matrix(np.array([[1.0, 2.0], [np.nan, 1.0]])))
    1
    """
    import scipy.sparse
    csr = scipy.sparse.csr_matrix(matrix)
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    bad = rows[~np.isfinite(csr.data)]
    if len(bad):
        return int(bad.min())
    empty = np.flatnonzero(np.bincount(rows[csr.data != 0], minlength=csr.shape[0]) == 0)
    return int(empty[0]) if len(empty) else -1


def elimination_order(left: np.ndarray, right: np.ndarray, n_cells: int) -> np.ndarray:
    """Cells in METIS's nested-dissection order of the graph of interior faces
    ``left``-``right`` (new -> old): the fill-reducing order of :func:`ordered_lu`."""
    return nested_dissection(CSR.from_pairs(left, right, n_cells))


def ordered_factors(matrix, order: np.ndarray):
    """SuperLU's factors of the SciPy sparse ``matrix`` with its unknowns eliminated in
    ``order`` (new -> old), pivoting only where a diagonal entry falls below
    :data:`PIVOT_THRESHOLD` of its column.

    Raises
    ------
    SingularMatrixError
        If SuperLU finds the matrix exactly singular (naming its first suspect row).
    """
    try:
        import scipy.sparse.linalg
        return scipy.sparse.linalg.splu(
            matrix[order][:, order].tocsc(), permc_spec="NATURAL",
            diag_pivot_thresh=PIVOT_THRESHOLD, options={"SymmetricMode": True})
    except RuntimeError as error:  # SuperLU: "Factor is exactly singular"
        raise SingularMatrixError(f"SuperLU: {error}", suspect_row(matrix)) from None


def ordered_lu(matrix, order: np.ndarray):
    """The solve of one host vector by :func:`ordered_factors` of ``matrix``."""
    factors = ordered_factors(matrix, order)

    def solve(vector: np.ndarray) -> np.ndarray:
        solution = np.empty_like(vector)
        solution[order] = factors.solve(vector[order])
        return solution
    return solve
