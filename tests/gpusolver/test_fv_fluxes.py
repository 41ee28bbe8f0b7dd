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


@pytest.mark.parametrize("name", ["roe", "ausmpw+"])
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
