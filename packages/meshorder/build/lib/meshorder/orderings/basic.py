"""Reference orderings: the file's own order and a seeded random shuffle."""

import numpy as np

from . import OrderingInput, register


@register("native")
def native_order(data: OrderingInput) -> np.ndarray:
    """The order the vertices have in the file."""
    return np.arange(data.n, dtype=np.int64)


@register("random")
def random_order(data: OrderingInput, *, seed: int = 0) -> np.ndarray:
    """A uniformly random permutation, reproducible from ``seed``."""
    return np.random.default_rng(seed).permutation(data.n).astype(np.int64)
