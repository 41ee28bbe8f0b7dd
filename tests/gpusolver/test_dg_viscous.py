"""Navier-Stokes in the modal DG solver: BR2 viscous terms, against compressible Couette flow."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpusolver.errors import SolverDivergedError
from gpusolver.physics.exact import couette
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.discretisation import uniform
from gpusolver.solvers.dg.solver import DGSolver
from gpusolver.solvers.dg.steady import newton_steady_state
from meshorder.testing import grid_mesh

from .dg_cases import assert_kernels_match_the_rate, assert_the_rate_conserves, mixed_mesh, vortex
from .fv_cases import FARFIELD_SQUARE
from .kernel_backends import BACKENDS

#: The RKDG paper's Couette case in the solver's units: the upper wall at M 0.1 and
#: temperature 1, the lower one at 0.80 / 0.85, plates 2 apart, Re 100 on the gap and the
#: upper wall's density and speed (reynolds per unit length 50), constant viscosity.
COUETTE_GAS = Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="constant")
SIDES = ("left", "right", "bottom", "top")


def _channel(nx: int, ny: int, kind: str):
    """The paper's domain [0, 4] x [0, 2]."""
    mesh = grid_mesh(nx, ny, kind)
    return dataclasses.replace(mesh, points=mesh.points * np.array([4.0, 2.0, 1.0]))


#: The walls at the exact solution's temperatures and speeds; the exact state at the ends.
COUETTE_WALLS = {"left": "exact", "right": "exact",
                 "bottom": {"type": "no-slip-isothermal", "temperature": 0.80 / 0.85},
                 "top": {"type": "no-slip-isothermal", "temperature": 1.0,
                         "velocity": [COUETTE_GAS.mach, 0.0]}}
#: The paper's table 2 (50 and 200 quadrilaterals; 58 and 232 triangles).
PAPER_ERRORS = {("quad", 1): (3.45e-5, 7.90e-6), ("quad", 2): (2.16e-7, 2.66e-8),
                ("triangle", 1): (5.59e-5, 1.55e-5)}


def _steady_couette_error(nx: int, kind: str, degree: int) -> float:
    """L2 density error of the discretisation's steady Couette flow (Newton's method)."""
    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solver = DGSolver(_channel(nx, nx // 2, kind), COUETTE_GAS, COUETTE_WALLS, degree=degree,
                      exact=exact)
    solver.u = solver.discretisation.project(exact)
    history = newton_steady_state(solver.discretisation)
    assert history[-1] < 1e-12
    return solver.discretisation.l2_error(exact)


@pytest.mark.parametrize("kind, degree", list(PAPER_ERRORS))
def test_steady_couette_flow_converges_at_order_p_plus_one_below_the_papers_errors(kind,
                                                                                   degree):
    """The issue's goal on the first two of the paper's grids: order p + 1 - 0.05 on
    quads, p + 1 - 0.2 on triangles, errors below table 2's. Isothermal walls with a
    numerical flux against a ghost state instead of the wall's own flux gave 1.80 at p = 1
    here, and on finer grids fell further."""
    coarse, fine = (_steady_couette_error(n, kind, degree) for n in (10, 20))
    order = np.log2(coarse / fine)
    print(f"{kind} p={degree}: {coarse:.3e} -> {fine:.3e}, order {order:.2f}")
    assert coarse < PAPER_ERRORS[kind, degree][0] and fine < PAPER_ERRORS[kind, degree][1]
    assert order > degree + 1 - (0.05 if kind == "quad" else 0.2)


def test_newton_refuses_a_state_that_is_not_finite_or_does_not_settle():
    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solver = DGSolver(_channel(4, 2, "quad"), COUETTE_GAS, COUETTE_WALLS, degree=1,
                      exact=exact)
    solver.u = solver.discretisation.project(exact)
    solver.u[0, 0, 3] = np.nan
    with pytest.raises(SolverDivergedError, match="the rate is nan"):
        newton_steady_state(solver.discretisation)
    # far from steady
    solver.u = solver.discretisation.project(lambda x, t: uniform(COUETTE_GAS, x))
    with pytest.raises(SolverDivergedError, match="has not settled after 1 steps"):
        newton_steady_state(solver.discretisation, max_iterations=1)


def test_no_mass_crosses_a_no_slip_wall():
    """The wall's flux is the inside pressure's alone, whatever the ghost state: an
    isothermal wall's ghost density differs from the inside's, and a numerical flux
    against it carried mass through the wall."""
    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solver = DGSolver(_channel(4, 2, "quad"), COUETTE_GAS, COUETTE_WALLS, degree=2,
                      exact=exact)
    u = solver.discretisation.project(exact) * (1 + 1e-3 * np.random.default_rng(0).uniform(
        -1, 1, solver.u.shape))
    solver.discretisation.rate(u)
    lay = solver.layout
    for name in ("bottom", "top"):
        first, end = lay.markers[name]
        wall = solver.discretisation.boundary_flux[:, first - lay.n_interior:end - lay.n_interior]
        assert np.abs(wall[0]).max() == 0.0  # mass
        assert np.abs(wall[1:3]).max() > 1e-4  # pressure and friction


@pytest.mark.parametrize("degree", [1, 3])
def test_a_uniform_viscous_flow_is_preserved(degree):
    mesh = grid_mesh(5, 4, "mixed")
    gas = Gas(dim=2, mach=0.6, aoa_deg=20.0, reynolds=1000.0)
    solver = DGSolver(mesh, gas, FARFIELD_SQUARE, degree=degree)
    assert np.abs(solver.discretisation.rate(solver.u)).max() < 1e-12


def test_the_viscous_rate_conserves_what_the_boundary_fluxes_carry():
    mesh = grid_mesh(6, 5, "mixed")
    points = mesh.points.copy()
    points[:, :2] += 0.03 * np.sin(7 * points[:, :2][:, ::-1])  # distorted elements
    mesh = dataclasses.replace(mesh, points=points)
    gas = Gas(dim=2, mach=0.3, reynolds=20.0)
    boundaries = {"left": "farfield", "right": "farfield", "bottom": "no-slip-adiabatic",
                  "top": "farfield"}
    solver = DGSolver(mesh, gas, boundaries, degree=2)
    u, rate = assert_the_rate_conserves(solver, np.random.default_rng(5))
    # and the viscous terms are there: the same state without viscosity moves differently
    inviscid = DGSolver(mesh, dataclasses.replace(gas, reynolds=None), boundaries, degree=2)
    assert np.abs(inviscid.discretisation.rate(u) - rate).max() > 1e-3 * np.abs(rate).max()


def test_bad_viscous_input_is_refused():
    with pytest.raises(ValueError, match="unknown viscosity law 'linear'"):
        Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="linear")
    from gpusolver.solvers.dg.layout import build_layout
    from gpusolver.solvers.dg.viscous import BR2
    from meshorder.pipeline import make_plan

    mesh = grid_mesh(3, 3)
    with pytest.raises(ValueError, match="viscous=True"):
        BR2(build_layout(mesh, make_plan(mesh), 1), COUETTE_GAS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("degree", [0, 1, 2, 3])
@pytest.mark.parametrize("law", ["sutherland", "constant"])
def test_br2_kernels_match_the_numpy_rate(backend, precision, degree, law):
    """On a distorted mixed mesh with a moving isothermal wall, an adiabatic one, a far
    field and an exact boundary, from a random state; on affine and non-affine elements."""
    if backend == "host" and (precision == "fp32" or law == "constant") and degree != 2:
        pytest.skip("host: fp32 and the constant law at one degree are enough (compile time)")
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    gas = Gas(dim=2, mach=0.5, aoa_deg=5.0, reynolds=40.0, viscosity_law=law)
    boundaries = {"left": "farfield", "right": "exact", "top": "no-slip-adiabatic",
                  "bottom": {"type": "no-slip-isothermal", "temperature": 1.1,
                             "velocity": [0.2, 0.0]}}
    solver = DGSolver(mixed_mesh(rng), gas, boundaries, degree=degree,
                      exact=lambda x, t: vortex(x, t, centre=(0.5, 0.5)))
    assert_kernels_match_the_rate(solver, backend, precision, rng)


@pytest.mark.parametrize("backend", BACKENDS)
def test_couette_steps_in_kernels_match_the_numpy_steps(backend):

    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solvers = []
    for kind in ("numpy", backend):
        solver = DGSolver(_channel(6, 3, "triangle"), COUETTE_GAS, dict.fromkeys(SIDES, "exact"),
                          degree=2, exact=exact, local_time_step=True,
                          backend="cupy" if kind == "cupy" else "numpy")
        if kind == "host":
            solver.fuse()
        start = solver.discretisation.project(lambda x, t: uniform(COUETTE_GAS, x))
        solver.u = solver.backend.asarray(start)
        solvers.append(solver)
    for _ in range(3):
        norms = [s.step() for s in solvers]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(solvers[1].conserved(), solvers[0].conserved(), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("kind, aspect", [("quad", 3.0), ("triangle", 1.0)])
@pytest.mark.parametrize("degree", [2, 3])
def test_the_viscous_time_step_is_stable_where_diffusion_dominates(kind, aspect, degree):
    """Re 1 on cells 1/6 across: the diffusive limit sets the step. At CFL 0.7 (the
    limit measured with RK4 lies at 1.1-1.6) a perturbed uniform flow stays bounded; the
    earlier estimate ((2p + 1)^2 on twice the area over the perimeter) blew up stretched
    quadrilaterals at CFL 0.4."""
    mesh = grid_mesh(6, 6, kind)
    mesh = dataclasses.replace(mesh, points=mesh.points * np.array([1.0, 1.0 / aspect, 1.0]))
    gas = Gas(dim=2, mach=0.2, reynolds=1.0)
    walls = {"left": "farfield", "right": "farfield", "bottom": "no-slip-adiabatic",
             "top": "no-slip-adiabatic"}
    solver = DGSolver(mesh, gas, walls, degree=degree, cfl=0.7)
    solver.u = solver.u * (1 + 1e-3 * np.random.default_rng(0).uniform(-1, 1, solver.u.shape))
    start = np.abs(solver.u).max()
    for _ in range(150):
        solver.step()
    assert np.abs(solver.u).max() < 1.2 * start  # an instability grows by orders


def test_advance_takes_the_steps_that_step_takes():
    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solvers = [DGSolver(_channel(4, 2, "quad"), COUETTE_GAS, dict.fromkeys(SIDES, "exact"),
                        degree=1, exact=exact) for _ in range(2)]
    for solver in solvers:
        solver.u = solver.discretisation.project(lambda x, t: uniform(COUETTE_GAS, x))
    dt = solvers[0].time_step()
    for _ in range(4):
        solvers[0].step(dt)
    solvers[1].advance(4, dt)
    assert solvers[1].iteration == 4 and solvers[1].time == pytest.approx(4 * dt)
    np.testing.assert_array_equal(solvers[1].u, solvers[0].u)


def test_advance_with_local_steps_lets_no_time_pass():
    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solver = DGSolver(_channel(4, 2, "quad"), COUETTE_GAS, dict.fromkeys(SIDES, "exact"),
                      degree=1, exact=exact, local_time_step=True)
    norms = solver.advance(3)
    assert solver.iteration == 3 and solver.time == 0.0 and np.isfinite(norms).all()


@pytest.mark.parametrize("wall, conducts", [("no-slip-adiabatic", False),
                                            ({"type": "no-slip-isothermal",
                                              "temperature": 1.0}, True)])
def test_no_heat_crosses_an_adiabatic_wall(wall, conducts):
    """Gas at rest, pressure uniform, temperature rising away from the bottom wall: no
    energy crosses an adiabatic wall (the inside's gradient would conduct heat), while an
    isothermal one at the wall temperature conducts it."""
    gas = Gas(dim=2, mach=0.2, reynolds=10.0)
    walls = {"left": "farfield", "right": "farfield", "top": "farfield", "bottom": wall}
    solver = DGSolver(grid_mesh(4, 4, "mixed"), gas, walls, degree=2)

    def warm_upwards(points, time):
        temperature = 1.0 + 0.2 * points[1]
        return gas.to_conserved(np.stack([1.0 / temperature, 0 * temperature,
                                          0 * temperature, 0 * temperature + 1 / gas.gamma]))

    solver.discretisation.rate(solver.discretisation.project(warm_upwards))
    first, end = solver.layout.markers["bottom"]
    ni = solver.layout.n_interior
    energy = np.abs(solver.discretisation.boundary_flux[3, first - ni:end - ni]).max()
    print(f"energy flux through the wall: {energy:.2e}")
    assert (energy > 1e-5) if conducts else (energy < 1e-14)
