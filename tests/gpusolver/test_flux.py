"""Face-flux reference: free-stream preservation, conservation, and CUDA against NumPy."""

import numpy as np
import pytest

from gpusolver.bench.reference import GAMMA, euler_normal_flux, random_state, rusanov_residual
from gpusolver.layout.faces import FaceLayout
from gpusolver.layout.geometry import build_geometry, face_geometry
from gpusolver.solvers.fv import face_kernels as kernels
from meshorder import Topology
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_mesh, grid_mesh


def layout(mesh, cells="rcm", dtype=np.float64):
    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(cells=cells), topology=topology)
    return FaceLayout.from_geometry(build_geometry(mesh, plan), dtype), plan


@pytest.mark.parametrize("mesh", [grid_mesh(5, 4, "triangle"), box_mesh(3, 3, 3)],
                         ids=["2d", "3d"])
def test_closed_cells_have_zero_net_area_vector(mesh):
    topology = Topology(mesh)
    normal, area = face_geometry(mesh.points, topology.face_nodes, mesh.dim)
    total = np.zeros((3, mesh.n_cells))
    left, right = topology.face_cells.T
    for k in range(3):
        np.add.at(total[k], left, normal[k] * area)
        np.subtract.at(total[k], right[right >= 0], (normal[k] * area)[right >= 0])
    assert np.abs(total).max() < 1e-14


def test_uniform_flow_gives_zero_residual():
    faces, plan = layout(box_mesh(3, 4, 2))
    state = np.repeat(random_state(1, np.random.default_rng(1)), plan.n_cells, axis=1)
    assert np.abs(rusanov_residual(state, faces)).max() < 1e-13


def test_residual_sum_equals_minus_boundary_flux():
    faces, plan = layout(grid_mesh(6, 5, "triangle"))
    state = random_state(plan.n_cells, np.random.default_rng(2))
    boundary = faces.right < 0
    flux, _ = euler_normal_flux(state[:, faces.left[boundary]], faces.normal[:, boundary])
    expected = -(flux * faces.area[boundary]).sum(axis=1)
    assert np.allclose(rusanov_residual(state, faces).sum(axis=1), expected, atol=1e-12)


def test_reference_matches_a_face_by_face_loop():
    faces, plan = layout(box_mesh(2, 2, 2))
    state = random_state(plan.n_cells, np.random.default_rng(3))
    expected = np.zeros_like(state)
    for f in range(faces.n_faces):
        l, r = faces.left[f], faces.right[f]
        ql = state[:, l : l + 1]
        qr = state[:, r : r + 1] if r >= 0 else ql
        n = faces.normal[:, f : f + 1]
        fl, sl = euler_normal_flux(ql, n)
        fr, sr = euler_normal_flux(qr, n)
        flux = faces.area[f] * 0.5 * (fl + fr - max(sl[0], sr[0]) * (qr - ql))
        expected[:, l] -= flux[:, 0]
        if r >= 0:
            expected[:, r] += flux[:, 0]
    assert np.allclose(rusanov_residual(state, faces), expected, rtol=1e-13, atol=1e-13)


def test_minimum_bytes_model():
    faces, plan = layout(grid_mesh(2, 2), dtype=np.float32)
    assert faces.minimum_bytes(plan.n_cells) == faces.n_faces * (8 + 16) + plan.n_cells * 60


def _geometry_arrays(geometry):
    return {name: getattr(geometry, name) for name in
            ("volume", "centroid", "left", "right", "normal", "area", "face_centre",
             "boundary_nodes")}


@pytest.mark.parametrize("mesh", [grid_mesh(5, 4, "mixed"), box_mesh(3, 2, 2, "prism")],
                         ids=["2d", "3d"])
def test_a_plan_of_format_2_is_completed_from_the_mesh_and_lays_out_the_same(tmp_path, mesh):
    from gpusolver import load_plan_for
    from meshorder import PlanError

    plan = make_plan(mesh, PlanOptions(cells="rcm"))
    old = plan.replace(face_nodes=np.zeros((0, 2), np.int64), face_facet=np.zeros(0, np.int64))
    with pytest.raises(PlanError, match="holds no face nodes"):
        build_geometry(mesh, old)
    old.save(tmp_path / "old.npz")
    completed = load_plan_for(mesh, str(tmp_path / "old.npz"))
    for name, value in _geometry_arrays(build_geometry(mesh, plan)).items():
        np.testing.assert_array_equal(getattr(build_geometry(mesh, completed), name), value)
    np.testing.assert_array_equal(completed.face_facet, plan.face_facet)


@pytest.mark.gpu
@pytest.mark.parametrize("mesh", [grid_mesh(9, 7, "mixed"), box_mesh(5, 4, 3, "prism"),
                                  box_mesh(5, 4, 3)], ids=["2d", "prisms", "tetrahedra"])
def test_geometry_computed_on_the_gpu_equals_numpys_to_the_bit(mesh):
    """Elementwise arithmetic in one order on both: the kernels' tests compare the GPU
    with NumPy on the same inputs."""
    from gpusolver.backends import get_backend

    plan = make_plan(mesh, PlanOptions(cells="rcm"))
    reference = _geometry_arrays(build_geometry(mesh, plan))
    for name, value in _geometry_arrays(build_geometry(mesh, plan, get_backend("cupy"))).items():
        assert isinstance(value, np.ndarray)
        np.testing.assert_array_equal(value, reference[name], err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize(("dtype", "tolerance"), [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("cells", ["native", "rcm"])
def test_cuda_face_flux_matches_numpy(dtype, tolerance, cells):
    import cupy

    mesh = box_mesh(12, 10, 9)
    faces, plan = layout(mesh, cells, dtype)
    state = random_state(plan.n_cells, np.random.default_rng(), dtype)  # fresh random data
    reference = rusanov_residual(state.astype(np.float64), faces)
    residual = cupy.zeros(state.shape, dtype=dtype)
    kernels.face_flux(cupy.asarray(state), residual, cupy.asarray(faces.left),
                      cupy.asarray(faces.right), cupy.asarray(faces.normal),
                      cupy.asarray(faces.area), GAMMA)
    error = np.abs(cupy.asnumpy(residual) - reference).max() / np.abs(reference).max()
    assert error < tolerance


@pytest.mark.gpu
@pytest.mark.parametrize(("dtype", "tolerance"), [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("strategy", kernels.STRATEGIES)
@pytest.mark.parametrize("mesh", [box_mesh(11, 9, 8), grid_mesh(23, 17, "triangle")],
                         ids=["3d", "2d"])
def test_every_strategy_kernel_matches_numpy(dtype, tolerance, strategy, mesh):
    import cupy

    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(colour=True), topology=topology)
    faces = FaceLayout.from_geometry(build_geometry(mesh, plan), dtype)
    state = random_state(plan.n_cells, np.random.default_rng(), dtype)  # fresh random data
    reference = rusanov_residual(state.astype(np.float64), faces)
    runner = kernels.FaceFlux(faces, plan.n_cells, strategy, plan.colour_order,
                              plan.colour_offsets)
    residual = cupy.zeros(state.shape, dtype=dtype)
    runner(cupy.asarray(state), residual, GAMMA)
    error = np.abs(cupy.asnumpy(residual) - reference).max() / np.abs(reference).max()
    assert error < tolerance


@pytest.mark.gpu
def test_launcher_rejects_wrong_dtypes():
    import cupy

    state = cupy.ones((5, 4), dtype=cupy.float64)
    with pytest.raises(TypeError, match="residual has dtype float32"):
        kernels.face_flux(state, cupy.zeros((5, 4), cupy.float32), cupy.zeros(1, cupy.int32),
                          cupy.zeros(1, cupy.int32), cupy.zeros((3, 1)), cupy.zeros(1), GAMMA)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["block-colour", "block-atomic"])
@pytest.mark.parametrize("block", [32, 1024])
def test_block_kernels_at_extreme_block_sizes(block, strategy):
    import cupy

    faces, plan = layout(box_mesh(9, 8, 7), "random")
    state = random_state(plan.n_cells, np.random.default_rng())  # fresh random data
    runner = kernels.FaceFlux(faces, plan.n_cells, strategy, block=block)
    residual = cupy.zeros(state.shape)
    runner(cupy.asarray(state), residual, GAMMA)
    reference = rusanov_residual(state, faces)
    assert np.abs(cupy.asnumpy(residual) - reference).max() / np.abs(reference).max() < 1e-12


@pytest.mark.gpu
def test_benchmarks_run_end_to_end():
    from gpusolver.bench.flux import run_benchmark
    from gpusolver.bench.solver import run_solver_benchmark

    mesh = box_mesh(6, 5, 4)
    rows = run_benchmark(mesh, orderings=["native", "rcm"], precisions=["fp64"], repeats=2,
                         log=lambda *_: None)
    assert [r["ordering"] for r in rows] == ["native", "rcm"]
    assert rows[0]["max_rel_error"] < 1e-12
    rows = run_solver_benchmark(mesh, orderings=["rcm"], strategies=["atomic", "gather"],
                                precisions=["fp32"], repeats=2, residual_orderings=("rcm",),
                                log=lambda *_: None)
    assert {r["strategy"] for r in rows} == {"atomic", "gather"}
    assert all(r["kernel_ms"] > 0 for r in rows)
    assert "residual_ms" in rows[0] and "residual_ms" not in rows[1]
    assert rows[0]["sa_residual_ms"] > 0 and rows[0]["sst_vs_ns"] > 0


@pytest.mark.gpu
def test_block_kernels_refuse_blocks_they_cannot_launch():
    faces, plan = layout(box_mesh(4, 4, 4))
    with pytest.raises(ValueError, match="exceeds the .* threads this kernel can launch"):
        kernels.FaceFlux(faces, plan.n_cells, "block-colour", block=2048)  # launch bounds: 1024
