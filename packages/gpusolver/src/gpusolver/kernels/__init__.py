"""CUDA kernels: sources shipped as ``.cu`` files, compiled lazily by CuPy.

Only this package's CuPy backend imports CuPy; nothing here runs at import time.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import numpy as np

SUFFIX = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32"}


@cache
def _module(filename: str):
    import cupy

    source = resources.files(__package__).joinpath(filename).read_text()
    return cupy.RawModule(code=source, options=("-std=c++17",))


def kernel(filename: str, name: str, dtype: np.dtype):
    """The compiled ``<name>_<f32|f64>`` kernel of ``filename``."""
    return _module(filename).get_function(f"{name}_{SUFFIX[np.dtype(dtype)]}")


def _check(array, dtype, what: str) -> None:
    if array.dtype != dtype:
        raise TypeError(f"{what} has dtype {array.dtype}, expected {np.dtype(dtype)}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous")


def face_flux(state, residual, left, right, normal, area, gamma: float,
              block: int = 256) -> None:
    """Launch the Rusanov face-flux kernel (adds into ``residual``) on CuPy arrays.

    Checks dtypes (state, residual, normal, area alike; cells int32) and
    contiguity, and casts scalars to the kernel's types.
    """
    dtype = state.dtype
    for array, what in ((residual, "residual"), (normal, "normal"), (area, "area")):
        _check(array, dtype, what)
    _check(state, dtype, "state")
    _check(left, np.int32, "left")
    _check(right, np.int32, "right")
    n_faces, n_cells = len(left), state.shape[1]
    grid = (n_faces + block - 1) // block
    kernel("face_flux.cu", "face_flux", dtype)(
        (grid,), (block,),
        (state, residual, left, right, normal, area, np.int32(n_faces), np.int32(n_cells),
         dtype.type(gamma)))
