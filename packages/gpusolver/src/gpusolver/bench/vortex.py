"""``gpusolver bench-vortex``: the direct Biot-Savart kernel in interactions per second.

For each element count N and precision: N random elements in the unit square (core
radius 1e-3) induce velocities at themselves (N^2 interactions); the kernel is timed
(median of ``repeats``) and its first 256 targets are checked against the fp64 NumPy
reference. Flops are counted at :data:`FLOPS_PER_INTERACTION`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.solvers.vortex.biot_savart import direct_velocity, velocity

#: Columns of the markdown table.
COLUMNS = ("device", "elements", "precision", "time_ms", "interactions_per_s", "tflops",
           "max_rel_error")
#: Two differences, three for |d|^2, the max, the reciprocal, gamma times it, and two
#: multiply-adds counted as two each.
FLOPS_PER_INTERACTION = 12
#: Targets checked against the NumPy reference.
CHECKED = 256
EPS = 1e-3


def run_vortex_benchmark(sizes: list[int], precisions: list[str], repeats: int = 5,
                         backend: str = "cupy", log: Callable[[str], None] = print) -> list[dict]:
    """Rows of the benchmark (see the module docstring)."""
    device_backend = get_backend(backend)
    device = ("CPU (host-compiled kernel)" if device_backend.name == "numpy" else
              device_backend.xp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        positions, gammas = rng.uniform(0, 1, (n, 2)), rng.normal(size=n) / n
        expected = direct_velocity(positions, gammas, EPS, positions[:CHECKED])
        for precision in precisions:
            p = device_backend.asarray(positions, PRECISIONS[precision])
            g = device_backend.asarray(gammas, PRECISIONS[precision])
            got = velocity(p, g, EPS, backend=device_backend, precision=precision)
            check = device_backend.to_host(got[:CHECKED])
            error = float(np.abs(check - expected).max() / np.abs(expected).max())
            seconds = device_backend.median_seconds(
                lambda p=p, g=g, precision=precision: velocity(
                    p, g, EPS, backend=device_backend, precision=precision), repeats)
            rate = float(n) * n / seconds
            rows.append({"device": device, "elements": n, "precision": precision,
                         "time_ms": seconds * 1e3, "interactions_per_s": rate,
                         "tflops": rate * FLOPS_PER_INTERACTION / 1e12,
                         "max_rel_error": error})
            log(f"N={n} {precision}: {seconds * 1e3:.3f} ms, {rate:.3e} interactions/s, "
                f"error {error:.1e}")
    return rows
