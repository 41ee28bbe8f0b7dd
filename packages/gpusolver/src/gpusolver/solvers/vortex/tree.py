"""Biot-Savart velocities by a Barnes-Hut tree with complex multipole expansions.

In complex form the far field of a point vortex is ``u - i v = gamma / (2 pi i (z - z_k))``
(``z = x + i y``), so a box of sources with centre ``c`` acts on a distant target as

    sum_k gamma_k / (z - z_k) = sum_{m >= 0} a_m / (z - c)^(m + 1),
    a_m = sum_k gamma_k (z_k - c)^m,

truncated after ``terms`` coefficients: the error of a box of radius ``R`` (its sources'
largest distance from ``c``) seen from distance ``d`` falls like ``(R / d)^terms``.

The tree is a quadtree of the sources' bounding square, refined where a box holds more than
``leaf_size`` sources (Morton order: every box is a contiguous run of the sorted sources).
For each target the traversal starts at the root and, box by box: takes the expansion when
``R < theta d`` and every source lies beyond the core radius (``d - R > eps``, where the
smoothed kernel equals the point vortex's), sums a leaf's sources directly otherwise (the
smoothed core of :func:`~gpusolver.solvers.vortex.biot_savart.direct_velocity`), and opens the
box into its children when it is no leaf. ``theta`` is the accuracy parameter: smaller is
more accurate and slower. Vectorised over (target, box) pairs, targets in chunks: the
NumPy reference of the tree method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpusolver.backends import Backend, array_module, get_backend

#: Levels of the quadtree at most (16 bits per coordinate in the Morton codes).
DEPTH = 16
#: Targets per chunk of the traversal (bounds its (target, box) pair arrays).
CHUNK = 4096
#: Sources a box holds at most before it is split.
LEAF_SIZE = 32


@dataclass(frozen=True)
class Tree:
    """A quadtree of sources with the multipole coefficients of every box.

    Boxes are numbered level by level; children of a box are consecutive.

    Attributes
    ----------
    positions : numpy.ndarray
        ``(N,)`` complex source positions in Morton order.
    order : numpy.ndarray
        ``(N,)`` the sources' numbers as given, in that order (``positions`` is the given
        positions at ``order``).
    gammas : numpy.ndarray
        ``(N,)`` circulations in the same order.
    centre, radius : numpy.ndarray
        Per box: its square's centre (complex) and its sources' largest distance from it.
    first, count : numpy.ndarray
        Per box: its sources, ``positions[first:first + count]``.
    child_first, child_count : numpy.ndarray
        Per box: its children (``child_count`` 0: a leaf).
    coefficients : numpy.ndarray
        ``(n_boxes, terms)`` complex ``a_m``.
    lo : numpy.ndarray
        The lower corner of the root square.
    size : float
        The root square's side.
    """

    positions: np.ndarray
    order: np.ndarray
    gammas: np.ndarray
    centre: np.ndarray
    radius: np.ndarray
    first: np.ndarray
    count: np.ndarray
    child_first: np.ndarray
    child_count: np.ndarray
    coefficients: np.ndarray
    lo: np.ndarray
    size: float

    def morton_order(self, points):
        """The order of ``points`` ``(M, 2)`` along the tree's Morton curve (points
        outside the root square clamped to its edge); NumPy or CuPy like ``points``."""
        xp = array_module(points)
        return xp.argsort(_morton_codes(points, self.lo, self.size), kind="stable")


def _morton_codes(points, lo, size: float):
    """Interleaved cell indices of ``points`` on the finest grid of the root square."""
    xp = array_module(points)
    cells = xp.clip(xp.floor((points - lo) / size * (1 << DEPTH)), 0,
                    (1 << DEPTH) - 1).astype(np.int64)
    return _spread_bits(cells[:, 0]) | (_spread_bits(cells[:, 1]) << 1)


def _spread_bits(values):
    """Put the 16 low bits of each value at the even bit positions (Morton interleave)."""
    v = values.astype(np.int64) & 0xFFFF
    for shift, mask in ((8, 0x00FF00FF), (4, 0x0F0F0F0F), (2, 0x33333333), (1, 0x55555555)):
        v = (v | (v << shift)) & mask
    return v


def build_tree(positions, gammas, terms: int, leaf_size: int,
               backend: Backend | None = None) -> Tree:
    """The quadtree of ``positions`` ``(N, 2)`` with ``gammas`` (see the module docstring).

    The same array code builds it with NumPy and on the GPU with CuPy (``backend``;
    NumPy by default; the arrays are that backend's, fp64): Morton sort, then level by
    level each box that holds more than ``leaf_size`` sources is split, and each source
    is listed once per box that holds it, for the radii and the coefficients
    (``terms`` 0: none, for the local sums of :func:`kernel_tree_diffusion_sums`).
    """
    backend = backend or get_backend("numpy")
    xp = backend.xp
    lo = positions.min(axis=0)
    size = float((positions.max(axis=0) - lo).max()) or 1.0
    size *= 1.0 + 1e-9  # the largest coordinate stays inside the last cell
    codes = _morton_codes(positions, lo, size)
    order = xp.argsort(codes, kind="stable")
    codes = codes[order]
    z = positions[order, 0] + 1j * positions[order, 1]
    gamma = gammas[order]
    levels = []  # per level: (prefix, first, count, centre)
    members = []  # per level: (source, its box in the level) for every source in a box
    active = xp.arange(len(z))  # sources in boxes that are no leaf yet
    for level in range(DEPTH + 1):
        prefix = codes[active] >> (2 * (DEPTH - level))
        is_start = xp.ones(len(prefix), dtype=bool)
        is_start[1:] = prefix[1:] != prefix[:-1]
        starts = xp.flatnonzero(is_start)
        counts = xp.diff(xp.concatenate([starts, xp.asarray([len(active)])]))
        box_prefix = prefix[starts]
        width = size / (1 << level)
        ix = _compact_bits(box_prefix)
        iy = _compact_bits(box_prefix >> 1)
        centre = (lo[0] + (ix + 0.5) * width) + 1j * (lo[1] + (iy + 0.5) * width)
        levels.append((box_prefix, active[starts], counts, centre))
        box_of = xp.cumsum(is_start) - 1
        members.append((active, box_of))
        split = counts > leaf_size
        if level == DEPTH or not bool(split.any()):
            break
        active = active[split[box_of]]
    return _assemble(backend, z, order, gamma, levels, members, terms, lo, size)


def _compact_bits(values):
    """The inverse of :func:`_spread_bits`: the even bits of each value, packed."""
    v = values.astype(np.int64) & 0x55555555
    for shift, mask in ((1, 0x33333333), (2, 0x0F0F0F0F), (4, 0x00FF00FF), (8, 0x0000FFFF)):
        v = (v | (v >> shift)) & mask
    return v


def _assemble(backend: Backend, z, order, gamma, levels, members, terms: int, lo,
              size: float) -> Tree:
    """Boxes of all levels in one numbering, their children, radii and coefficients."""
    xp = backend.xp
    offsets = np.cumsum([0] + [len(level[0]) for level in levels])
    n_boxes = int(offsets[-1])
    first = xp.concatenate([level[1] for level in levels])
    count = xp.concatenate([level[2] for level in levels])
    centre = xp.concatenate([level[3] for level in levels])
    child_first = xp.zeros(n_boxes, dtype=np.int64)
    child_count = xp.zeros(n_boxes, dtype=np.int64)
    for k in range(len(levels) - 1):
        parent_prefix, children = levels[k][0], levels[k + 1][0]
        parent = xp.searchsorted(parent_prefix, children >> 2)
        ones = xp.bincount(parent, minlength=len(parent_prefix))
        starts = xp.searchsorted(parent, xp.arange(len(parent_prefix)))
        has = xp.flatnonzero(ones > 0)
        child_first[offsets[k] + has] = offsets[k + 1] + starts[has]
        child_count[offsets[k]:offsets[k + 1]] = ones
    source = xp.concatenate([active for active, _ in members])
    box = xp.concatenate([int(offsets[k]) + box_of for k, (_, box_of) in enumerate(members)])
    radius = xp.zeros(n_boxes)
    backend.scatter["max"](radius, box, xp.abs(z[source] - centre[box]))
    make = coefficients if backend.name == "numpy" else kernel_coefficients
    return Tree(z, order, gamma, centre, radius, first, count, child_first, child_count,
                make(backend, z, gamma, source, box, centre, terms) if terms
                else xp.zeros((n_boxes, 0), dtype=complex), lo, size)


def coefficients(backend: Backend, z, gamma, source, box, centre, terms: int):
    """``(n_boxes, terms)`` complex ``a_m = sum_k gamma_k (z_k - c)^m`` of every box, from
    the ``(source, box)`` entries that list each source once per box holding it (array
    code: the NumPy reference of :func:`kernel_coefficients`)."""
    xp = backend.xp
    n_boxes = len(centre)
    offset = z[source] - centre[box]
    out = xp.empty((n_boxes, terms), dtype=complex)
    power = gamma[source].astype(complex)
    for m in range(terms):
        out[:, m] = (xp.bincount(box, power.real, n_boxes)
                     + 1j * xp.bincount(box, power.imag, n_boxes))
        power = power * offset
    return out


def _pairs(values):
    """Complex ``values`` as C-contiguous (re, im) pairs along a last axis, as the kernels
    take them."""
    xp = array_module(values)
    return xp.ascontiguousarray(xp.stack([values.real, values.imag], axis=-1))


#: Entries per thread of :func:`kernel_coefficients`.
COEFFICIENT_CHUNK = 256


def kernel_coefficients(backend: Backend, z, gamma, source, box, centre, terms: int):
    """:func:`coefficients` by ``tree_coefficients_kernel`` of ``kernels/tree.cu`` (CUDA on
    CuPy, compiled for the CPU on NumPy): one thread per run of entries, summing in
    registers, fp64."""
    from gpusolver.backends.cuda import grid

    xp = backend.xp
    name = f"tree_coefficients_kernel<{terms}>"
    kernel = backend.kernels(__package__, "kernels/tree.cu", (name,))[name]
    out = xp.zeros((len(centre), terms, 2))
    n = len(source)
    block = 128
    kernel(grid(-(-n // COEFFICIENT_CHUNK), block), (block,),
           (np.int64(n), np.int32(COEFFICIENT_CHUNK), xp.ascontiguousarray(source, np.int64),
            xp.ascontiguousarray(box, np.int64), _pairs(z), xp.ascontiguousarray(gamma, float),
            _pairs(centre), out))
    return out[..., 0] + 1j * out[..., 1]


def _ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + c) for a, c in zip(first, count)])``, vectorised."""
    total = int(count.sum())
    starts = np.repeat(first - np.r_[0, np.cumsum(count)[:-1]], count)
    return starts + np.arange(total)


def tree_velocity(positions: np.ndarray, gammas: np.ndarray, eps: float, targets: np.ndarray,
                  theta: float = 0.5, terms: int = 16, leaf_size: int = LEAF_SIZE) -> np.ndarray:
    """Velocities ``(M, 2)`` at ``targets`` by the tree (see the module docstring).

    Examples
    --------
    Two vortices far apart, the tree's expansion against the exact pair speed (the
    default theta: six digits; theta 0.2: twelve):

    >>> pair, gammas = np.array([[0.0, 0.0], [10.0, 0.0]]), np.array([1.0, -1.0])
    >>> target = np.array([[0.0, 0.0]])
    >>> for theta in (0.5, 0.2):
    ...     v = tree_velocity(pair, gammas, 0.01, target, theta=theta, leaf_size=1)
    ...     print(f"{float(v[0, 1]) * 2 * math.pi * 10:.12f}")
    0.999998919750
    1.000000000000
    """
    tree = build_tree(positions, gammas, terms, leaf_size)
    zt = targets[:, 0] + 1j * targets[:, 1]
    total = np.zeros(len(zt), dtype=complex)
    for begin in range(0, len(zt), CHUNK):
        total[begin:begin + CHUNK] = _traverse(tree, zt[begin:begin + CHUNK], eps, theta)
    # u - i v = total / (2 pi i)
    return np.stack([total.imag, total.real], axis=1) / (2 * math.pi)


def _traverse(tree: Tree, zt: np.ndarray, eps: float, theta: float) -> np.ndarray:
    """``sum_k gamma_k / (z - z_k)`` (smoothed within ``eps``) at each target of ``zt``."""
    out_re = np.zeros(len(zt))
    out_im = np.zeros(len(zt))
    target = np.arange(len(zt))
    box = np.zeros(len(zt), dtype=np.int64)
    eps2 = eps * eps
    while len(target):
        dz = zt[target] - tree.centre[box]
        distance = np.abs(dz)
        radius = tree.radius[box]
        far = (radius < theta * distance) & (distance - radius > eps)
        if far.any():
            w = 1.0 / dz[far]
            a = tree.coefficients[box[far]]
            series = a[:, -1]
            for m in range(a.shape[1] - 2, -1, -1):
                series = series * w + a[:, m]
            series = series * w
            out_re += np.bincount(target[far], series.real, len(zt))
            out_im += np.bincount(target[far], series.imag, len(zt))
        near = ~far
        leaf = near & (tree.child_count[box] == 0)
        if leaf.any():
            pair_target = np.repeat(target[leaf], tree.count[box[leaf]])
            pair_source = _ranges(tree.first[box[leaf]], tree.count[box[leaf]])
            d = zt[pair_target] - tree.positions[pair_source]
            weight = tree.gammas[pair_source] / np.maximum(d.real ** 2 + d.imag ** 2, eps2)
            # gamma / (z - z_k) = gamma conj(z - z_k) / |z - z_k|^2, smoothed in the core
            out_re += np.bincount(pair_target, weight * d.real, len(zt))
            out_im -= np.bincount(pair_target, weight * d.imag, len(zt))
        inner = near & (tree.child_count[box] > 0)
        counts = tree.child_count[box[inner]]
        target = np.repeat(target[inner], counts)
        box = _ranges(tree.child_first[box[inner]], counts)
    return out_re + 1j * out_im


def _tree_arrays(xp, tree: Tree, dtype) -> tuple:
    """The tree's boxes as the kernels of ``kernels/tree.cu`` take them: centres, radii
    (``dtype``), first source, count, first child, child count (int32)."""
    def cast(array, kind):
        return xp.ascontiguousarray(array.astype(kind))

    int32 = np.int32
    return (cast(_pairs(tree.centre), dtype), cast(tree.radius, dtype),
            cast(tree.first, int32), cast(tree.count, int32),
            cast(tree.child_first, int32), cast(tree.child_count, int32))


def kernel_tree_diffusion_sums(backend: Backend, positions, gammas, floor: float,
                               cutoff: float, dtype, signs: str = "same",
                               leaf_size: int = LEAF_SIZE,
                               wall_floor: float | None = None) -> tuple:
    """The viscous vortex domains' radii ``(N,)`` and wake sums ``I1`` ``(N,)``, ``I2``
    ``(N, 2)`` (:func:`~gpusolver.solvers.vortex.diffusion.domain_radii` and
    :func:`~gpusolver.solvers.vortex.diffusion.wake_sums`: equal up to the order of the
    sums; ``signs`` as there) by walking a quadtree of the elements
    (``tree_domain_radii_kernel`` and ``tree_wake_sums_kernel`` of ``kernels/tree.cu``;
    CUDA on CuPy, compiled for the CPU on NumPy) in ``dtype``: each element visits only
    the boxes that can hold its three nearest or its neighbours within ``cutoff`` radii,
    ``O(N log N)`` instead of the direct kernels' ``O(N^2)``.

    Returns ``(radii, i1, i2, wall_radii)``: the radii at least ``floor`` (those of the
    sums) and the same radii at least ``wall_floor`` (at most ``floor``; default
    ``floor``) instead, which the wall's vorticity takes
    (:class:`~gpusolver.solvers.vortex.solver.VortexSolver`).
    """
    from gpusolver.backends.cuda import grid, real_type

    xp = backend.xp
    names = tuple(f"{kernel}<{real_type(dtype)}>"
                  for kernel in ("tree_domain_radii_kernel", "tree_wake_sums_kernel"))
    kernels = backend.kernels(__package__, "kernels/tree.cu", names)
    positions = xp.asarray(positions, dtype=np.float64)
    tree = build_tree(positions, xp.asarray(gammas, dtype=np.float64), 0, leaf_size, backend)
    boxes = _tree_arrays(xp, tree, dtype)
    sources = xp.ascontiguousarray(_pairs(tree.positions).astype(dtype))
    real = np.dtype(dtype).type
    n, block = len(positions), 128
    wall_radii = xp.empty(n, dtype=dtype)
    kernels[names[0]](grid(n, block), (block,),
                      (np.int32(n), *boxes, sources,
                       real(floor if wall_floor is None else wall_floor), wall_radii))
    radii = xp.maximum(wall_radii, real(floor))
    i1, i2 = xp.empty(n, dtype=dtype), xp.empty((n, 2), dtype=dtype)
    kernels[names[1]](grid(n, block), (block,),
                      (np.int32(n), *boxes, sources,
                       xp.ascontiguousarray(tree.gammas.astype(dtype)), radii, real(cutoff),
                       np.int32(signs == "any"), i1, i2))
    out = tuple(xp.empty_like(a) for a in (radii, i1, i2, wall_radii))
    for unsorted, value in zip(out, (radii, i1, i2, wall_radii), strict=True):
        unsorted[tree.order] = value
    return out


def kernel_tree_partners(backend: Backend, positions, gammas, radii, signs: str = "same",
                         leaf_size: int = LEAF_SIZE):
    """Merging's partners (:func:`~gpusolver.solvers.vortex.restructure.partners`: each
    element's lowest-numbered later element within its radius, -1 if none; the same
    pairs) by walking a quadtree of the elements (``tree_partners_kernel``; CUDA on CuPy,
    compiled for the CPU on NumPy), fp64."""
    from gpusolver.backends.cuda import grid

    xp = backend.xp
    name = "tree_partners_kernel"
    kernel = backend.kernels(__package__, "kernels/tree.cu", (name,))[name]
    positions = xp.asarray(positions, dtype=np.float64)
    tree = build_tree(positions, xp.asarray(gammas, dtype=np.float64), 0, leaf_size, backend)
    n, block = len(positions), 128
    partner = xp.empty(n, dtype=np.int64)
    kernel(grid(n, block), (block,),
           (np.int32(n), *_tree_arrays(xp, tree, np.float64),
            xp.ascontiguousarray(_pairs(tree.positions)), xp.ascontiguousarray(tree.gammas),
            xp.ascontiguousarray(tree.order.astype(np.int64)),
            xp.ascontiguousarray(xp.asarray(radii, dtype=np.float64)[tree.order]),
            np.int32(signs == "any"), partner))
    return partner


def kernel_tree_velocity(backend: Backend, tree: Tree, targets, eps: float, theta: float,
                         dtype) -> object:
    """Velocities ``(M, 2)`` at ``targets`` by the traversal kernel of ``kernels/tree.cu``
    (CUDA on CuPy, compiled for the CPU on NumPy) in ``dtype``, on ``tree`` (built by
    :func:`build_tree` on the same backend; ``targets`` that backend's array too). The
    targets run in the tree's Morton order; the result is in theirs."""
    from gpusolver.backends.cuda import real_type

    xp = backend.xp
    terms = tree.coefficients.shape[1]
    name = f"tree_velocity_kernel<{real_type(dtype)}, {terms}>"
    kernel = backend.kernels(__package__, "kernels/tree.cu", (name,))[name]
    order = tree.morton_order(targets)

    def cast(array, kind=dtype):
        return xp.ascontiguousarray(array.astype(kind))

    arguments = (cast(targets[order]), *_tree_arrays(xp, tree, dtype),
                 cast(_pairs(tree.coefficients)), cast(_pairs(tree.positions)),
                 cast(tree.gammas))
    real = np.dtype(dtype).type
    out = xp.empty((len(targets), 2), dtype=dtype)
    block = 128
    kernel(((len(targets) + block - 1) // block,), (block,),
           (np.int32(len(targets)), *arguments, real(eps), real(theta),
            real(1 / (2 * math.pi)), out))
    result = xp.empty_like(out)
    result[order] = out
    return result

