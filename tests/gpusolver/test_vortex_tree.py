"""The Barnes-Hut tree of the vortex method against exact velocities and the direct sum."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.backends import get_backend
from gpusolver.backends.host import compiler
from gpusolver.bench.vortex import cloud
from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex import diffusion, restructure
from gpusolver.solvers.vortex.biot_savart import direct_velocity
from gpusolver.solvers.vortex.tree import (
    COEFFICIENT_CHUNK,
    LEAF_SIZE,
    build_tree,
    coefficients,
    kernel_coefficients,
    kernel_tree_diffusion_sums,
    kernel_tree_partners,
    kernel_tree_velocity,
    tree_velocity,
)
from gpusolver.vortex import velocity


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    """Largest difference over the largest speed."""
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("kind", ["uniform", "wake"])
def test_the_tree_converges_to_the_direct_sum_as_theta_falls(kind):
    """Measured (4,000 elements, eps 1e-3, 16 terms): errors 1e-10 to 1e-5 for theta 0.3
    to 0.7; each bound is 10x the measured error on its seed's neighbours."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    positions, gammas = cloud(kind, 4000, seed)
    expected = direct_velocity(positions, gammas, 1e-3, positions)
    errors = [_error(tree_velocity(positions, gammas, 1e-3, positions, theta=theta), expected)
              for theta in (0.3, 0.5, 0.7)]
    print(f"errors {errors}")
    assert errors[0] < errors[1] < errors[2] < 3e-3
    assert errors[1] < 1e-4  # the accuracy at the default theta
    fewer = _error(tree_velocity(positions, gammas, 1e-3, positions, terms=6), expected)
    assert fewer > errors[1]


def test_a_lone_vortex_seen_from_far_is_its_expansion():
    """One element in a leaf whose centre is not the element: the expansion about the
    box centre reproduces the point vortex far away."""
    source = np.array([[0.3, -0.2]])
    angle = np.linspace(0, 2 * np.pi, 9)[:-1]
    for distance in (5.0, 50.0):
        targets = source + distance * np.column_stack([np.cos(angle), np.sin(angle)])
        got = tree_velocity(source, np.array([2.0]), 0.01, targets, leaf_size=1)
        tangent = np.column_stack([-np.sin(angle), np.cos(angle)])
        speed = 2.0 / (2 * math.pi * distance)
        np.testing.assert_allclose(got, speed * tangent, rtol=1e-12, atol=1e-12 * speed)


def test_a_far_vortex_pair_translates_at_the_exact_speed():
    """Each sees the other's leaf as its expansion; at theta 0.2 its error is ~0.2^16."""
    positions = np.array([[0.0, 0.0], [10.0, 0.0]])
    got = tree_velocity(positions, np.array([1.0, -1.0]), 0.01, positions, theta=0.2,
                        leaf_size=1)
    speed = 1 / (20 * math.pi)
    np.testing.assert_allclose(got, [[0.0, speed], [0.0, speed]], rtol=1e-10,
                               atol=1e-10 * speed)


def test_targets_inside_a_core_see_the_smoothed_kernel():
    """Targets within eps of elements are summed directly, as the direct sum does (the
    far field made exact to round-off by theta 0.2 and 24 terms)."""
    positions, gammas = cloud("uniform", 500, 3)
    targets = positions[:50] + 1e-4
    got = tree_velocity(positions, gammas, 0.05, targets, theta=0.2, terms=24)
    np.testing.assert_allclose(got, direct_velocity(positions, gammas, 0.05, targets),
                               rtol=1e-9, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.integers(1, 40))
def test_every_element_is_in_one_leaf_and_boxes_hold_their_children(seed, n, leaf_size):
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-1, 1, (n, 2)) * rng.uniform(0.01, 100)
    tree = build_tree(positions, rng.normal(size=n), 4, leaf_size)
    leaves = tree.child_count == 0
    covered = np.zeros(n, dtype=int)
    for first, count in zip(tree.first[leaves], tree.count[leaves], strict=True):
        covered[first:first + count] += 1
    assert (covered == 1).all()
    inner = np.flatnonzero(~leaves)
    for box in inner:
        children = slice(tree.child_first[box], tree.child_first[box] + tree.child_count[box])
        assert tree.count[children].sum() == tree.count[box]
        assert tree.first[children][0] == tree.first[box]
    # a box's radius bounds its sources' distances; a_0 is its total circulation
    assert np.allclose(tree.coefficients[0, 0], tree.gammas.sum())


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(-3, 3))
def test_the_tree_is_linear_in_the_circulations(seed, factor):
    positions, gammas = cloud("wake", 300, seed % 1000)
    other = np.random.default_rng(seed).normal(size=len(gammas))
    combined = tree_velocity(positions, gammas + factor * other, 1e-3, positions)
    apart = (tree_velocity(positions, gammas, 1e-3, positions)
             + factor * tree_velocity(positions, other, 1e-3, positions))
    np.testing.assert_allclose(combined, apart, rtol=1e-10, atol=1e-12)


def test_the_api_runs_the_tree_and_checks_its_parameters():
    positions, gammas = cloud("uniform", 800, 5)
    expected = velocity(positions, gammas, 1e-3)
    got = velocity(positions, gammas, 1e-3, method="tree", theta=0.4)
    assert got.shape == expected.shape and _error(got, expected) < 1e-6
    for bad, message in (({"theta": 1.0}, "theta must lie in"),
                         ({"terms": 0}, "terms must be a positive integer")):
        with pytest.raises(ConfigError, match=message):
            velocity(positions, gammas, 1e-3, method="tree", **bad)


KERNEL_BACKENDS = [
    pytest.param("numpy", marks=pytest.mark.skipif(compiler() is None,
                                                   reason="no C++ compiler")),
    pytest.param("cupy", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_coefficient_kernel_equals_the_array_code(backend, seed):
    """Boxes of 1 to 600 entries, many cut by the kernel's chunks of entries: the same
    coefficients as the array code to 1e-12 of the largest."""
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    sizes = rng.integers(1, 600, 40)
    box = np.repeat(np.arange(40), sizes)
    assert len(box) > 10 * COEFFICIENT_CHUNK
    z = rng.normal(size=300) + 1j * rng.normal(size=300)
    gamma = rng.normal(size=300)
    source = rng.integers(0, 300, len(box))
    centre = rng.normal(size=40) * 0.1 + 1j * rng.normal(size=40) * 0.1
    host = get_backend(backend)
    arrays = [host.asarray(a) for a in (z, gamma, source, box, centre)]
    want = coefficients(get_backend("numpy"), z, gamma, source, box, centre, 12)
    got = host.to_host(kernel_coefficients(host, *arrays, 12))
    assert np.abs(got - want).max() < 1e-12 * np.abs(want).max()


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("kind", ["uniform", "wake"])
def test_the_traversal_kernel_equals_the_numpy_tree(backend, kind):
    """The tree built by the backend's array code and walked by the kernel (compiled for
    the CPU, or CUDA) takes the same boxes as the NumPy traversal: fp64 to 1e-12; fp32 to
    1e-5 against the NumPy tree of the inputs rounded to fp32 (fp32 positions alone move
    close pairs' velocities by 5e-5 at eps 1e-3); at the elements and at other targets."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    positions, gammas = cloud(kind, 3000, seed)
    targets = np.random.default_rng(seed).uniform(-1.5, 1.5, (400, 2))
    host = get_backend(backend)
    tree = build_tree(host.asarray(positions), host.asarray(gammas), 16, LEAF_SIZE, host)
    for points in (positions, targets):  # the tree built and walked on the backend
        got = host.to_host(kernel_tree_velocity(host, tree, host.asarray(points), 1e-3, 0.5,
                                                np.float64))
        assert _error(got, tree_velocity(positions, gammas, 1e-3, points)) < 1e-12
    rounded = [a.astype(np.float32).astype(np.float64) for a in (positions, gammas)]
    single = host.to_host(velocity(positions, gammas, 1e-3, method="tree", backend=backend,
                                   precision="fp32"))
    assert single.dtype == np.float32
    assert _error(single, tree_velocity(*rounded, 1e-3, rounded[0])) < 1e-5


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize(("kind", "signs"), [("uniform", "same"), ("wake", "same"),
                                             ("wake", "any")])
def test_the_tree_gives_the_domain_radii_and_wake_sums_of_the_direct_rules(backend, kind,
                                                                           signs):
    """The viscous vortex domains' local sums by walking the tree (kernels compiled for
    the CPU, or CUDA) against the NumPy references (cKDTree radii, all-pairs wake sums),
    fp64: radii to 1e-12 and sums to 1e-12 of the largest; elements of both signs, with
    a floor on the radii and some coincident elements."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    positions, gammas = cloud(kind, 3000, seed)
    gammas = gammas * np.random.default_rng(seed).choice([-1.0, 1.0], len(gammas))
    positions[:20] = positions[20:40]  # coincident pairs: each other's nearest, no sum
    host = get_backend(backend)
    radii, i1, i2, wall_radii = (host.to_host(a) for a in kernel_tree_diffusion_sums(
        host, host.asarray(positions), host.asarray(gammas), 1e-3, diffusion.CUTOFF,
        np.float64, signs, leaf_size=16, wall_floor=1e-5))
    expected = diffusion.domain_radii(positions, 1e-3)
    np.testing.assert_allclose(radii, expected, rtol=1e-12)
    np.testing.assert_allclose(wall_radii, diffusion.domain_radii(positions, 1e-5), rtol=1e-12)
    want_i1, want_i2 = diffusion.wake_sums(positions, gammas, expected, signs)
    assert np.abs(i1 - want_i1).max() < 1e-12 * np.abs(want_i1).max()
    assert np.abs(i2 - want_i2).max() < 1e-12 * np.abs(want_i2).max()


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("signs", ["same", "any"])
def test_the_tree_finds_the_merging_partners_of_the_direct_rule(backend, signs):
    """Each element's partner (the lowest later element within its radius) by walking the
    tree equals the NumPy rule's, element for element."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    positions, gammas = cloud("wake", 3000, seed)
    gammas = gammas * rng.choice([-1.0, 1.0], len(gammas))
    radii = rng.uniform(0.002, 0.02, len(gammas))
    host = get_backend(backend)
    got = host.to_host(kernel_tree_partners(host, host.asarray(positions), host.asarray(gammas),
                                            host.asarray(radii), signs, leaf_size=16))
    want = restructure.partners(positions, gammas, radii, signs)
    assert (want >= 0).sum() > 100  # many pairs to find
    np.testing.assert_array_equal(got, want)
