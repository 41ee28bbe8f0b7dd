"""Array backends: ``numpy`` (the reference, runs anywhere) and ``cupy`` (CUDA).

A backend bundles the array module with the few operations NumPy and CuPy spell
differently: unbuffered scatter (atomic on the GPU) and host transfer. CuPy is
imported only when the ``cupy`` backend is asked for.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusolver.errors import ConfigError

BACKENDS = ("auto", "numpy", "cupy")

#: Precision name -> dtype (a setting of the backend, not a kernel copy).
PRECISIONS = {"fp64": np.float64, "fp32": np.float32}


@dataclass(frozen=True)
class Backend:
    """An array module plus its scatter and transfer operations.

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"cupy"``.
    xp : module
        ``numpy`` or ``cupy``.
    scatter : dict of str to callable
        ``scatter[op](out, index, values)`` combines ``values`` into ``out[..., index]``
        with ``op`` in ``add``, ``min``, ``max``, duplicates included (atomics on the GPU).
    """

    name: str
    xp: Any
    scatter: dict[str, Callable]

    @property
    def sparse(self):
        """``scipy.sparse`` or ``cupyx.scipy.sparse``."""
        if self.name == "cupy":
            import cupyx.scipy.sparse
            return cupyx.scipy.sparse
        import scipy.sparse
        return scipy.sparse

    def asarray(self, array, dtype=None):
        """``array`` on this backend, C-contiguous (what every kernel indexes); no copy
        when it already is."""
        return self.xp.asarray(array, dtype=dtype, order="C")

    def kernels(self, package: str, filename: str, expressions: tuple[str, ...],
                optimised: bool = False) -> dict:
        """The template kernels ``expressions`` of a ``.cu`` file of ``package``, compiled
        for this backend: by NVRTC on cupy, as C++ for the CPU on numpy (``optimised``:
        at ``-O3 -march=native``, the benchmarks' one-core CPU peer; else quickly, for
        tests)."""
        if self.name == "cupy":
            from gpusolver.backends.cuda import load_templates
            return load_templates(package, filename, expressions)
        from gpusolver.backends.host import load_host_templates
        return load_host_templates(package, filename, expressions, optimised)

    def inverse(self, blocks):
        """The inverses of a stack of square matrices ``(count, n, n)``: NumPy's (LAPACK,
        partial pivoting). On CuPy, matrices that fit in a thread block's shared memory (up
        to ~160 rows in fp64) in one launch with partial pivoting
        (:func:`gpusolver.backends.cuda.shared_inverse`); larger ones by Gauss-Jordan on
        sub-blocks that fit (:func:`gpusolver.backends.cuda.block_inverse`), pivoting
        within the diagonal sub-blocks only, as block cyclic reduction does within its
        levels. On an H200 (2026-11-28) cuBLAS's batched LU took 14-21 ms for 8 to 68
        matrices of 384 rows and 0.5 ms for 68 of 96: a few launches a column."""
        if self.name != "cupy":
            return np.linalg.inv(blocks)
        from gpusolver.backends import cuda

        n = blocks.shape[1]
        if cuda.shared_inverse_bytes(n, blocks.dtype) <= cuda.shared_memory_limit():
            return cuda.shared_inverse(blocks)
        return cuda.block_inverse(blocks, cuda.shared_inverse_rows(blocks.dtype))

    def to_host(self, array) -> np.ndarray:
        """The array as a NumPy array."""
        return array.get() if hasattr(array, "get") else np.asarray(array)

    def median_seconds(self, work: Callable[[], object], repeats: int, warmup: int = 2
                       ) -> float:
        """Median seconds of ``work()`` over ``repeats`` runs after ``warmup`` runs.

        CUDA events around each run on CuPy (device time, launches included); the wall
        clock around a synchronised run on NumPy. The timing helper of the benchmarks of
        one process (several ranks: :func:`gpusolver.bench.parallel.seconds_per_call`).
        """
        times = []
        for _ in range(warmup + repeats):
            if self.name == "cupy":
                start, stop = self.xp.cuda.Event(), self.xp.cuda.Event()
                start.record()
                work()
                stop.record()
                stop.synchronize()
                times.append(self.xp.cuda.get_elapsed_time(start, stop) / 1e3)
            else:
                start_s = time.perf_counter()
                work()
                times.append(time.perf_counter() - start_s)
        return float(np.median(times[warmup:]))

    def synchronize(self) -> None:
        """Wait for queued device work (no-op on the CPU)."""
        if self.name == "cupy":
            self.xp.cuda.Device().synchronize()

    def device_name(self) -> str:
        """The current CUDA device's name (``cpu`` on NumPy)."""
        if self.name != "cupy":
            return "cpu"
        properties = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        return properties["name"].decode()

    def release_memory(self) -> None:
        """Return the memory pool's free blocks to the device (no-op on the CPU)."""
        if self.name == "cupy":
            self.xp.get_default_memory_pool().free_all_blocks()

    def copy_bandwidth(self, n_bytes: int = 2**30, repeats: int = 10) -> float:
        """Device-to-device copy bandwidth in GB/s, counting bytes read plus written."""
        src = self.xp.ones(n_bytes // 8, dtype=np.float64)
        dst = self.xp.empty_like(src)

        def copy():
            dst[...] = src
        return 2 * n_bytes / self.median_seconds(copy, repeats) / 1e9


def _row_by_row(combine_row: Callable) -> Callable:
    """Scatter ``values[..., k]`` into ``out[..., index[k]]`` one leading row at a time
    (``out`` must be a view of its rows: a copy would take the sums; ValueError)."""
    def scatter(out, index, values):
        rows_out = out.reshape(-1, out.shape[-1], copy=False)
        rows_values = values.reshape(len(rows_out), -1)
        for row, value in zip(rows_out, rows_values, strict=True):
            combine_row(row, index, value)
    return scatter


def _numpy_scatter() -> dict[str, Callable]:
    def add_row(row, index, value):
        row += np.bincount(index, value, minlength=len(row))

    return {"add": _row_by_row(add_row), "min": _row_by_row(np.minimum.at),
            "max": _row_by_row(np.maximum.at)}


def _cupy_scatter() -> dict[str, Callable]:
    from gpusolver.backends import cuda

    # One launch for all rows; not cupy.minimum.at / maximum.at, which round float64 to
    # about float32 precision (backends/scatter.cu).
    return {op: functools.partial(cuda.scatter, op) for op in ("add", "min", "max")}


def array_module(like):
    """``numpy`` or ``cupy``, whichever ``like`` belongs to."""
    if isinstance(like, np.ndarray | np.generic | float | int):
        return np
    import cupy
    return cupy.get_array_module(like)


def cupy_available() -> bool:
    """True when CuPy imports and sees a CUDA device."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def start_backend(name: str) -> None:
    """Import CuPy and create the GPU's context where the backend ``name`` may use it, so
    that a caller can spend that time (about 0.4 s) beside other work, in a thread.
    Failures are left to :func:`get_backend`, which names them.

    Examples
    --------
    >>> start_backend("numpy")  # nothing to start
    """
    if name not in ("auto", "cupy"):
        return
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            cupy.empty(1)  # the context and the memory pool
    except Exception:
        return


def get_backend(name: str = "auto") -> Backend:
    """The backend called ``name``; ``auto`` picks ``cupy`` when a GPU is usable.

    Examples
    --------
    >>> get_backend("numpy").name
    'numpy'
    """
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; valid: {', '.join(BACKENDS)}")
    if name == "auto":
        name = "cupy" if cupy_available() else "numpy"
    if name == "numpy":
        return Backend("numpy", np, _numpy_scatter())
    if not cupy_available():
        raise ConfigError("backend 'cupy' asked for but CuPy or a CUDA device is missing; "
                          "install cupy-cuda13x or use backend = 'numpy'")
    import cupy
    return Backend("cupy", cupy, _cupy_scatter())
