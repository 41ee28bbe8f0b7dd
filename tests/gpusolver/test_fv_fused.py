"""The fused CUDA residual and Runge-Kutta kernels against the NumPy reference.

Every flux, gradient, limiter mode and boundary condition, in 2D and 3D, on small
generated meshes and on shipped real meshes, on fresh random states (seeds printed).
Tolerances relative to the largest value compared: fp64 1e-12, fp32 1e-5 (against
NumPy in the same precision). ``host`` runs the same CUDA source compiled as C++ on
the CPU (so CI checks the kernels' logic); ``cupy`` runs it on the GPU.
"""


import numpy as np
import pytest

from gpusolver.backends.graphs import StepGraphs
from gpusolver.integrators.explicit import TABLEAUX
from gpusolver.solvers.fv.fused import NO_BAD_CELL
from gpusolver.solvers.fv.fused_parts import FusedPartsRungeKutta
from gpusolver.solvers.fv.jacobian import face_jacobians
from gpusolver.solvers.fv.lusgs import LUSGS, line_sweeps
from meshorder import read_mesh
from meshorder.testing import box_mesh, grid_mesh

from .fv_cases import AIRFOIL, DATA, Gas, Scheme, Stepping, perturbed_solver, stretched_grid
from .kernel_backends import BACKENDS

TOLERANCE = {"fp64": 1e-12, "fp32": 1e-5}

MIXED_2D = {"left": "farfield", "right": {"type": "pressure-outlet", "pressure": 0.9},
            "bottom": "slip-wall", "top": "symmetry"}
PERIODIC_2D = {"left": {"type": "periodic", "partner": "right"},
               "right": {"type": "periodic", "partner": "left"},
               "bottom": "slip-wall", "top": {"type": "farfield", "vortex": True}}
MIXED_3D = {"xmin": "supersonic-inflow", "xmax": "supersonic-outflow", "ymin": "slip-wall",
            "ymax": "farfield", "zmin": "symmetry", "zmax": "farfield"}
WALLS_2D = {"left": "farfield", "right": {"type": "pressure-outlet", "pressure": 0.95},
            "bottom": "no-slip-adiabatic",
            "top": {"type": "no-slip-isothermal", "temperature": 1.2, "velocity": [0.3, 0.0]}}
INLET_2D = {"left": {"type": "total-pressure-inflow", "total_pressure": 1.08,
                     "total_temperature": 1.03},
            "right": {"type": "pressure-outlet", "pressure": 0.97},
            "bottom": "no-slip-adiabatic", "top": "symmetry"}
CHANNEL_2D = {"left": {"type": "periodic", "partner": "right"},
              "right": {"type": "periodic", "partner": "left"},
              "bottom": "no-slip-adiabatic", "top": "symmetry"}

CASES = {
    "2d-mixed-roe-lsq": (lambda: grid_mesh(14, 11, "triangle"), MIXED_2D,
                         Gas(dim=2, mach=0.5, aoa_deg=3.0),
                         Scheme("roe", 2, "least-squares", "venkatakrishnan")),
    "2d-periodic-ausmpw-gg": (lambda: grid_mesh(9, 8), PERIODIC_2D,
                              Gas(dim=2, mach=0.6, aoa_deg=1.0),
                              Scheme("ausmpw+", 2, "green-gauss", "venkatakrishnan")),
    "2d-mixed-rusanov-unlimited": (lambda: grid_mesh(10, 7, "triangle"), MIXED_2D,
                                   Gas(dim=2, mach=0.3),
                                   Scheme("rusanov", 2, "least-squares", "none")),
    "3d-mixed-roe-gg": (lambda: box_mesh(6, 5, 4), MIXED_3D, Gas(dim=3, mach=1.4, aoa_deg=2.0),
                        Scheme("roe", 2, "green-gauss", "venkatakrishnan")),
    "3d-mixed-ausmpw-1": (lambda: box_mesh(5, 4, 4), MIXED_3D, Gas(dim=3, mach=0.8),
                          Scheme("ausmpw+", 1)),
    "2d-ns-walls-roe-lsq": (lambda: grid_mesh(10, 8, "triangle"), WALLS_2D,
                            Gas(dim=2, mach=0.3, aoa_deg=5.0, reynolds=100.0),
                            Scheme("roe", 2, "least-squares", "venkatakrishnan")),
    "2d-ns-walls-lmroe-gg": (lambda: grid_mesh(10, 8, "triangle"), WALLS_2D,
                             Gas(dim=2, mach=0.15, aoa_deg=5.0, reynolds=100.0),
                             Scheme("lmroe", 2, "green-gauss", "none")),
    "3d-mixed-lmroe-lsq": (lambda: box_mesh(5, 4, 4), MIXED_3D, Gas(dim=3, mach=0.2),
                           Scheme("lmroe", 2, "least-squares", "venkatakrishnan")),
    "2d-ns-inlet-lmroe-gg": (lambda: grid_mesh(10, 8, "triangle"), INLET_2D,
                             Gas(dim=2, mach=0.2, aoa_deg=4.0, reynolds=100.0),
                             Scheme("lmroe", 2, "green-gauss", "none")),
    "2d-ns-channel-rusanov-1": (lambda: grid_mesh(9, 8), CHANNEL_2D,
                                Gas(dim=2, mach=0.2, reynolds=50.0), Scheme("rusanov", 1)),
    "3d-ns-ausmpw-gg": (lambda: box_mesh(6, 5, 4), MIXED_3D | {"ymin": "no-slip-adiabatic"},
                        Gas(dim=3, mach=0.4, aoa_deg=2.0, reynolds=200.0),
                        Scheme("ausmpw+", 2, "green-gauss", "venkatakrishnan")),
    "naca0012-tri-roe-lsq": (lambda: read_mesh(DATA / "naca0012_tri.msh"), AIRFOIL,
                             Gas(dim=2, mach=0.8, aoa_deg=1.25),
                             Scheme("roe", 2, "least-squares", "venkatakrishnan")),
    "2d-periodic-roe-van-albada": (lambda: grid_mesh(9, 8, "triangle"), PERIODIC_2D,
                                   Gas(dim=2, mach=0.6, aoa_deg=1.0),
                                   Scheme("roe", 2, "least-squares", "van-albada")),
    "3d-mixed-rusanov-van-albada": (lambda: box_mesh(5, 4, 4), MIXED_3D,
                                    Gas(dim=3, mach=0.8, aoa_deg=2.0),
                                    Scheme("rusanov", 2, "green-gauss", "van-albada")),
    "2d-periodic-jst": (lambda: grid_mesh(9, 8, "triangle"), PERIODIC_2D,
                        Gas(dim=2, mach=0.6, aoa_deg=1.0), Scheme("jst")),
    "3d-mixed-jst": (lambda: box_mesh(5, 4, 4), MIXED_3D, Gas(dim=3, mach=1.4, aoa_deg=2.0),
                     Scheme("jst", jst_k2=1.0, jst_k4=0.03)),
    "3d-mixed-jst-unstretched": (lambda: box_mesh(5, 4, 4), MIXED_3D,
                                 Gas(dim=3, mach=1.4, aoa_deg=2.0),
                                 Scheme("jst", jst_stretching=False)),
    "2d-ns-stretched-roe-lsq": (lambda: stretched_grid(10, 12), WALLS_2D,
                                Gas(dim=2, mach=0.3, aoa_deg=5.0, reynolds=100.0),
                                Scheme("roe", 2, "least-squares", "venkatakrishnan")),
    "wing-prisms-jst": (lambda: read_mesh(DATA / "wing_prisms.msh"), None,
                        Gas(dim=3, mach=0.8, aoa_deg=2.0), Scheme("jst")),
    "wing-prisms-roe-lsq": (lambda: read_mesh(DATA / "wing_prisms.msh"), None,
                            Gas(dim=3, mach=0.8, aoa_deg=2.0),
                            Scheme("roe", 2, "least-squares", "venkatakrishnan")),
}


def _pair(case: str, precision: str, strategy: str = "reduce", backend: str = "cupy",
          **kwargs):
    """The NumPy reference and the fused solver of ``case`` on one random state.

    ``backend`` ``host``: the second solver is on NumPy too, with host-compiled
    kernels attached to its discretisation.
    """
    make_mesh, boundaries, gas, scheme = CASES[case]
    seed = int(np.random.default_rng().integers(2**31))  # fresh random data
    print(f"seed {seed}")
    mesh = make_mesh()
    if boundaries is not None:
        kwargs["boundaries"] = boundaries
    common = dict(gas=gas, scheme=scheme, precision=precision, seed=seed, strategy=strategy,
                  **kwargs)
    reference = perturbed_solver(mesh, backend="numpy", **common)
    device = perturbed_solver(mesh, backend="numpy" if backend == "host" else "cupy", **common)
    if backend == "host":
        device.fuse()
    assert device.discretisation.fused is not None
    for solver in (reference, device):
        solver.discretisation.circulation = 0.3  # vortex far fields see a lifting body
    return reference, device


def _relative_error(got, expected) -> float:
    difference = np.abs(got - expected)
    worst = np.unravel_index(np.argmax(difference), difference.shape)
    error = difference.max() / np.abs(expected).max()
    print(f"relative error {error:.2e} at {worst}")
    return error


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("strategy", ["reduce", "atomic", "colour"])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_fused_residual_matches_numpy(case, strategy, precision, backend):
    if backend == "host" and (strategy != "reduce" and precision == "fp32"):
        pytest.skip("host: one strategy in fp32 is enough (compile time)")
    reference, device = _pair(case, precision, strategy, backend)
    expected = reference.discretisation.residual(reference.u)
    got = device.backend.to_host(device.discretisation.residual(device.u))
    assert got.dtype == expected.dtype
    assert _relative_error(got, expected) < TOLERANCE[precision]
    flux = [s.backend.to_host(s.discretisation.boundary_flux) for s in (reference, device)]
    assert _relative_error(flux[1], flux[0]) < TOLERANCE[precision]
    if reference.discretisation.limiter_values is not None:
        phi = [s.backend.to_host(s.discretisation.limiter_values) for s in (reference, device)]
        assert _relative_error(phi[1], phi[0]) < 100 * TOLERANCE[precision]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("case", "precision"), [
    ("2d-mixed-roe-lsq", "fp64"), ("2d-periodic-ausmpw-gg", "fp64"),
    ("2d-ns-walls-lmroe-gg", "fp64"), ("2d-ns-channel-rusanov-1", "fp64"),
    ("2d-ns-inlet-lmroe-gg", "fp64"),
    ("3d-mixed-roe-gg", "fp64"), ("3d-mixed-lmroe-lsq", "fp64"),
    ("naca0012-tri-roe-lsq", "fp64"), ("2d-mixed-roe-lsq", "fp32")])
def test_fused_face_jacobians_match_numpy(case, precision, backend):
    """The first-order flux's Jacobians (the Newton-Krylov preconditioner's) in one
    kernel against the array code's one-sided differences, every boundary condition
    (periodic ghosts and vortex far fields too): the fluxes' round-off over steps of
    sqrt(eps) leaves about sqrt(eps) of the largest entry."""
    reference, device = _pair(case, precision, backend=backend)
    expected = face_jacobians(reference.discretisation, reference.u)
    got = face_jacobians(device.discretisation, device.u)
    n_interior = reference.discretisation.n_interior
    assert not device.backend.to_host(got[1])[:, :, n_interior:].any()
    for side, side_expected in zip(got, expected, strict=True):
        assert _relative_error(device.backend.to_host(side), side_expected) < (
            1e-6 if precision == "fp64" else 1e-2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_fused_residual_with_a_frozen_limiter_matches_numpy(precision, backend):
    reference, device = _pair("2d-mixed-roe-lsq", precision, backend=backend)
    rng = np.random.default_rng(1)
    phi = rng.uniform(0.0, 1.0, (4, reference.host.n_cells)).astype(reference.dtype)
    for solver in (reference, device):
        solver.discretisation.frozen_limiter = solver.backend.asarray(phi)
    expected = reference.discretisation.residual(reference.u)
    got = device.backend.to_host(device.discretisation.residual(device.u))
    assert _relative_error(got, expected) < TOLERANCE[precision]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["rk4", "lusgs"])
def test_limiter_frozen_from_above_falls_and_never_rises(integrator, backend):
    stepping = Stepping(integrator, cfl=0.5 if integrator == "rk4" else 20.0)
    reference, device = _pair("2d-mixed-roe-lsq", "fp64", backend=backend, stepping=stepping)
    for solver in (reference, device):
        solver.step()
        d = solver.discretisation
        ceiling = solver.backend.to_host(d.limiter_values).copy()
        ceiling[:, ::2] *= 0.5  # some cells below what their limiter computes
        ceiling[:, 1::2] = 1.0  # the others above
        d.limiter_ceiling = solver.backend.asarray(ceiling.copy())  # updated in place
    for _ in range(3):
        for solver in (reference, device):
            solver.step()
    phi = [s.backend.to_host(s.discretisation.limiter_ceiling) for s in (reference, device)]
    assert _relative_error(phi[1], phi[0]) < 1e-10
    np.testing.assert_array_less(phi[0], ceiling + 1e-15)  # never above the ceiling
    assert np.any(phi[0] < ceiling - 1e-3)  # and it still falls where it must
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", list(TABLEAUX))
@pytest.mark.parametrize("case", ["2d-periodic-ausmpw-gg", "3d-mixed-roe-gg", "3d-mixed-jst",
                                  "naca0012-tri-roe-lsq", "2d-ns-walls-roe-lsq"])
@pytest.mark.parametrize("local", [True, False])
def test_fused_steps_match_numpy_steps(method, case, local, backend):
    stepping = Stepping(method, cfl=0.5, local_time_step=local)
    reference, device = _pair(case, "fp64", backend=backend, stepping=stepping)
    assert device.fused_steps is not None
    for _ in range(4):  # the third and fourth steps replay recorded CUDA graphs
        norms = [s.step() for s in (reference, device)]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-10)
    # absolute tolerance for the momenta that are zero in the free stream
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)
    forces = [s.wall_forces()["total"].force for s in (reference, device)]
    np.testing.assert_allclose(forces[1], forces[0], rtol=1e-10, atol=1e-14)
    if not local:
        assert device.time == pytest.approx(reference.time, rel=1e-12)


@pytest.mark.gpu
def test_fused_graph_replay_equals_direct_launches():
    _, device = _pair("naca0012-tri-roe-lsq", "fp64", stepping=Stepping("rk4", cfl=0.8))
    u = device.u.copy()
    results = []
    for graphs in (False, True):
        steps = FusedPartsRungeKutta([device.discretisation.fused], device.layouts,
                                     TABLEAUX["rk4"], device.transport)
        steps.graphs = StepGraphs(device.backend, graphs)
        for _ in range(3):
            (out,) = steps([u], 0.8)
        (part,) = steps.parts
        results.append((out.get(), part.squares.get(), int(part.bad_cell.get()[0])))
    np.testing.assert_array_equal(results[1][0], results[0][0])  # no atomics in the state
    # the norms' block sums meet in atomics, in any order
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-14)
    assert results[0][2] == results[1][2] == NO_BAD_CELL


@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_step_names_the_cell_that_went_bad(backend):
    from gpusolver.errors import SolverDivergedError

    # one global time step: steady (local) steps relax each stage to positive states
    _, device = _pair("2d-mixed-roe-lsq", "fp64", backend=backend,
                      stepping=Stepping("rk4", cfl=1e4, local_time_step=False))
    with pytest.raises(SolverDivergedError, match="non-positive density or pressure"):
        for _ in range(5):
            device.step()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["2d-mixed-roe-lsq", "3d-mixed-ausmpw-1",
                                  "wing-prisms-roe-lsq"])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("sweeps", ["hyperplanes", "colours", "lines"])
def test_lusgs_level_kernels_match_the_array_sweeps(case, precision, sweeps, backend):
    reference, device = _pair(case, precision, backend=backend, stepping=Stepping(
        "lusgs", cfl=50.0, sweeps="colours" if sweeps == "lines" else sweeps))
    lines = line_sweeps(reference.host) if sweeps == "lines" else None
    sweeps = [LUSGS(s.discretisation, s.host, plan=s.plan, kernels=kernels, lines=lines)
              for s, kernels in ((reference, False), (device, True))]
    assert sweeps[1].kernels is not None
    updates = []
    for solver, lusgs in zip((reference, device), sweeps, strict=True):
        u = solver.u
        residual = solver.discretisation.residual(u)
        updates.append(solver.backend.to_host(lusgs(u, residual, solver.time_step(u))))
    assert _relative_error(updates[1], updates[0]) < TOLERANCE[precision]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["2d-mixed-roe-lsq", "3d-mixed-roe-gg", "2d-ns-walls-roe-lsq",
                                  "wing-prisms-roe-lsq", "wing-prisms-jst"])
@pytest.mark.parametrize("strategy", ["reduce", "atomic"])
def test_fused_lusgs_steps_match_numpy_steps(case, strategy, backend):
    stepping = Stepping("lusgs", cfl=20.0, cfl_max=200.0)
    reference, device = _pair(case, "fp64", strategy, backend=backend, stepping=stepping)
    assert device.fused_implicit is not None and reference.fused_implicit is None
    for _ in range(4):  # the third and fourth steps replay a recorded CUDA graph
        norms = [s.step() for s in (reference, device)]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-10)
        assert device.cfl == pytest.approx(reference.cfl, rel=1e-12)
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)
    forces = [s.wall_forces()["total"].force for s in (reference, device)]
    np.testing.assert_allclose(forces[1], forces[0], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["2d-ns-stretched-roe-lsq", "wing-prisms-roe-lsq"])
def test_fused_line_implicit_steps_match_numpy_steps(case, backend):
    stepping = Stepping("lusgs", cfl=20.0, cfl_max=200.0, sweeps="colours", line_implicit=True)
    reference, device = _pair(case, "fp64", "atomic", backend=backend, stepping=stepping)
    assert device.fused_implicit is not None and device.part_sweeps[0].lines
    assert max(np.diff(device.part_sweeps[0].levels[0].line_offsets)) > 1
    for _ in range(4):
        norms = [s.step() for s in (reference, device)]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-10)
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["2d-mixed-roe-lsq", "wing-prisms-jst"])
def test_fused_lusgs_relaxes_the_cells_numpy_relaxes(case, backend):
    """Steps far too large for a tight update bound: the kernels scale back the same
    cells by the same factors as the array code (:mod:`gpusolver.integrators.relaxation`)."""
    stepping = Stepping("lusgs", cfl=1e4, max_update=0.01)
    reference, device = _pair(case, "fp64", backend=backend, stepping=stepping)
    for _ in range(3):
        for solver in (reference, device):
            solver.step()
        assert device.relaxed_cells == reference.relaxed_cells > 0
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_lusgs_backs_off_the_cfl_number_and_names_the_bad_cell(backend):
    from gpusolver.errors import SolverDivergedError

    _, device = _pair("2d-mixed-roe-lsq", "fp64", backend=backend,
                      stepping=Stepping("lusgs", cfl=100.0))
    device.step()
    device.u[:, 7] = np.nan  # no CFL number saves this state
    with pytest.raises(SolverDivergedError, match="non-positive density or pressure"):
        device.step()
    assert device.cfl == pytest.approx(1e-3)  # backed off six times, to the floor


def test_host_kernels_need_a_compiler(monkeypatch):
    import gpusolver.backends.host as host

    monkeypatch.setattr(host, "compiler", lambda: None)
    with pytest.raises(RuntimeError, match="no C\\+\\+ compiler"):
        host.load_host_templates.__wrapped__("gpusolver.solvers.fv", "kernels/lusgs.cu",
                                             ("sweep_kernel<double, 2, false, false>",))


def test_host_kernels_refuse_arrays_that_are_not_c_ordered():
    from gpusolver.backends.host import HostKernel

    kernel = HostKernel(lambda *args: None)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernel((1,), (1,), (np.zeros((3, 2)).T,))
