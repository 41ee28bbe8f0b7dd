"""Space-filling-curve orders over vertex positions: Hilbert and Morton (Z-order)."""

import numpy as np

from . import OrderingInput, register


def quantise(coords: np.ndarray, bits: int) -> np.ndarray:
    """Map each coordinate axis onto integers ``0 .. 2**bits - 1`` (uint64)."""
    lo, hi = coords.min(axis=0), coords.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    scaled = (coords - lo) / span * (2**bits - 1)
    return np.rint(scaled).astype(np.uint64)


def _active_axes(coords: np.ndarray) -> np.ndarray:
    """Drop axes with no extent (z of a 2D mesh)."""
    keep = np.ptp(coords, axis=0) > 0
    return coords[:, keep] if keep.any() else coords[:, :1]


def morton_keys(coords: np.ndarray) -> np.ndarray:
    """Z-order key of each position: the axes' bits interleaved, most significant first."""
    coords = _active_axes(coords)
    dims = coords.shape[1]
    bits = 63 // dims
    q = quantise(coords, bits)
    key = np.zeros(len(coords), dtype=np.uint64)
    for bit in range(bits - 1, -1, -1):
        for axis in range(dims):
            key = (key << np.uint64(1)) | ((q[:, axis] >> np.uint64(bit)) & np.uint64(1))
    return key


def hilbert_keys(coords: np.ndarray) -> np.ndarray:
    """Hilbert-curve index of each position (Skilling's transpose algorithm, 2004)."""
    coords = _active_axes(coords)
    dims = coords.shape[1]
    bits = 63 // dims
    x = [col.copy() for col in quantise(coords, bits).T]
    one = np.uint64(1)
    q = one << np.uint64(bits - 1)
    while q > one:  # undo excess work: inverse the Gray-coded rotations
        p = q - one
        for i in range(dims):
            high = (x[i] & q) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])
            t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)
            x[0] ^= t
            x[i] ^= t
        q >>= one
    for i in range(1, dims):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros(len(coords), dtype=np.uint64)
    q = one << np.uint64(bits - 1)
    while q > one:
        t = np.where((x[dims - 1] & q) != 0, t ^ (q - one), t)
        q >>= one
    for i in range(dims):
        x[i] ^= t
    key = np.zeros(len(coords), dtype=np.uint64)
    for bit in range(bits - 1, -1, -1):
        for axis in range(dims):
            key = (key << one) | ((x[axis] >> np.uint64(bit)) & one)
    return key


@register("hilbert")
def hilbert_order(data: OrderingInput) -> np.ndarray:
    """Vertices sorted along a Hilbert curve through their positions."""
    return np.argsort(hilbert_keys(data.coords), kind="stable").astype(np.int64)


@register("morton")
def morton_order(data: OrderingInput) -> np.ndarray:
    """Vertices sorted along a Morton (Z-order) curve through their positions."""
    return np.argsort(morton_keys(data.coords), kind="stable").astype(np.int64)
