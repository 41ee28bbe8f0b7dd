"""CUDA sources shipped as ``.cu`` files, compiled lazily by CuPy, and their launch helpers.

With :mod:`gpusolver.backends` the one place that imports CuPy; nothing runs at import time.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from gpusolver.backends import ids

#: A null pointer argument of a kernel (CuPy and the host compile alike).
NULL = np.uint64(0)

SUFFIX = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32"}

#: ``#include "path"`` lines: resolved relative to the including file.
INCLUDE = re.compile(r'^#include "([^"]+)"[ \t]*$', re.MULTILINE)


def kernel_source(package: str, filename: str) -> str:
    """The text of the ``.cu`` file ``filename`` of ``package`` with its quoted includes
    (paths relative to the including file, as nvcc reads them) inlined once each: one
    translation unit for NVRTC and for the host compiler."""
    return _inline(Path(str(resources.files(package).joinpath(filename))), set())


def _inline(path: Path, seen: set) -> str:
    def include(match: re.Match) -> str:
        target = (path.parent / match.group(1)).resolve()
        if target in seen:
            return ""
        seen.add(target)
        if target == ids.header_path().resolve():  # the shared ids, as Python has them
            return ids.cuda_header()
        return _inline(target, seen)

    return INCLUDE.sub(include, path.read_text())


@cache
def _module(package: str, filename: str):
    import cupy

    return cupy.RawModule(code=kernel_source(package, filename), options=("-std=c++17",))


def load_kernel(package: str, filename: str, name: str, dtype: np.dtype):
    """The compiled ``<name>_<f32|f64>`` kernel of the ``.cu`` file ``filename`` of ``package``."""
    return _module(package, filename).get_function(f"{name}_{SUFFIX[np.dtype(dtype)]}")


@cache
def load_templates(package: str, filename: str, expressions: tuple[str, ...]) -> dict:
    """The template kernels ``expressions`` (e.g. ``"flux_kernel<double, 2, 0, 2, 1>"``) of
    the ``.cu`` file ``filename`` of ``package``, compiled together, by expression."""
    import cupy

    module = cupy.RawModule(code=kernel_source(package, filename), options=("-std=c++17",),
                            name_expressions=expressions)
    return {expression: module.get_function(expression) for expression in expressions}


def real_type(dtype) -> str:
    """The C type of a floating-point dtype (``float`` or ``double``)."""
    return {"f32": "float", "f64": "double"}[SUFFIX[np.dtype(dtype)]]


def check(array, dtype, what: str) -> None:
    """Raise unless ``array`` has ``dtype`` and is C-contiguous (what kernels expect)."""
    if array.dtype != dtype:
        raise TypeError(f"{what} has dtype {array.dtype}, expected {np.dtype(dtype)}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous")


def grid(n: int, block: int) -> tuple[int]:
    """Blocks of ``block`` threads covering ``n`` items."""
    return ((n + block - 1) // block,)


def scatter(op: str, out, index, values, block: int = 256) -> None:
    """``out[..., index[k]] (op)= values[..., k]`` with duplicates, on CuPy arrays, exactly.

    Parameters
    ----------
    op : {"add", "min", "max"}
    out : cupy.ndarray
        C-contiguous, ``(..., n_out)``.
    index : cupy.ndarray
        int64 ``(m,)``.
    values : cupy.ndarray
        ``(..., m)`` with the leading shape and dtype of ``out``; a slice along the
        last axis is used in place, other layouts are copied first.
    """
    check(out, out.dtype, "out")
    check(index, np.int64, "index")
    if values.dtype != out.dtype:
        raise TypeError(f"values have dtype {values.dtype}, expected {out.dtype}")
    n_out, m = out.shape[-1], index.shape[0]
    if m == 0:
        return
    rows = values.reshape(-1, m)
    if rows.shape[0] * n_out != out.size:
        raise ValueError(f"values {values.shape} and out {out.shape} differ in leading shape")
    if rows.strides[1] != rows.itemsize:
        rows = rows.copy()  # C-contiguous
    row_stride = rows.strides[0] // rows.itemsize if rows.shape[0] > 1 else m
    load_kernel(__package__, "scatter.cu", f"scatter_{op}", out.dtype)(
        grid(rows.shape[0] * m, block), (block,),
        (out, index, rows, np.int64(m), np.int64(rows.shape[0]), np.int64(n_out),
         np.int64(row_stride)))


#: Threads of :func:`shared_inverse`'s blocks.
INVERSE_THREADS = 512


def shared_memory_limit() -> int:
    """Bytes of shared memory one thread block of the current GPU may take (opt-in)."""
    import cupy

    return _shared_memory_limit(cupy.cuda.Device().id)


@cache
def _shared_memory_limit(device: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device).attributes["MaxSharedMemoryPerBlockOptin"])


def shared_inverse_bytes(n: int, dtype) -> int:
    """Shared memory :func:`shared_inverse` takes for a matrix of ``n`` rows."""
    return n * n * np.dtype(dtype).itemsize + 4 * n


def shared_inverse_rows(dtype) -> int:
    """The most rows of a matrix that :func:`shared_inverse` takes on the current GPU."""
    limit, rows = shared_memory_limit(), 1
    while shared_inverse_bytes(rows + 1, dtype) <= limit:
        rows += 1
    return rows


def shared_inverse(blocks):
    """The inverses of the matrices ``blocks`` ``(count, n, n)`` (fp64 or fp32) on the GPU,
    each in one thread block's shared memory (``inverse.cu``: Gauss-Jordan with
    partial pivoting; a singular matrix gives non-finite entries): one launch for all,
    where cuBLAS's batched LU takes a few launches a column. The matrices must fit
    (:func:`shared_inverse_bytes` at most :func:`shared_memory_limit`)."""
    import cupy

    matrices = cupy.ascontiguousarray(blocks)
    out = cupy.empty_like(matrices)
    n = blocks.shape[1]
    invert_strided(matrices, n * n, out, n * n, blocks.shape[0], n)
    return out


def invert_strided(source, source_stride: int, out, out_stride: int, count: int,
                   n: int) -> None:
    """Write into ``out`` the inverses of ``count`` matrices ``n x n`` of ``source`` (flat
    arrays on the GPU; matrix ``m`` at ``m * source_stride`` and its inverse at ``m *
    out_stride``, row-major), as :func:`shared_inverse`."""
    shared = shared_inverse_bytes(n, source.dtype)
    if shared > shared_memory_limit():
        raise ValueError(f"matrices of {n} rows do not fit in one block's shared memory")
    kernel = load_templates(__package__, "inverse.cu",
                            (f"invert_blocks<{real_type(source.dtype)}>",))
    kernel = next(iter(kernel.values()))
    kernel.max_dynamic_shared_size_bytes = max(kernel.max_dynamic_shared_size_bytes, shared)
    if count:
        kernel((count,), (INVERSE_THREADS,), (source, out, np.int32(n),
                                              np.int64(source_stride), np.int64(out_stride)),
               shared_mem=shared)


def block_inverse(blocks, rows: int):
    """The inverses of the matrices ``blocks`` ``(count, n, n)`` on the GPU by Gauss-Jordan
    on ``p x p`` sub-blocks of at most ``rows`` rows (the matrix padded with identity
    rows to ``p`` equal ones): each diagonal sub-block inverted in shared memory
    (:func:`shared_inverse`, partial pivoting within it), the others by batched products,
    about ``p^2`` launches for all matrices. Pivoting stops at the sub-blocks, as it
    stops at the levels in block cyclic reduction: it takes matrices whose diagonal
    sub-blocks are well conditioned, as diagonally dominant ones' are."""
    import cupy

    count, n = blocks.shape[0], blocks.shape[1]
    p = -(-n // rows)
    size = -(-n // p)
    padded = cupy.zeros((count, p * size, p * size), dtype=blocks.dtype)
    padded[:, :n, :n] = blocks
    padded[:, cupy.arange(n, p * size), cupy.arange(n, p * size)] = 1.0
    # (count, p, p, size, size): sub-block (i, j) of each matrix
    a = cupy.ascontiguousarray(padded.reshape(count, p, size, p, size).transpose(0, 1, 3, 2, 4))
    for k in range(p):
        pivot = shared_inverse(a[:, k, k])
        # sub-block row k times the pivot's inverse; every other row less its multiple
        row = {j: pivot @ a[:, k, j] for j in range(p) if j != k}
        for i in range(p):
            if i == k:
                continue
            column = a[:, i, k].copy()
            for j, product in row.items():
                a[:, i, j] -= column @ product
            a[:, i, k] = -(column @ pivot)
        for j, product in row.items():
            a[:, k, j] = product
        a[:, k, k] = pivot
    return a.transpose(0, 1, 3, 2, 4).reshape(count, p * size, p * size)[:, :n, :n].copy()
