"""Launches of ``kernels/vvd.cu``: the diffusion sums and the restructuring stages.

Each function takes a backend and arrays of it (CuPy on ``cupy``; NumPy on ``numpy``, where
the kernels run compiled for the CPU, which is how CI checks them against the NumPy
references of :mod:`.diffusion` and :mod:`.restructure`). Positions are ``(N, 2)``
C-ordered arrays.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import Backend
from gpusolver.backends.cuda import NULL, grid, real_type
from gpusolver.solvers.vortex import diffusion
from gpusolver.solvers.vortex.body import Body

SOURCE = "kernels/vvd.cu"
#: Threads per block (the kernels' TILE: the element-against-element sums need it).
BLOCK = 128


def _kernel(backend: Backend, name: str, dtype=None):
    expression = f"{name}<{real_type(dtype)}>" if dtype is not None else name
    return backend.kernels(__package__, SOURCE, (expression,))[expression]


#: Sources per chunk of the element-against-element kernels (a multiple of BLOCK).
CHUNK = 2048


def _chunked(n: int) -> tuple[tuple[int], int]:
    """The grid of an element-against-element kernel over ``n`` elements, and its chunks."""
    chunks = max(1, -(-n // CHUNK))
    return (grid(n, BLOCK)[0] * chunks,), chunks


def domain_radii(backend: Backend, positions, floor: float):
    """:func:`.diffusion.domain_radii` by the kernels (each chunk's three nearest, then
    their merge)."""
    n = len(positions)
    real = positions.dtype.type
    blocks, chunks = _chunked(n)
    nearest = backend.xp.empty((chunks, n, 3), dtype=positions.dtype)
    out = backend.xp.empty(n, dtype=positions.dtype)
    _kernel(backend, "nearest_three_kernel", positions.dtype)(
        blocks, (BLOCK,), (np.int32(n), np.int32(CHUNK), positions, nearest))
    _kernel(backend, "domain_radii_kernel", positions.dtype)(
        grid(n, BLOCK), (BLOCK,), (np.int32(n), np.int32(chunks), nearest, real(floor), out))
    return out


def wake_sums(backend: Backend, positions, gammas, radii, signs: str = "same"):
    """:func:`.diffusion.wake_sums` by the kernel."""
    n = len(positions)
    xp, real = backend.xp, positions.dtype.type
    i1 = xp.zeros(n, dtype=positions.dtype)
    i2 = xp.zeros((n, 2), dtype=positions.dtype)
    _kernel(backend, "wake_sums_kernel", positions.dtype)(
        _chunked(n)[0], (BLOCK,),
        (np.int32(n), np.int32(CHUNK), positions, gammas, radii, real(diffusion.CUTOFF),
         np.int32(signs == "any"), i1, i2))
    return i1, i2


class BodyArrays:
    """A body's panel arrays on a backend, in one precision."""

    def __init__(self, backend: Backend, body: Body, dtype):
        xp = backend.xp
        self.n_panels = np.int32(body.n_panels)

        def put(array):
            return xp.ascontiguousarray(xp.asarray(array, dtype=dtype))

        self.vertices, self.tangents = put(body.vertices), put(body.tangents)
        self.normals, self.lengths = put(body.normals), put(body.lengths)
        self.vertices64 = xp.ascontiguousarray(xp.asarray(body.vertices, dtype=np.float64))
        self.lo = body.vertices.min(axis=0)
        self.hi = body.vertices.max(axis=0)
        #: The widest on-panel band (:data:`.diffusion.ON_PANEL` panel lengths).
        self.band = diffusion.ON_PANEL * float(body.lengths.max())

    def reach(self, real) -> tuple:
        """The surface kernels' ``band, lo_x, lo_y, hi_x, hi_y`` arguments, as ``real``s:
        elements farther from the body's box than the band and their kernel's reach skip
        the panels."""
        return tuple(real(v) for v in (self.band, *self.lo, *self.hi))


def surface_sums(backend: Backend, positions, radii, panels: BodyArrays, gammas=None):
    """:func:`.diffusion.surface_sums` by the kernel: ``(i0, i3)``; given the elements'
    ``gammas``, also :func:`.diffusion.wall_vorticity` in the same launch:
    ``(i0, i3, wall)``, in the precision of ``positions``."""
    n = len(positions)
    xp, real = backend.xp, positions.dtype.type
    i0 = xp.empty(n, dtype=positions.dtype)
    i3 = xp.empty((n, 2), dtype=positions.dtype)
    with_wall = gammas is not None
    wall = xp.zeros(int(panels.n_panels), dtype=positions.dtype) if with_wall else NULL
    _kernel(backend, "surface_sums_kernel", positions.dtype)(
        grid(n, BLOCK), (BLOCK,),
        (np.int32(n), positions, radii, gammas if with_wall else NULL, panels.n_panels,
         panels.vertices, panels.tangents, panels.normals, panels.lengths,
         real(diffusion.CUTOFF), real(diffusion.ON_PANEL), real(diffusion.NEAR_PANEL),
         real(diffusion.PIECES_PER_DISTANCE), np.int32(diffusion.MAX_PIECES),
         *panels.reach(real), i0, i3, wall))
    return (i0, i3, wall) if with_wall else (i0, i3)


def absorbed(backend: Backend, start, end, panels: BodyArrays):
    """:func:`.restructure.absorbed` by the kernel (fp64 positions)."""
    n = len(start)
    flag = backend.xp.empty(n, dtype=np.uint8)
    _kernel(backend, "absorbed_kernel")(
        grid(n, BLOCK), (BLOCK,),
        (np.int32(n), start, end, panels.n_panels, panels.vertices64,
         *(np.float64(v) for v in (*panels.lo, *panels.hi)), flag))
    return flag.astype(bool)


def partners(backend: Backend, positions, gammas, radii, signs: str = "same"):
    """:func:`.restructure.partners` by the kernel (fp64)."""
    n = len(positions)
    xp = backend.xp
    out = xp.full(n, n, dtype=np.int64)  # n: none found
    _kernel(backend, "partners_kernel")(
        _chunked(n)[0], (BLOCK,), (np.int32(n), np.int32(CHUNK), positions, gammas, radii,
                                   np.int32(signs == "any"), out))
    return xp.where(out == n, -1, out)


def add_sheet_velocity(backend: Backend, targets, gamma, panels: BodyArrays, velocity,
                       smoothing: float) -> None:
    """``velocity += `` the sheet's velocity at ``targets`` (:meth:`.sheet.VortexSheet.velocity`
    by the kernel), computed in the precision of ``panels``."""
    n = len(targets)
    xp = backend.xp
    dtype = panels.vertices.dtype
    out = velocity if velocity.dtype == dtype else xp.zeros((n, 2), dtype=dtype)
    _kernel(backend, "sheet_velocity_kernel", dtype)(
        grid(n, BLOCK), (BLOCK,),
        (np.int32(n), xp.ascontiguousarray(targets.astype(dtype, copy=False)),
         panels.n_panels, panels.vertices, xp.ascontiguousarray(gamma.astype(dtype, copy=False)),
         dtype.type(smoothing**2), out))
    if out is not velocity:
        velocity += out


#: Elements per thread of :func:`mean_tangential`.
TANGENTIAL_CHUNK = 256


def mean_tangential(backend: Backend, positions, gammas, panels: BodyArrays):
    """:func:`.sheet.mean_tangential` by the kernel (fp64)."""
    n = len(positions)
    along = backend.xp.zeros(int(panels.n_panels), dtype=np.float64)
    threads = int(panels.n_panels) * -(-n // TANGENTIAL_CHUNK)
    if threads:
        _kernel(backend, "mean_tangential_kernel")(
            grid(threads, BLOCK), (BLOCK,),
            (np.int32(n), positions, gammas, panels.n_panels, panels.vertices64,
             np.int32(TANGENTIAL_CHUNK), along))
    return along
