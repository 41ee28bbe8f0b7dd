"""CUDA sources compiled as C++ for the CPU, launched on NumPy arrays.

The same ``.cu`` file the GPU runs is compiled by the system's C++ compiler with
``host_shim.h`` (kernel launches become loops over blocks and threads), so that the
kernels' logic is tested against the NumPy reference where there is no GPU (CI).
Launches take CuPy's arguments: ``kernel(grid, block, args)`` with NumPy arrays for
pointers and NumPy scalars for values.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from gpusolver.backends.cuda import kernel_source

SHIM = resources.files(__package__).joinpath("host_shim.h")

#: NumPy scalar type -> ctypes type of a kernel's by-value argument.
CTYPES = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
          np.dtype(np.uint64): ctypes.c_uint64, np.dtype(np.float32): ctypes.c_float,
          np.dtype(np.float64): ctypes.c_double}


def compiler() -> str | None:
    """The C++ compiler found on ``PATH`` (None: host kernels are unavailable)."""
    return shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


class HostKernel:
    """One kernel instantiation compiled for the CPU, launched like a CuPy ``RawKernel``."""

    def __init__(self, function):
        self.function = function

    def __call__(self, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0) -> None:
        values = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                if not arg.flags.c_contiguous:
                    raise ValueError("host kernels take C-contiguous arrays")
                values.append(ctypes.c_void_p(arg.ctypes.data))
            else:
                values.append(CTYPES[np.asarray(arg).dtype](arg))
        pointers = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        self.function(int(grid[0]), int(block[0]), pointers)


#: Compiler optimisation: quick builds for tests, or the fastest code for a CPU peer.
OPTIMISATION = {False: ["-O1"], True: ["-O3", "-march=native"]}


@cache
def load_host_templates(package: str, filename: str, expressions: tuple[str, ...],
                        optimised: bool = False) -> dict:
    """The template kernels ``expressions`` of ``filename`` of ``package``, compiled for the
    CPU (``optimised``: see :data:`OPTIMISATION`), by expression (the CPU twin of
    :func:`gpusolver.backends.cuda.load_templates`)."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (c++, g++ or clang++) on PATH for host kernels")
    source = kernel_source(package, filename)
    entries = "\n".join(
        f'extern "C" void host_entry_{i}(int grid, int block, void** args) '
        f"{{ host_launch({expression}, grid, block, args); }}"
        for i, expression in enumerate(expressions))
    text = f'#include "{SHIM}"\n{source}\n{entries}\n'
    flags = OPTIMISATION[optimised]
    digest = hashlib.sha256((" ".join(flags) + text).encode()).hexdigest()[:16]
    directory = Path(tempfile.gettempdir()) / "gpusolver-host-kernels"
    directory.mkdir(exist_ok=True)
    library = directory / f"{digest}.so"
    if not library.exists():
        source_file = directory / f"{digest}.{os.getpid()}.cpp"  # per process: workers race
        source_file.write_text(text)
        partial = directory / f"{digest}.{os.getpid()}.so"
        subprocess.run([cxx, "-std=c++17", *flags, "-shared", "-fPIC", "-w", str(source_file),
                        "-o", str(partial)], check=True, capture_output=True)
        partial.replace(library)  # atomic: parallel test workers may race
    loaded = ctypes.CDLL(str(library))
    kernels = {}
    for i, expression in enumerate(expressions):
        function = getattr(loaded, f"host_entry_{i}")
        function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        function.restype = None
        kernels[expression] = HostKernel(function)
    return kernels
