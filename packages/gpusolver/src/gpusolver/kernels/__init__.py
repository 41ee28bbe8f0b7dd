"""CUDA kernels: sources shipped as ``.cu`` files, compiled lazily by CuPy.

Only this package's CuPy backend imports CuPy; nothing here runs at import time.
"""

from __future__ import annotations

import itertools
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


#: Face-to-cell accumulation strategies of the face-flux kernels.
STRATEGIES = ("atomic", "colour", "reduce")


def _grid(n: int, block: int) -> tuple[int]:
    return ((n + block - 1) // block,)


def face_flux(state, residual, left, right, normal, area, gamma: float,
              block: int = 256) -> None:
    """Launch the atomic Rusanov face-flux kernel (adds into ``residual``) on CuPy arrays.

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
    kernel("face_flux.cu", "face_flux_atomic", dtype)(
        _grid(n_faces, block), (block,),
        (state, residual, left, right, normal, area, np.int32(n_faces), np.int32(n_cells),
         dtype.type(gamma)))


class FaceFlux:
    """The Rusanov face-flux pass under one strategy, with its device arrays prepared.

    Parameters
    ----------
    faces : FaceLayout
        Faces in plan order (interior first, then boundary), new cell numbers.
    n_cells : int
    strategy : {"atomic", "colour", "reduce"}
    colour_order, colour_offsets : numpy.ndarray, optional
        The plan's face colouring (needed for ``colour``).
    """

    def __init__(self, faces, n_cells: int, strategy: str, colour_order=None,
                 colour_offsets=None, block: int = 256):
        import cupy

        from ..fv.accumulate import face_slots

        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        if strategy == "colour":
            if colour_order is None or len(colour_order) == 0:
                raise ValueError("strategy 'colour' needs the plan's face colours")
            faces = faces.permuted(colour_order)
            self.ranges = [(int(a), int(b)) for a, b in itertools.pairwise(colour_offsets)]
        self.strategy, self.block, self.n_cells = strategy, block, n_cells
        self.dtype = faces.normal.dtype
        self.n_faces = faces.n_faces
        self.arrays = [cupy.asarray(a) for a in (faces.left, faces.right, faces.normal,
                                                 faces.area)]
        if strategy == "reduce":
            n_interior = int(np.count_nonzero(faces.right >= 0))
            table = face_slots(faces.left.astype(np.int64), faces.right.astype(np.int64),
                               n_cells, n_interior)
            self.slots = cupy.asarray(np.ascontiguousarray(table.T, dtype=np.int32))
            self.scratch = cupy.empty((5, self.n_faces), dtype=self.dtype)

    def __call__(self, state, residual, gamma: float) -> None:
        """Add the face fluxes of ``state`` into ``residual`` (both ``(5, n_cells)``)."""
        _check(state, self.dtype, "state")
        _check(residual, self.dtype, "residual")
        common = (np.int32(self.n_faces), np.int32(self.n_cells), self.dtype.type(gamma))
        block = self.block
        if self.strategy == "atomic":
            kernel("face_flux.cu", "face_flux_atomic", self.dtype)(
                _grid(self.n_faces, block), (block,), (state, residual, *self.arrays, *common))
        elif self.strategy == "colour":
            launch = kernel("face_flux.cu", "face_flux_colour", self.dtype)
            for first, last in self.ranges:
                launch(_grid(last - first, block), (block,),
                       (state, residual, *self.arrays, *common, np.int32(first),
                        np.int32(last)))
        else:
            kernel("face_flux.cu", "face_flux_store", self.dtype)(
                _grid(self.n_faces, block), (block,), (state, self.scratch, *self.arrays,
                                                       *common))
            kernel("face_flux.cu", "cell_gather", self.dtype)(
                _grid(self.n_cells, block), (block,),
                (self.scratch, self.slots, residual, np.int32(self.slots.shape[0]),
                 np.int32(self.n_faces), np.int32(self.n_cells)))

    def extra_bytes(self) -> int:
        """Bytes moved beyond the minimum model (the ``reduce`` scratch and slot table)."""
        if self.strategy != "reduce":
            return 0
        return 2 * self.scratch.nbytes + self.slots.nbytes
