"""The vortex tree's error against the direct sum and its time, over theta and terms
(NumPy, this machine): the table of docs/validation.md.

Usage: ``python scripts/tree_accuracy.py [N]`` (default 20000 elements).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from gpusolver.solvers.vortex.biot_savart import direct_velocity
from gpusolver.solvers.vortex.tree import tree_velocity


def cloud(kind: str, n: int, rng) -> np.ndarray:
    """A uniform square, or a rolled-up sheet with a thin spread across it."""
    if kind == "uniform":
        return rng.uniform(-1, 1, (n, 2))
    s = rng.uniform(0, 6 * np.pi, n)
    return ((0.05 * s)[:, None] * np.stack([np.cos(s), np.sin(s)], axis=1)
            + rng.normal(0, 0.003, (n, 2)))


def main(n: int) -> None:
    """Print the markdown table for ``n`` elements of each cloud."""
    rng = np.random.default_rng(1)
    print("| cloud | theta | terms | error | tree s | direct s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in ("uniform", "wake"):
        positions = cloud(kind, n, rng)
        gammas = rng.normal(0, 1, n) / n
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
