"""Diffusive velocities of the viscous vortex domains: exact diffusion, the body's terms,
and the kernels against the NumPy reference."""

import math

import numpy as np
import pytest

from gpusolver.backends import get_backend
from gpusolver.backends.host import compiler
from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex import device
from gpusolver.solvers.vortex.body import Body, circle, naca_airfoil
from gpusolver.solvers.vortex.diffusion import (
    diffusive_velocity,
    domain_radii,
    surface_sums,
    wake_sums,
    wall_vorticity,
)

needs_compiler = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")


def _gaussian_blob(h: float, sigma: float):
    """Elements on a square lattice of spacing ``h`` carrying exp(-r^2 / sigma^2)."""
    axis = np.arange(-4 * sigma, 4 * sigma + h / 2, h)
    positions = np.stack(np.meshgrid(axis, axis), -1).reshape(-1, 2)
    r2 = (positions**2).sum(axis=1)
    return positions, np.exp(-r2 / sigma**2) * h * h


def test_a_gaussian_spreads_at_the_exact_diffusive_velocity_as_the_spacing_shrinks():
    # -nu grad(Omega) / Omega = 2 nu r / sigma^2, radially outwards; smoothing over a few
    # neighbours errs by some percent on a lattice, less as the spacing shrinks
    sigma, nu = 0.2, 0.01
    errors = []
    for h in (0.04, 0.02):
        positions, gammas = _gaussian_blob(h, sigma)
        w = diffusive_velocity(positions, gammas, nu, domain_radii(positions))
        core = (positions**2).sum(axis=1) < sigma**2
        exact = 2 * nu * positions[core] / sigma**2
        errors.append(np.abs(w[core] - exact).max() / np.abs(exact).max())
        outward = (w[core] * positions[core]).sum(axis=1)
        assert np.all(outward[np.abs(positions[core]).sum(axis=1) > 0] > 0)
    print(f"errors {errors}")
    assert errors[1] < 0.8 * errors[0] and errors[1] < 0.06


def _spread(positions, gammas, nu, dt, steps, body=None, axis=None, measured=None):
    """Move the elements by their diffusive velocities for ``steps``; the growth of the
    circulation-weighted second moment (of coordinate ``axis``, or of ``|r|^2``) of the
    ``measured`` elements (all by default), and the final positions."""
    measured = np.ones(len(gammas), dtype=bool) if measured is None else measured

    def moment(p):
        squared = (p**2).sum(axis=1) if axis is None else p[:, axis] ** 2
        return (gammas * squared)[measured].sum() / gammas[measured].sum()

    start = moment(positions)
    for _ in range(steps):
        positions = positions + dt * diffusive_velocity(positions, gammas, nu,
                                                        domain_radii(positions), body)
    return moment(positions) - start, positions


def test_a_gaussian_spreads_at_the_viscosity():
    # the second moment of a diffusing patch grows at exactly 4 nu t in the plane
    positions, gammas = _gaussian_blob(0.01, 0.07)
    keep = gammas > 1e-4 * gammas.max()
    growth, _ = _spread(positions[keep], gammas[keep], 1e-3, 0.05, 20)
    print(f"growth / (4 nu t) = {growth / 4e-3:.3f}")
    assert growth == pytest.approx(4e-3, rel=0.03)


def test_a_half_gaussian_on_a_wall_spreads_at_the_viscosity_and_stays_out():
    # vorticity exp(-y^2 / 2 sigma^2) over a long wall (the top face y = 0 of a box), its
    # first row a tenth of a spacing off the wall: with no flux through the wall, <y^2>
    # grows at 2 nu t (measured away from the patch's ends) and no element crosses it
    h = 0.01
    x = np.arange(-1.0, 1.0 + h / 2, h)
    body = Body(np.concatenate([np.column_stack([x, np.full_like(x, -0.2)]),
                                np.column_stack([x[::-1], np.zeros_like(x)])]))
    grid = np.stack(np.meshgrid(np.arange(-0.4, 0.4 + h / 2, h),
                                np.arange(0.1 * h, 0.3, h)), -1).reshape(-1, 2)
    gammas = np.exp(-grid[:, 1] ** 2 / (2 * 0.05**2)) * h * h
    keep = gammas > 1e-4 * gammas.max()
    positions, gammas = grid[keep], gammas[keep]
    growth, moved = _spread(positions, gammas, 1e-3, 0.05, 20, body, axis=1,
                            measured=np.abs(positions[:, 0]) < 0.2)
    print(f"growth / (2 nu t) = {growth / 2e-3:.3f}, lowest element {moved[:, 1].min():.4f}")
    assert growth == pytest.approx(2e-3, rel=0.03)
    assert moved[:, 1].min() > 0


def test_the_diffusive_velocity_scales_with_viscosity_and_not_with_circulation():
    positions, gammas = _gaussian_blob(0.04, 0.2)
    radii = domain_radii(positions)
    base = diffusive_velocity(positions, gammas, 0.01, radii)
    assert np.allclose(diffusive_velocity(positions, 3 * gammas, 0.02, radii), 2 * base)
    assert np.allclose(diffusive_velocity(positions, -gammas, 0.01, radii), base)


def test_each_sign_diffuses_on_its_own():
    # a positive blob beside a negative one: each spreads as if the other were absent
    positions, gammas = _gaussian_blob(0.04, 0.2)
    shifted = positions + np.array([5.0, 0.0])
    both = diffusive_velocity(np.vstack([positions, shifted]),
                              np.concatenate([gammas, -gammas]), 0.01,
                              domain_radii(np.vstack([positions, shifted])))
    alone = diffusive_velocity(positions, gammas, 0.01, domain_radii(positions))
    assert np.allclose(both[:len(gammas)], alone, atol=1e-14)


def test_summing_any_sign_drives_opposite_vorticity_together():
    # a positive lattice touching a negative one along x = 0: summing any sign follows the
    # smoothed vorticity, which falls to zero at the seam, so the seam's elements move
    # towards it faster than their own sign's spreading moves them; one sign alone: equal
    h = 0.02
    axis = np.arange(-0.2, 0.2 + h / 2, h)
    positions = np.stack(np.meshgrid(axis + h / 2, axis), -1).reshape(-1, 2)
    positions = np.vstack([positions, positions * [-1.0, 1.0]])
    gammas = np.where(positions[:, 0] > 0, 1.0, -1.0) * h * h
    radii = domain_radii(positions)
    same = diffusive_velocity(positions, gammas, 0.01, radii, signs="same")
    mixed = diffusive_velocity(positions, gammas, 0.01, radii, signs="any")
    seam = (np.abs(positions[:, 0]) < h) & (np.abs(positions[:, 1]) < 0.1)
    towards = -np.sign(positions[seam, 0])
    assert np.all(mixed[seam, 0] * towards > 2 * np.abs(same[seam, 0]))
    positive = gammas > 0
    assert np.allclose(diffusive_velocity(positions[positive], gammas[positive], 0.01,
                                          radii[positive], signs="any"),
                       diffusive_velocity(positions[positive], gammas[positive], 0.01,
                                          radii[positive], signs="same"), atol=1e-15)


def test_the_flow_area_integral_is_the_kernels_integral_outside_the_body():
    # I0 against a fine quadrature of exp(-|r - x| / eps) over the plane less the disc
    body = circle(400, 0.5)
    axis = np.linspace(-0.8, 0.8, 1601)
    x, y = np.meshgrid(axis, axis)
    cell = (axis[1] - axis[0]) ** 2
    outside = np.hypot(x, y) > 0.5
    for point in ([0.52, 0.0], [0.6, 0.1], [0.0, 0.55]):
        eps = 0.02
        kernel = np.exp(-np.hypot(x - point[0], y - point[1]) / eps)
        exact = (kernel * outside).sum() * cell
        i0, _ = surface_sums(np.array([point]), np.array([eps]), body)
        assert i0[0] == pytest.approx(exact, rel=5e-3)


def test_the_surface_term_is_the_gradient_of_the_flow_area_integral():
    # I3 = grad I0 (the divergence theorem), checked by central differences off a wing
    body = naca_airfoil("2412", 200)
    eps, h = 0.03, 1e-5
    for point in ([0.3, 0.1], [0.7, -0.05], [-0.02, 0.01]):
        point = np.array(point)
        _, i3 = surface_sums(point[None], np.array([eps]), body)
        grad = [(surface_sums((point + h * e)[None], np.array([eps]), body)[0][0]
                 - surface_sums((point - h * e)[None], np.array([eps]), body)[0][0]) / (2 * h)
                for e in np.eye(2)]
        assert np.allclose(i3[0], grad, rtol=2e-2, atol=1e-3 * eps)


def test_an_element_on_a_wall_is_pushed_into_the_flow_at_2_nu_over_pi_eps():
    # half the kernel lies in the wall; the panel (16 radii long) is its whole line integral
    body = circle(400, 1.0)
    eps, nu = 0.001, 1e-4
    point = body.midpoints[:1] + 1e-7 * body.normals[:1]
    i0, i3 = surface_sums(point, np.array([eps]), body)
    assert i0[0] == pytest.approx(math.pi * eps**2)
    w = nu * i3[0] / i0[0]
    assert np.allclose(w, 2 * nu / (math.pi * eps) * body.normals[0], rtol=1e-3)


@needs_compiler
@pytest.mark.parametrize("chunk", [device.CHUNK, device.BLOCK])
def test_the_kernels_equal_the_numpy_sums(chunk, monkeypatch):
    # one chunk of sources, or three (their partial sums and nearest distances merged)
    monkeypatch.setattr(device, "CHUNK", chunk)
    rng = np.random.default_rng(7)
    print("seed 7")
    body = naca_airfoil("0012", 80)
    positions = np.column_stack([rng.uniform(-0.1, 1.5, 300), rng.normal(0, 0.05, 300)])
    gammas = rng.normal(size=300) * 1e-3  # some beyond the body's reach: they skip it
    backend = get_backend("numpy")
    radii = domain_radii(positions, 0.002)
    assert np.allclose(device.domain_radii(backend, positions, 0.002), radii, rtol=1e-12)
    for signs in ("same", "any"):
        i1, i2 = wake_sums(positions, gammas, radii, signs)
        k1, k2 = device.wake_sums(backend, positions, gammas, radii, signs)
        assert np.allclose(k1, i1, rtol=1e-12, atol=1e-12 * np.abs(i1).max())
        assert np.allclose(k2, i2, rtol=1e-12, atol=1e-12 * np.abs(i2).max())
    i0, i3 = surface_sums(positions, radii, body)
    k0, k3 = device.surface_sums(backend, positions, radii,
                                 device.BodyArrays(backend, body, np.float64))
    assert np.allclose(k0, i0, rtol=1e-12, atol=1e-12 * np.abs(i0).max())
    assert np.allclose(k3, i3, rtol=1e-12, atol=1e-12 * np.abs(i3).max())
    wall = wall_vorticity(positions, gammas, radii, i0, body)
    assert np.allclose(device.surface_sums(backend, positions, radii,
                                           device.BodyArrays(backend, body, np.float64),
                                           gammas)[2],
                       wall, rtol=1e-12, atol=1e-12 * np.abs(wall).max())


def test_bad_diffusion_inputs_are_refused():
    positions, gammas = _gaussian_blob(0.1, 0.2)
    radii = domain_radii(positions)
    with pytest.raises(ConfigError, match="viscosity must be positive"):
        diffusive_velocity(positions, gammas, 0.0, radii)
    with pytest.raises(ConfigError, match="domain radius must be positive"):
        diffusive_velocity(positions, gammas, 0.01, 0 * radii)
    with pytest.raises(ConfigError, match="must describe the same elements"):
        diffusive_velocity(positions, gammas[:-1], 0.01, radii)
    with pytest.raises(ConfigError, match="more than 3 elements"):
        domain_radii(positions[:3])
