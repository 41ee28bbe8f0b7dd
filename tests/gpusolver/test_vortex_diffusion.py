"""Diffusive velocities of the viscous vortex domains against exact diffusion."""

import numpy as np
import pytest

from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.diffusion import diffusive_velocity, smoothing_radii


def _gaussian_blob(h: float, sigma: float):
    """Elements on a square lattice of spacing ``h`` carrying exp(-r^2 / sigma^2)."""
    axis = np.arange(-4 * sigma, 4 * sigma + h / 2, h)
    positions = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    r2 = (positions**2).sum(axis=1)
    return positions, np.exp(-r2 / sigma**2) * h * h


def test_a_gaussian_spreads_at_the_exact_diffusive_velocity_as_the_spacing_shrinks():
    # -nu grad(Omega) / Omega = 2 nu r / sigma^2, radially outwards. Smoothing over a few
    # neighbours errs by some percent on a lattice: 22%, 10% and 6.5% of the core's
    # largest speed at spacings sigma / 5, / 10 and / 20.
    sigma, nu = 0.2, 0.01
    errors = []
    for h in (0.04, 0.02):
        positions, gammas = _gaussian_blob(h, sigma)
        w = diffusive_velocity(positions, gammas, nu, smoothing_radii(positions))
        core = (positions**2).sum(axis=1) < sigma**2
        exact = 2 * nu * positions[core] / sigma**2
        errors.append(np.abs(w[core] - exact).max() / np.abs(exact).max())
        outward = (w[core] * positions[core]).sum(axis=1)
        assert np.all(outward[np.abs(positions[core]).sum(axis=1) > 0] > 0)
    print(f"errors {errors}")
    assert errors[1] < 0.6 * errors[0] and errors[1] < 0.12


def test_the_diffusive_velocity_scales_with_viscosity_and_not_with_circulation():
    positions, gammas = _gaussian_blob(0.04, 0.2)
    radii = smoothing_radii(positions)
    base = diffusive_velocity(positions, gammas, 0.01, radii)
    assert np.allclose(diffusive_velocity(positions, 3 * gammas, 0.02, radii), 2 * base)
    assert np.allclose(diffusive_velocity(positions, -gammas, 0.01, radii), base)


def test_bad_diffusion_inputs_are_refused():
    positions, gammas = _gaussian_blob(0.1, 0.2)
    radii = smoothing_radii(positions)
    with pytest.raises(ConfigError, match="viscosity must be positive"):
        diffusive_velocity(positions, gammas, 0.0, radii)
    with pytest.raises(ConfigError, match="smoothing radius must be positive"):
        diffusive_velocity(positions, gammas, 0.01, 0 * radii)
    with pytest.raises(ConfigError, match="must describe the same elements"):
        diffusive_velocity(positions, gammas[:-1], 0.01, radii)
    with pytest.raises(ConfigError, match="more than 3 elements"):
        smoothing_radii(positions[:3])
