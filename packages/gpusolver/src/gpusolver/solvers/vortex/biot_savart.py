"""Biot-Savart velocities of 2D vortex elements with the smoothed core of the paper.

``V(x) = sum_i gamma_i / (2 pi) k x (x - r_i) / max(|x - r_i|^2, eps^2)`` (eq. 6 of
``vortex-methods-cuda``, without the free stream): a point vortex outside the core
radius ``eps``, solid-body rotation inside it. :func:`direct_velocity` is the NumPy
reference; on the CuPy backend the tiled kernels of ``kernels/biot_savart.cu`` sum the
same pairs: target by target at given points, and each pair once (both of its
interactions from one difference and one reciprocal) for the velocities at the elements
themselves. On NumPy the kernels also run compiled for the CPU, which is how CI tests them.
"""

from __future__ import annotations

import math

import numpy as np

from gpusolver.backends import PRECISIONS, Backend, get_backend
from gpusolver.backends.cuda import real_type
from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.tree import LEAF_SIZE, build_tree, kernel_tree_velocity, tree_velocity

#: Threads per block of the kernel, and sources per shared-memory tile.
TILE = 256
#: Targets per thread of the kernel (each source loaded from shared memory serves them all).
PER_THREAD = 2
#: Elements per thread of the pair kernel (velocities at the elements themselves).
PAIR_PER_THREAD = 4
#: Blocks the pair kernel aims at (a few per streaming multiprocessor of a large GPU).
PAIR_BLOCKS = 1024
#: Targets per chunk of the NumPy reference (bounds its temporaries to a few MB per source).
CHUNK = 1024
#: Velocity methods: every pair, or the Barnes-Hut tree of :mod:`.tree`.
METHODS = ("direct", "tree")


def direct_velocity(positions: np.ndarray, gammas: np.ndarray, eps: float,
                    targets: np.ndarray) -> np.ndarray:
    """The NumPy reference: every source-target pair, targets in chunks.

    Examples
    --------
    A unit vortex at the origin turns the point (1, 0) upwards at 1 / (2 pi):

    >>> v = direct_velocity(np.zeros((1, 2)), np.ones(1), 0.1, np.array([[1.0, 0.0]]))
    >>> (v + 0.0).round(6).tolist()  # + 0.0: no negative zero
    [[0.0, 0.159155]]
    """
    out = np.empty((len(targets), 2), dtype=np.result_type(positions, targets))
    eps2 = eps * eps
    for first in range(0, len(targets), CHUNK):
        chunk = targets[first:first + CHUNK]
        dx = chunk[:, None, 0] - positions[None, :, 0]
        dy = chunk[:, None, 1] - positions[None, :, 1]
        weight = gammas / np.maximum(dx * dx + dy * dy, eps2)
        out[first:first + CHUNK, 0] = -(weight * dy).sum(axis=1)
        out[first:first + CHUNK, 1] = (weight * dx).sum(axis=1)
    return out / (2 * math.pi)


def velocity(positions, gammas, eps: float, targets=None, *, method: str = "direct",
             backend: str | Backend = "numpy", precision: str = "fp64", theta: float = 0.5,
             terms: int = 16):
    """Velocities induced by vortex elements at ``targets`` (by default at the elements).

    Parameters
    ----------
    positions : array_like
        ``(N, 2)`` element positions.
    gammas : array_like
        ``(N,)`` circulations (counter-clockwise positive).
    eps : float
        Core radius (> 0): closer than ``eps`` the element turns like a solid body.
    targets : array_like, optional
        ``(M, 2)`` points; the elements themselves when omitted (an element induces
        nothing at its own centre).
    method : str
        ``direct`` (every pair) or ``tree`` (Barnes-Hut with multipole expansions,
        :mod:`gpusolver.solvers.vortex.tree`: the tree built by array code in fp64 on
        the backend, traversed by a kernel).
    backend : str or Backend
        ``numpy`` (the reference; the NumPy code in fp64, with ``precision="fp32"`` the
        kernel compiled for the CPU) or ``cupy`` (the CUDA kernels).
    precision : str
        ``fp64`` or ``fp32``.
    theta : float
        ``tree``: the accuracy parameter, in (0, 1): a box is taken as its expansion when
        its radius is below ``theta`` times its distance (smaller: more accurate, slower).
    terms : int
        ``tree``: coefficients of each box's multipole expansion.

    Returns
    -------
    array
        ``(M, 2)`` velocities, a NumPy array on ``numpy`` and a CuPy array on ``cupy``.

    Raises
    ------
    ConfigError
        On shapes that do not match, a core radius that is not positive, or an unknown
        method, backend or precision.

    Examples
    --------
    A pair of opposite vortices moves as one, at ``gamma / (2 pi d)``:

    >>> (velocity([[0.0, 0.0], [1.0, 0.0]], [1.0, -1.0], 0.05) + 0.0).round(4).tolist()
    [[0.0, 0.1592], [0.0, 0.1592]]
    """
    if method not in METHODS:
        raise ConfigError(f"unknown velocity method {method!r}; valid: {', '.join(METHODS)}")
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    if method == "tree" and not 0 < theta < 1:
        raise ConfigError(f"theta must lie in (0, 1), got {theta!r}")
    if method == "tree" and not (isinstance(terms, int) and terms >= 1):
        raise ConfigError(f"terms must be a positive integer, got {terms!r}")
    backend = get_backend(backend) if isinstance(backend, str) else backend
    xp, dtype = backend.xp, np.dtype(PRECISIONS[precision])
    positions = xp.ascontiguousarray(xp.asarray(positions, dtype=dtype))
    gammas = xp.ascontiguousarray(xp.asarray(gammas, dtype=dtype))
    at_elements = targets is None
    targets = positions if at_elements else xp.ascontiguousarray(xp.asarray(targets,
                                                                            dtype=dtype))
    _check(positions, gammas, eps, targets)
    if method == "tree":
        wide = [a.astype(np.float64) for a in (positions, gammas, targets)]
        if backend.name == "numpy" and dtype == np.float64:
            return tree_velocity(*wide[:2], float(eps), wide[2], theta, terms)
        tree = build_tree(*wide[:2], terms, LEAF_SIZE, backend)  # fp64, on the backend
        return kernel_tree_velocity(backend, tree, wide[2], float(eps), theta, dtype)
    if backend.name == "numpy" and dtype == np.float64:
        return direct_velocity(positions, gammas, float(eps), targets)
    if at_elements:
        return _pair_kernel_velocity(backend, positions, gammas, float(eps))
    return _kernel_velocity(backend, positions, gammas, float(eps), targets)


def _check(positions, gammas, eps: float, targets) -> None:
    if positions.ndim != 2 or positions.shape[1] != 2:
        raise ConfigError(f"positions must be (N, 2), got shape {tuple(positions.shape)}")
    if gammas.shape != (positions.shape[0],):
        raise ConfigError(f"gammas must be ({positions.shape[0]},) like the positions, got "
                          f"shape {tuple(gammas.shape)}")
    if targets.ndim != 2 or targets.shape[1] != 2:
        raise ConfigError(f"targets must be (M, 2), got shape {tuple(targets.shape)}")
    if not eps > 0:
        raise ConfigError(f"the core radius eps must be positive, got {eps!r}")


def _pair_kernel_velocity(backend: Backend, positions, gammas, eps: float):
    """The pair kernel: the velocities at the elements, each pair evaluated once."""
    real = positions.dtype.type
    name = f"pair_velocity_kernel<{real_type(positions.dtype)}, {TILE}, {PAIR_PER_THREAD}>"
    kernel = backend.kernels(__package__, "kernels/biot_savart.cu", (name,))[name]
    out = backend.xp.zeros((len(positions), 2), dtype=positions.dtype)
    n_tiles = max(1, -(-len(positions) // (TILE * PAIR_PER_THREAD)))
    # enough blocks to fill the GPU: a tile's partners shared among `splits` blocks
    splits = max(1, min(n_tiles // 2, -(-PAIR_BLOCKS // n_tiles)))
    kernel((n_tiles * splits,), (TILE,), (np.int32(len(positions)), positions, gammas,
                                          np.int32(n_tiles), np.int32(splits), real(eps * eps),
                                          real(1 / (2 * math.pi)), out))
    return out


def _kernel_velocity(backend: Backend, positions, gammas, eps: float, targets):
    """The tiled kernel (CUDA on CuPy, compiled for the CPU on NumPy)."""
    real = positions.dtype.type
    name = f"direct_velocity_kernel<{real_type(positions.dtype)}, {TILE}, {PER_THREAD}>"
    kernel = backend.kernels(__package__, "kernels/biot_savart.cu", (name,))[name]
    out = backend.xp.empty((len(targets), 2), dtype=positions.dtype)
    blocks = max(1, -(-len(targets) // (TILE * PER_THREAD)))
    kernel((blocks,), (TILE,), (np.int32(len(positions)), positions, gammas,
                                np.int32(len(targets)), targets, real(eps * eps),
                                real(1 / (2 * math.pi)), out))
    return out
