"""The vortex tree's error against the direct sum and its time, over theta and terms
(NumPy, this machine): the table of docs/validation.md.

Usage: ``python scripts/tree_accuracy.py [N]`` (default 20000 elements).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from gpusolver.bench.vortex import CLOUDS, cloud
from gpusolver.solvers.vortex.biot_savart import direct_velocity
from gpusolver.solvers.vortex.tree import tree_velocity


def main(n: int) -> None:
    """Print the markdown table for ``n`` elements of each cloud."""
    print("| cloud | theta | terms | error | tree s | direct s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in CLOUDS:
        positions, gammas = cloud(kind, n, seed=1)
        start = time.perf_counter()
        expected = direct_velocity(positions, gammas, 1e-3, positions)
        direct_s = time.perf_counter() - start
        for theta in (0.3, 0.5, 0.7):
            for terms in (8, 16):
                start = time.perf_counter()
                got = tree_velocity(positions, gammas, 1e-3, positions, theta, terms)
                tree_s = time.perf_counter() - start
                error = np.abs(got - expected).max() / np.abs(expected).max()
                print(f"| {kind} | {theta} | {terms} | {error:.1e} | {tree_s:.2f} | "
                      f"{direct_s:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
