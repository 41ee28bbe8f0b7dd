"""Keep freed memory inside the process, for the command line's large NumPy temporaries.

glibc's ``malloc`` serves each block above 32 MB with a fresh ``mmap`` and unmaps it on
``free``, so every large temporary of a plan (tens to hundreds of MB at 10M cells) is
paid for again in page faults as it is first written. ``meshorder reorder`` on the
10M-cell wing spent 25 s in the kernel that way (60 s without transparent huge pages).
With ``mmap`` off and the heap's top kept, freed blocks are reused instead: the same
command took 1 min 13 s instead of 1 min 30 s, its peak resident memory 6.9 GB
instead of 6.5 GB (docs/benchmarks.md).

Only the ``meshorder`` command sets this, for its own short-lived process; the library
leaves a host program's allocator alone.
"""

from __future__ import annotations

import ctypes
import platform

#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
#: The largest trim threshold ``mallopt`` takes (an int): the heap's top is kept below it.
KEEP_BYTES = 2**31 - 1


def keep_freed_memory() -> bool:
    """Turn off ``mmap`` for large blocks and heap trimming (glibc on Linux only).

    Returns
    -------
    bool
        Whether the allocator was changed (False elsewhere, or if glibc refused).
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP_BYTES))
