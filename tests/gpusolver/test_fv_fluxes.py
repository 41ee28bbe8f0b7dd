"""Numerical fluxes: consistency, conservation, upwinding, on random valid states."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.physics.fluxes import FLUXES
from gpusolver.physics.gas import Gas


def random_states(rng, m, dim):
    return np.vstack([rng.uniform(0.3, 2.0, m), rng.uniform(-0.8, 0.8, (dim, m)),
                      rng.uniform(0.3, 2.0, m)])


def random_normals(rng, m, dim):
    n = rng.normal(size=(dim, m))
    return n / np.linalg.norm(n, axis=0)


@pytest.mark.parametrize("name", list(FLUXES))
@pytest.mark.parametrize("dim", [2, 3])
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_consistent_and_conservative(name, dim, seed):
    rng = np.random.default_rng(seed)
    gas = Gas(dim=dim, mach=0.5)
    wl, wr = random_states(rng, 50, dim), random_states(rng, 50, dim)
    n = random_normals(rng, 50, dim)
    flux = FLUXES[name]
    np.testing.assert_allclose(flux(gas, wl, wl, n), gas.euler_flux(wl, n), atol=1e-12)
    np.testing.assert_allclose(flux(gas, wl, wr, n), -flux(gas, wr, wl, -n), atol=1e-12)


@pytest.mark.parametrize("name", ["roe", "lmroe", "ausmpw+"])
def test_supersonic_flux_is_fully_upwind(name):
    rng = np.random.default_rng(1)
    gas = Gas(dim=2, mach=2.0)
    wl, wr = random_states(rng, 20, 2), random_states(rng, 20, 2)
    for w in (wl, wr):
        w[1], w[2] = 4.0, 0.1  # |u| > c everywhere
    n = np.vstack([np.ones(20), np.zeros(20)])
    np.testing.assert_allclose(FLUXES[name](gas, wl, wr, n), gas.euler_flux(wl, n), atol=1e-12)



def test_ausmpw_plus_is_finite_where_the_split_pressure_vanishes():
    # both sides supersonic away from the face: p+ (left) = p- (right) = 0, so ps = 0;
    # Kim, Kim and Rho take f = 0 there, and the flux is the vacuum's, zero
    gas = Gas(dim=2, mach=0.5)
    wl = np.array([[1.0], [-3.0], [0.0], [0.7]])
    wr = np.array([[1.0], [3.0], [0.0], [0.7]])
    with np.errstate(all="raise"):
        flux = FLUXES["ausmpw+"](gas, wl, wr, np.array([[1.0], [0.0]]))
    np.testing.assert_array_equal(flux, 0.0)


@pytest.mark.parametrize("mach", [0.01, 0.05, 0.1])
def test_the_low_mach_fix_scales_roes_pressure_dissipation_by_the_mach_number(mach):
    """A jump of the normal velocity alone at Mach number M (well below 1): Roe's
    dissipation of the normal momentum is rho c |du| / 2 (independent of M), Rieper's
    fix rho |u| |du| / 2, M times it; in supersonic flow (M > 1) the two fluxes agree."""
    gas = Gas(dim=2, mach=mach)
    c = 1.0 / mach  # the free stream's sound speed in these units
    wl = np.array([[1.0], [1.0], [0.0], [1.0 / (gas.gamma * mach**2)]])
    wr = wl.copy()
    wr[1] += 1e-3
    n = np.array([[1.0], [0.0]])
    central = 0.5 * (gas.euler_flux(wl, n) + gas.euler_flux(wr, n))
    roe, low_mach = (central - FLUXES[name](gas, wl, wr, n) for name in ("roe", "lmroe"))
    assert roe[1, 0] == pytest.approx(0.5 * c * 1e-3, rel=2e-2)
    assert low_mach[1, 0] / roe[1, 0] == pytest.approx(mach, rel=2e-2)
    fast = Gas(dim=2, mach=2.0)
    wl[1], wr[1] = 1.0, 1.001
    wl[-1] = wr[-1] = 1.0 / (fast.gamma * 4.0)
    np.testing.assert_allclose(FLUXES["lmroe"](fast, wl, wr, n), FLUXES["roe"](fast, wl, wr, n),
                               rtol=1e-14)


def test_lmroe_dissipates_a_tenth_of_roes_shear_across_a_face_without_normal_flow():
    """A jump of the tangential velocity across a face that nothing crosses (a boundary
    layer's faces along the wall): Roe's entropy fix dissipates it at the smoothed
    eigenvalue 0.05 c, LMRoe's (a tenth of it on the entropy and shear waves) at 0.005 c."""
    gas = Gas(dim=2, mach=0.15)
    c = 1.0 / 0.15
    wl = np.array([[1.0], [0.0], [1.0], [1.0 / (gas.gamma * 0.15**2)]])
    wr = wl.copy()
    wr[2] += 1e-3
    n = np.array([[1.0], [0.0]])
    central = 0.5 * (gas.euler_flux(wl, n) + gas.euler_flux(wr, n))
    roe, low_mach = (central - FLUXES[name](gas, wl, wr, n) for name in ("roe", "lmroe"))
    assert roe[2, 0] == pytest.approx(0.5 * 0.05 * c * 1e-3, rel=1e-6)
    assert low_mach[2, 0] == pytest.approx(0.5 * 0.005 * c * 1e-3, rel=1e-6)
    np.testing.assert_allclose(low_mach[:2], 0.0, atol=1e-15)  # mass, normal momentum
