"""The finite-volume residual on CuPy against the NumPy reference, on fresh random states.

Tolerances, relative to the largest residual: fp64 1e-12 (against NumPy fp64), fp32
1e-5 (against NumPy fp32, so that both sides round alike).
"""

import numpy as np
import pytest

from meshorder.testing import box_mesh, grid_mesh

from .fv_cases import Gas, Scheme, Stepping, perturbed_solver

TOLERANCE = {"fp64": 1e-12, "fp32": 1e-5}
CASES = {
    "2d-euler-roe-lsq": (grid_mesh(14, 11, "triangle"), Gas(dim=2, mach=0.5, aoa_deg=3.0),
                         Scheme("roe", 2, "least-squares", "venkatakrishnan")),
    "3d-ns-ausmpw-gg": (box_mesh(6, 5, 4), Gas(dim=3, mach=0.4, aoa_deg=2.0, reynolds=200.0),
                        Scheme("ausmpw+", 2, "green-gauss", "venkatakrishnan")),
    "3d-euler-rusanov-1": (box_mesh(6, 5, 4), Gas(dim=3, mach=0.8), Scheme("rusanov", 1)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("strategy", ["atomic", "colour", "reduce"])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_cupy_residual_matches_numpy(case, strategy, precision):
    mesh, gas, scheme = CASES[case]
    seed = int(np.random.default_rng().integers(2**31))  # fresh random data
    kwargs = dict(gas=gas, scheme=scheme, strategy=strategy, precision=precision, seed=seed)
    reference = perturbed_solver(mesh, backend="numpy", **kwargs)
    device = perturbed_solver(mesh, backend="cupy", **kwargs)
    expected = reference.rate(reference.u)
    got = device.backend.to_host(device.rate(device.u))
    assert got.dtype == expected.dtype
    difference = np.abs(got - expected)
    error = difference.max() / np.abs(expected).max()
    worst = np.unravel_index(np.argmax(difference), difference.shape)
    assert error < TOLERANCE[precision], f"relative error {error:.2e} at {worst}"


@pytest.mark.gpu
def test_cupy_steps_match_numpy_steps():
    mesh, gas, scheme = CASES["2d-euler-roe-lsq"]
    solvers = [perturbed_solver(mesh, backend=b, gas=gas, scheme=scheme)
               for b in ("numpy", "cupy")]
    for _ in range(5):
        norms = [s.step() for s in solvers]
    np.testing.assert_allclose(norms[1], norms[0], rtol=1e-10)
    np.testing.assert_allclose(solvers[1].conserved(), solvers[0].conserved(), rtol=1e-11)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["2d-euler-roe-lsq", "3d-euler-rusanov-1"])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_cupy_lusgs_update_matches_numpy(case, precision):
    mesh, gas, _ = CASES[case]
    seed = int(np.random.default_rng().integers(2**31))
    kwargs = dict(gas=gas, scheme=Scheme("roe", 1), precision=precision, seed=seed,
                  stepping=Stepping("lusgs", cfl=50.0))
    reference = perturbed_solver(mesh, backend="numpy", **kwargs)
    device = perturbed_solver(mesh, backend="cupy", **kwargs)
    updates = []
    for solver in (reference, device):
        u = solver.u
        residual = solver.discretisation.residual(u)
        updates.append(solver.backend.to_host(solver.lusgs(u, residual, solver.time_step(u))))
    error = np.abs(updates[1] - updates[0]).max() / np.abs(updates[0]).max()
    assert error < TOLERANCE[precision], f"relative error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["add", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cupy_scatter_matches_numpy(op, dtype):
    # min and max must be exact (CuPy's own float64 minimum.at rounds to ~6e-8); the
    # values are a slice along the last axis, as the accumulators pass them
    from gpusolver.backends import get_backend

    rng = np.random.default_rng()  # fresh random data
    index = rng.integers(0, 50, 3000)
    values = rng.standard_normal((3, 2, 4000)).astype(dtype)
    start = {"add": 0.0, "min": np.inf, "max": -np.inf}[op]
    results = []
    for name in ("numpy", "cupy"):
        backend = get_backend(name)
        out = backend.xp.full((3, 2, 50), start, dtype=dtype)
        backend.scatter[op](out, backend.asarray(index), backend.asarray(values)[..., :3000])
        results.append(backend.to_host(out))
    if op == "add":
        tolerance = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(results[1], results[0], rtol=tolerance, atol=tolerance)
    else:
        np.testing.assert_array_equal(results[1], results[0])


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 7, 33, 97, 140, 200, 384])
@pytest.mark.parametrize("count", [1, 5, 68])
def test_cupy_inverses_are_numpys(rows, count):
    """Both paths of ``Backend.inverse`` on CuPy (one block's shared memory up to ~160
    rows, Gauss-Jordan on sub-blocks beyond) give LAPACK's inverses of diagonally
    dominant matrices, rows that need pivoting included; in shared memory a singular
    matrix (a zero row) gives non-finite entries."""
    from gpusolver.backends import get_backend
    from gpusolver.backends.cuda import shared_inverse_bytes, shared_memory_limit

    seed = rows * 1000 + count
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    blocks = rng.normal(size=(count, rows, rows)) / np.sqrt(rows) + 2 * np.eye(rows)
    if rows > 1:
        blocks[0, 0, 0] = 0.0  # the first pivot must come from another row
    cupy = get_backend("cupy")
    inverses = cupy.to_host(cupy.inverse(cupy.asarray(blocks)))
    expected = np.linalg.inv(blocks)
    np.testing.assert_allclose(inverses, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    if shared_inverse_bytes(rows, np.float64) <= shared_memory_limit():
        blocks[-1, rows // 2] = 0.0
        assert not np.isfinite(cupy.to_host(cupy.inverse(cupy.asarray(blocks)))[-1]).all()


@pytest.mark.gpu
def test_cupy_inverse_in_shared_memory_takes_fp32():
    from gpusolver.backends import get_backend
    from gpusolver.backends.cuda import shared_inverse

    print("seed 5")
    blocks = 0.1 * np.random.default_rng(5).normal(size=(9, 40, 40)) + np.eye(40)
    cupy = get_backend("cupy")
    inverses = cupy.to_host(shared_inverse(cupy.asarray(blocks.astype(np.float32))))
    np.testing.assert_allclose(inverses, np.linalg.inv(blocks), rtol=0, atol=1e-5)


@pytest.mark.gpu
def test_cupy_inverse_in_shared_memory_refuses_matrices_too_large():
    import cupy

    from gpusolver.backends.cuda import shared_inverse, shared_inverse_rows

    rows = shared_inverse_rows(np.float64) + 1
    with pytest.raises(ValueError, match="do not fit"):
        shared_inverse(cupy.zeros((1, rows, rows)))


@pytest.mark.gpu
def test_cupy_implicit_operator_matches_numpy():
    from gpusolver.solvers.fv.jacobian import implicit_operator

    mesh, gas, _ = CASES["2d-euler-roe-lsq"]
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    solvers = [perturbed_solver(mesh, backend=b, gas=gas, scheme=Scheme("roe", 1), seed=seed)
               for b in ("numpy", "cupy")]
    matrices = [implicit_operator(s.discretisation, s.u, s.time_step(s.u)) for s in solvers]
    expected = matrices[0].toarray()
    got = matrices[1].get().toarray()
    # the GPU's flux Jacobians are the fused kernel's one-sided differences: the fluxes'
    # round-off (fused multiply-adds) over steps of sqrt(eps) is ~1e-8 of the largest entry
    assert np.abs(got - expected).max() < 1e-6 * np.abs(expected).max()


@pytest.mark.gpu
@pytest.mark.parametrize("preconditioner", ["lu", "lusgs"])
def test_cupy_newton_krylov_steps_match_numpy(preconditioner):
    mesh, gas, scheme = CASES["2d-euler-roe-lsq"]
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    stepping = Stepping("newton-krylov", cfl=20.0, cfl_max=1e3, preconditioner=preconditioner)
    solvers = [perturbed_solver(mesh, backend=b, gas=gas, scheme=scheme, seed=seed,
                                stepping=stepping) for b in ("numpy", "cupy")]
    for _ in range(3):
        norms = [s.step() for s in solvers]
    np.testing.assert_allclose(norms[1], norms[0], rtol=1e-6)
    # finite-difference Jacobian products amplify round-off by 1/sqrt(eps)
    np.testing.assert_allclose(solvers[1].conserved(), solvers[0].conserved(), rtol=1e-7)


@pytest.mark.gpu
@pytest.mark.parametrize("n_vars", [1, 4])
def test_cupys_cyclic_reduction_is_numpys(n_vars):
    """The same factorisation and solve on the GPU, fp64, a 40 x 30 grid of triangles
    and one unknown a cell (a turbulence scalar's: the factorisation in the kernels) or
    four (the mean flow's: CuPy's products), seed 11; twice on one slot, which keeps the
    second."""
    pytest.importorskip("cupy")
    from gpusolver.backends import get_backend
    from gpusolver.solvers.fv.jacobian import operator_pattern
    from gpusolver.solvers.fv.level_lu import LevelLU, narrowest_levels
    from meshorder import Topology
    from meshorder.topology import CSR

    print("seed 11")
    rng = np.random.default_rng(11)
    topology = Topology(grid_mesh(40, 30, "triangle"))
    left, right = topology.face_cells[topology.interior].T
    n = topology.n_cells
    levels = narrowest_levels(CSR.from_pairs(left, right, n), [np.array([0])])
    rows, cols = operator_pattern(left, right, n)
    blocks = rng.normal(size=(n_vars, n_vars, len(rows)))
    rhs = rng.normal(size=(n_vars, n))
    blocks[:, :, :n] += 16 * np.eye(n_vars)[:, :, None]  # the cells' own blocks dominate
    solutions = []
    for name in ("numpy", "cupy"):
        backend = get_backend(name)
        lu = LevelLU(levels, rows, cols, n_vars, backend)
        lu.factorise(backend.asarray(2.0 * blocks), slot=0)
        solve = lu.factorise(backend.asarray(blocks), slot=0)
        solutions.append(backend.to_host(solve(backend.asarray(rhs))))
    np.testing.assert_allclose(solutions[1], solutions[0], rtol=1e-12,
                               atol=1e-12 * np.abs(solutions[0]).max())
