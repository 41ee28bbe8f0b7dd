"""Navier-Stokes in the modal DG solver: BR2 viscous terms, against compressible Couette flow."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpusolver.physics.exact import couette
from gpusolver.physics.gas import Gas
from gpusolver.solvers.dg.solver import DGSolver
from meshorder.testing import grid_mesh

from .fv_cases import FARFIELD_SQUARE

#: The RKDG paper's Couette case in the solver's units: the upper wall at M 0.1 and
#: temperature 1, the lower one at 0.80 / 0.85, plates 2 apart, Re 100 on the gap and the
#: upper wall's density and speed (reynolds per unit length 50), constant viscosity.
COUETTE_GAS = Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="constant")
SIDES = ("left", "right", "bottom", "top")


def _channel(nx: int, ny: int, kind: str):
    """The paper's domain [0, 4] x [0, 2]."""
    mesh = grid_mesh(nx, ny, kind)
    return dataclasses.replace(mesh, points=mesh.points * np.array([4.0, 2.0, 1.0]))


def _couette_error(nx: int, kind: str, degree: int, steps: int) -> float:
    """L2 error of density after ``steps`` local steps from the exact solution's projection,
    the exact state on every boundary."""
    exact = lambda points, time: couette(COUETTE_GAS, points)  # noqa: E731
    solver = DGSolver(_channel(nx, nx // 2, kind), COUETTE_GAS, dict.fromkeys(SIDES, "exact"),
                      degree=degree, exact=exact, local_time_step=True)
    solver.u = solver.project(exact)
    for _ in range(steps):
        solver.step()
    return solver.l2_error(exact)


@pytest.mark.parametrize("kind, degree, coarse_bound", [
    ("quad", 1, 8e-5), ("quad", 2, 5e-7), ("triangle", 1, 1.5e-4)])
def test_couette_flow_converges_at_order_p_plus_one(kind, degree, coarse_bound):
    coarse, fine = (_couette_error(n, kind, degree, 250) for n in (10, 20))
    order = np.log2(coarse / fine)
    print(f"{kind} p={degree}: {coarse:.3e} -> {fine:.3e}, order {order:.2f}")
    assert coarse < coarse_bound
    assert order > degree + 1 - 0.2


@pytest.mark.parametrize("degree", [1, 3])
def test_a_uniform_viscous_flow_is_preserved(degree):
    mesh = grid_mesh(5, 4, "mixed")
    gas = Gas(dim=2, mach=0.6, aoa_deg=20.0, reynolds=1000.0)
    solver = DGSolver(mesh, gas, FARFIELD_SQUARE, degree=degree)
    assert np.abs(solver.rate(solver.u)).max() < 1e-12


def test_the_viscous_rate_conserves_what_the_boundary_fluxes_carry():
    mesh = grid_mesh(6, 5, "mixed")
    points = mesh.points.copy()
    points[:, :2] += 0.03 * np.sin(7 * points[:, :2][:, ::-1])  # distorted elements
    mesh = dataclasses.replace(mesh, points=points)
    gas = Gas(dim=2, mach=0.3, reynolds=20.0)
    boundaries = {"left": "farfield", "right": "farfield", "bottom": "no-slip-adiabatic",
                  "top": "farfield"}
    solver = DGSolver(mesh, gas, boundaries, degree=2)
    rng = np.random.default_rng(5)
    u = solver.u * (1 + 0.05 * rng.uniform(-1, 1, solver.u.shape))
    rate = solver.rate(u)
    total = sum(np.einsum("mq,qe,vme->v", g.values, g.weights, rate[:, :, g.elements])
                for g in solver.layout.groups)
    np.testing.assert_allclose(total, -solver.boundary_flux.sum(axis=1), rtol=1e-11, atol=1e-12)
    # and the viscous terms are there: the same state without viscosity moves differently
    inviscid = DGSolver(mesh, dataclasses.replace(gas, reynolds=None), boundaries, degree=2)
    assert np.abs(inviscid.rate(u) - rate).max() > 1e-3 * np.abs(rate).max()


def test_bad_viscous_input_is_refused():
    with pytest.raises(ValueError, match="unknown viscosity law 'linear'"):
        Gas(dim=2, mach=0.1, reynolds=50.0, viscosity_law="linear")
    from gpusolver.solvers.dg.layout import build_layout
    from gpusolver.solvers.dg.viscous import BR2
    from meshorder.pipeline import make_plan

    mesh = grid_mesh(3, 3)
    with pytest.raises(ValueError, match="viscous=True"):
        BR2(build_layout(mesh, make_plan(mesh), 1), COUETTE_GAS)


@pytest.mark.gpu
def test_navier_stokes_dg_on_the_gpu_is_refused_until_its_kernels_exist():
    pytest.importorskip("cupy")
    from gpusolver.backends import get_backend
    from gpusolver.errors import ConfigError

    try:
        get_backend("cupy")
    except Exception:
        pytest.skip("needs a CUDA GPU with CuPy")
    with pytest.raises(ConfigError, match="numpy backend only"):
        DGSolver(grid_mesh(3, 3), COUETTE_GAS, FARFIELD_SQUARE, degree=1, backend="cupy")
