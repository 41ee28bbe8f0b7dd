"""Block cyclic reduction over levels of cells: exact solves, against SuperLU and CuPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.backends import get_backend
from gpusolver.backends.host import compiler
from gpusolver.solvers.fv import Gas, Scheme
from gpusolver.solvers.fv.jacobian import (
    ExactSolver,
    block_matrix,
    implicit_blocks,
    operator_pattern,
)
from gpusolver.solvers.fv.level_lu import CellLevels, LevelLU, narrowest_levels
from meshorder import Topology
from meshorder.testing import grid_mesh
from meshorder.topology import CSR

from .fv_cases import perturbed_solver

WALLED = {"left": "farfield", "right": "pressure-outlet", "bottom": "slip-wall",
          "top": "farfield"}


def _grid_pattern(nx: int, ny: int, cell: str):
    topology = Topology(grid_mesh(nx, ny, cell))
    left, right = topology.face_cells[topology.interior].T
    return left, right, topology.n_cells


def _random_blocks(rng, n_vars: int, rows: np.ndarray, cols: np.ndarray):
    """Blocks with a dominant diagonal block, as a pseudo-time step's."""
    blocks = rng.normal(size=(n_vars, n_vars, len(rows)))
    blocks[:, :, rows == cols] += 4 * 4 * np.eye(n_vars)[:, :, None]
    return blocks


@settings(max_examples=25, deadline=None)
@given(nx=st.integers(2, 12), ny=st.integers(2, 9), n_vars=st.integers(1, 4),
       cell=st.sampled_from(["quad", "triangle"]), seed=st.integers(0, 2**16))
def test_cyclic_reduction_solves_a_face_coupled_matrix(nx, ny, n_vars, cell, seed):
    """Any grid, any seeds (a side, one cell), 1 to 4 unknowns a cell: the solve's
    residual is round-off. Triangles couple cells within a level too."""
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    left, right, n = _grid_pattern(nx, ny, cell)
    graph = CSR.from_pairs(left, right, n)
    levels = CellLevels.from_seeds(graph, np.array([int(rng.integers(n))]))
    rows, cols = operator_pattern(left, right, n)
    blocks = _random_blocks(rng, n_vars, rows, cols)
    solve = LevelLU(levels, rows, cols, n_vars, get_backend("numpy")).factorise(blocks)
    rhs = rng.normal(size=(n_vars, n))
    x = solve(rhs)
    matrix = block_matrix(blocks, rows, cols, get_backend("numpy").sparse)
    residual = matrix @ x.T.reshape(-1) - rhs.T.reshape(-1)
    assert np.abs(residual).max() < 1e-12 * np.abs(rhs).max()


@pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
@settings(max_examples=15, deadline=None)
@given(nx=st.integers(1, 12), ny=st.integers(1, 9), n_vars=st.integers(1, 4),
       cell=st.sampled_from(["quad", "triangle"]), seed=st.integers(0, 2**16))
def test_the_kernels_solve_as_the_array_code(nx, ny, n_vars, cell, seed):
    """The solve's kernels (compiled for the CPU, one lane a row) give the array code's
    solution to round-off, for any count of levels (odd, even, one) and twice in a row
    from their kept buffers."""
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    left, right, n = _grid_pattern(nx, ny, cell)
    levels = CellLevels.from_seeds(CSR.from_pairs(left, right, n),
                                   np.array([int(rng.integers(n))]))
    rows, cols = operator_pattern(left, right, n)
    blocks = _random_blocks(rng, n_vars, rows, cols)
    numpy = get_backend("numpy")
    by_arrays = LevelLU(levels, rows, cols, n_vars, numpy).factorise(blocks)
    by_kernels = LevelLU(levels, rows, cols, n_vars, numpy, kernels=True).factorise(blocks)
    for _ in range(2):
        rhs = rng.normal(size=(n_vars, n))
        expected = by_arrays(rhs)
        np.testing.assert_allclose(by_kernels(rhs), expected, rtol=0,
                                   atol=1e-12 * np.abs(expected).max())


@pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
def test_a_slot_keeps_its_last_factorisation_and_another_slot_its_own():
    """The kernels' factorisations of one slot share its buffers (the last one counts);
    those of two slots (SST's two scalars) are both kept."""
    rng = np.random.default_rng(5)
    left, right, n = _grid_pattern(7, 4, "triangle")
    levels = CellLevels.from_seeds(CSR.from_pairs(left, right, n), np.array([0]))
    rows, cols = operator_pattern(left, right, n)
    numpy = get_backend("numpy")
    arrays, kernels = (LevelLU(levels, rows, cols, 2, numpy, kernels=k) for k in (False, True))
    first, second = (_random_blocks(rng, 2, rows, cols) for _ in range(2))
    rhs = rng.normal(size=(2, n))
    expected = [arrays.factorise(blocks)(rhs) for blocks in (first, second)]
    stale = kernels.factorise(first, slot=0)
    kept = kernels.factorise(first, slot=1)
    kernels.factorise(second, slot=0)
    for solve, want in ((stale, expected[1]), (kept, expected[0])):
        np.testing.assert_allclose(solve(rhs), want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
def test_the_kernels_refuse_blocks_that_are_not_contiguous():
    from gpusolver.solvers.fv.level_lu import KernelSolve

    numpy = get_backend("numpy")
    solve = KernelSolve(numpy, np.float64, np.arange(4), 2)
    blocks = np.zeros((2, 2, 4))[:, :, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        solve.solver([(np.zeros((1, 2, 2)), blocks, np.zeros((1, 2, 4)))], np.eye(2)[None])


def test_the_narrowest_levels_are_taken():
    """A 30 x 4 strip: from its short side 30 levels 4 cells wide, from its long side 4
    levels 30 wide, from a corner 33 levels up to 4 wide; the short side's cost least."""
    left, right, n = _grid_pattern(30, 4, "quad")
    graph = CSR.from_pairs(left, right, n)
    x, y = grid_mesh(30, 4, "quad").centroids()[:, :2].T
    short_side, long_side = np.flatnonzero(x == x.min()), np.flatnonzero(y == y.min())
    levels = narrowest_levels(graph, [long_side, np.array([0]), short_side])
    assert (levels.n_levels, levels.width) == (30, 4)
    np.testing.assert_array_equal(levels.level, np.unique(x, return_inverse=True)[1])


def test_entries_two_levels_apart_are_refused():
    left, right, n = _grid_pattern(4, 3, "quad")
    levels = CellLevels.from_seeds(CSR.from_pairs(left, right, n), np.array([0]))
    far = int(np.argmax(levels.level))
    with pytest.raises(ValueError, match="not block tridiagonal"):
        LevelLU(levels, np.array([0, far]), np.array([far, 0]), 1, get_backend("numpy"))


def test_unreachable_cells_are_named():
    graph = CSR.from_pairs(np.array([0]), np.array([1]), 3)
    with pytest.raises(ValueError, match="cell 2 is not connected"):
        CellLevels.from_seeds(graph, np.array([0]))


def test_the_newton_operator_is_solved_as_superlu_solves_it():
    """The first-order implicit operator of a transonic triangle mesh at a large time
    step: the levels' solve and SuperLU's agree to round-off."""
    solver = perturbed_solver(grid_mesh(9, 7, "triangle"), gas=Gas(dim=2, mach=0.8,
                              aoa_deg=2.0), boundaries=WALLED, scheme=Scheme("roe", 1),
                              amplitude=0.1, seed=5)
    d, u = solver.discretisation, solver.u
    blocks = implicit_blocks(d, u, 1e3 * solver.time_step(u))
    exact = ExactSolver(d, u.shape[0])
    assert exact.level_lu is None  # NumPy: SuperLU
    levels = narrowest_levels(CSR.from_pairs(exact.rows[d.geometry.n_cells:][:d.n_interior],
                                             exact.cols[d.geometry.n_cells:][:d.n_interior],
                                             d.geometry.n_cells), [np.array([0])])
    by_levels = LevelLU(levels, exact.rows, exact.cols, u.shape[0], d.backend).factorise(blocks)
    rhs = np.random.default_rng(5).normal(size=u.shape)
    np.testing.assert_allclose(by_levels(rhs), exact.factorise(blocks)(rhs), rtol=0,
                               atol=1e-10 * np.abs(exact.factorise(blocks)(rhs)).max())


def test_the_exact_solvers_of_one_discretisation_share_its_cell_order(monkeypatch):
    """The mean flow's (four unknowns a cell) and a turbulence scalar's (one) exact
    solvers on one discretisation order its cells once; another discretisation anew."""
    from gpusolver.solvers.fv import jacobian

    made = []
    real = jacobian.elimination_order
    monkeypatch.setattr(jacobian, "elimination_order",
                        lambda *args: made.append(1) or real(*args))
    solvers = [perturbed_solver(grid_mesh(6, 5, "triangle"), boundaries=WALLED,
                                scheme=Scheme("roe", 1), seed=seed) for seed in (1, 2)]
    first = [ExactSolver(solvers[0].discretisation, n_vars) for n_vars in (4, 1)]
    assert len(made) == 1
    np.testing.assert_array_equal(first[0].order[::4] // 4, first[1].order)
    ExactSolver(solvers[1].discretisation, 4)
    assert len(made) == 2
