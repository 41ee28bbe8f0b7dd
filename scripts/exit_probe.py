"""How long a CuPy process takes to exit after its work: a normal exit, the memory pool
freed first, or ``os._exit`` (which skips Python's teardown).

Usage: ``python scripts/exit_probe.py``. For 0.2 and 4 GiB held in 60 blocks, each way
twice: a child process allocates, runs a kernel over every block, prints the time and
exits; this process prints the child's work (from its start) and its exit (from the
printed time to its end).
"""

import os
import subprocess
import sys
import time

WAYS = ("normal", "freeall", "osexit")


def child(way: str, gib: float) -> None:
    """Hold ``gib`` GiB, touch it, print the time and exit ``way``."""
    import cupy as cp

    n = int(gib * 2**30 / 8 / 60)
    blocks = [cp.ones(n) for _ in range(60)]
    twice = cp.ElementwiseKernel("float64 x", "float64 y", "y = x * 2", "twice")
    for block in blocks:
        twice(block)
    cp.cuda.Device().synchronize()
    sys.stdout.write(f"{time.time()}\n")
    sys.stdout.flush()
    if way == "freeall":
        del blocks
        cp.get_default_memory_pool().free_all_blocks()
    if way == "osexit":
        os._exit(0)
    sys.exit(0)


def main() -> None:
    for gib in (0.2, 4.0):
        for _ in range(2):
            for way in WAYS:
                start = time.time()
                done = subprocess.run([sys.executable, __file__, way, str(gib)],
                                      capture_output=True, text=True, check=True)
                end = time.time()
                printed = float(done.stdout.strip().splitlines()[-1])
                print(f"{gib} GiB {way:8s} work {printed - start:6.3f} s  "
                      f"exit {end - printed:6.3f} s")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1], float(sys.argv[2]))
    else:
        main()
