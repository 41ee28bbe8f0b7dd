"""``gpusolver bench-vortex``: vortex velocities by the direct sum and by the tree.

For each element count N, cloud and precision: N elements induce velocities at
themselves. ``direct`` rows time the tiled kernel with the elements given as targets (N^2
interactions; median of ``repeats``; flops counted at :data:`FLOPS_PER_INTERACTION`),
``direct-pairs`` rows the pair kernel that the velocities at the elements take by default
(each pair evaluated once for both of its interactions: N^2 interactions from N^2 / 2
pairs, flops counted at :data:`FLOPS_PER_PAIR` a pair); both check their first 256
targets against the fp64 NumPy reference. ``tree`` rows time the whole tree method
(building the tree on the GPU and walking it) for each ``theta`` and ``terms``, and give
its largest error over all N targets against the fp64 direct kernel, relative to the
largest speed (the error-versus-time curve of the accuracy parameter).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.solvers.vortex.biot_savart import direct_velocity, velocity

#: Columns of the markdown table.
COLUMNS = ("device", "method", "cloud", "elements", "precision", "theta", "terms", "time_ms",
           "interactions_per_s", "tflops", "max_rel_error")
#: Two differences, three for |d|^2, the max, the reciprocal, gamma times it, and two
#: multiply-adds counted as two each.
FLOPS_PER_INTERACTION = 12
#: The pair kernel: two differences, three for |d|^2, the max, the reciprocal, both
#: circulations times it, and four multiply-adds counted as two each.
FLOPS_PER_PAIR = 17
#: Targets of the direct rows checked against the NumPy reference.
CHECKED = 256
EPS = 1e-3
#: Element distributions: a square, or a rolled-up sheet with a thin spread across it.
CLOUDS = ("uniform", "wake")


def cloud(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` elements spread over a square (``uniform``) or clustered along a rolled-up
    sheet with a thin spread across it (``wake``); random circulations of zero mean and
    total strength of order one.

    Examples
    --------
    >>> positions, gammas = cloud("wake", 5, seed=0)
    >>> positions.shape, gammas.shape
    ((5, 2), (5,))
    """
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        positions = rng.uniform(-1, 1, (n, 2))
    else:
        s = rng.uniform(0, 6 * np.pi, n)
        positions = (0.05 * s)[:, None] * np.column_stack([np.cos(s), np.sin(s)])
        positions += rng.normal(0, 0.003, (n, 2))
    return positions, rng.normal(0, 1, n) / n


def run_vortex_benchmark(sizes: list[int], precisions: list[str], repeats: int = 5,
                         backend: str = "cupy", log: Callable[[str], None] = print, *,
                         methods: tuple[str, ...] = ("direct",),
                         clouds: tuple[str, ...] = ("uniform",),
                         thetas: tuple[float, ...] = (0.5,),
                         terms: tuple[int, ...] = (16,)) -> list[dict]:
    """Rows of the benchmark (see the module docstring)."""
    device_backend = get_backend(backend)
    device = ("CPU (host-compiled kernel)" if device_backend.name == "numpy" else
              device_backend.xp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    rows = []
    for n in sizes:
        for kind in clouds:
            positions, gammas = cloud(kind, n, seed=n)
            common = {"device": device, "cloud": kind, "elements": n}
            if "direct" in methods:
                rows += _direct_rows(device_backend, positions, gammas, precisions, repeats,
                                     common, log)
            if "tree" in methods:
                rows += _tree_rows(device_backend, positions, gammas, precisions, repeats,
                                   thetas, terms, common, log)
    return rows


def _direct_rows(backend, positions, gammas, precisions, repeats, common, log) -> list[dict]:
    """The direct kernel's rows for one cloud."""
    n = len(positions)
    expected = direct_velocity(positions, gammas, EPS, positions[:CHECKED])
    rows = []
    for precision in precisions:
        p = backend.asarray(positions, PRECISIONS[precision])
        g = backend.asarray(gammas, PRECISIONS[precision])
        for method, targets, flops in (("direct", p, FLOPS_PER_INTERACTION),
                                       ("direct-pairs", None, FLOPS_PER_PAIR / 2)):
            def run(p=p, g=g, targets=targets, precision=precision):
                return velocity(p, g, EPS, targets, backend=backend, precision=precision)
            check = backend.to_host(run()[:CHECKED])
            error = float(np.abs(check - expected).max() / np.abs(expected).max())
            seconds = backend.median_seconds(run, repeats)
            rate = float(n) * n / seconds
            rows.append(common | {"method": method, "precision": precision,
                                  "time_ms": seconds * 1e3, "interactions_per_s": rate,
                                  "tflops": rate * flops / 1e12, "max_rel_error": error})
            log(f"{method} {common['cloud']} N={n} {precision}: {seconds * 1e3:.3f} ms, "
                f"{rate:.3e} interactions/s, error {error:.1e}")
    return rows


def _tree_rows(backend, positions, gammas, precisions, repeats, thetas, terms, common,
               log) -> list[dict]:
    """The tree method's rows for one cloud: every theta and terms, against the fp64
    direct sum at every element."""
    n = len(positions)
    wide = [backend.asarray(a, np.float64) for a in (positions, gammas)]
    expected = backend.to_host(velocity(*wide, EPS, backend=backend))
    scale = np.abs(expected).max()
    rows = []
    for precision in precisions:
        p, g = (backend.asarray(a, PRECISIONS[precision]) for a in (positions, gammas))
        for theta in thetas:
            for count in terms:
                def tree(p=p, g=g, precision=precision, theta=theta, count=count):
                    return velocity(p, g, EPS, method="tree", backend=backend,
                                    precision=precision, theta=theta, terms=count)
                error = float(np.abs(backend.to_host(tree()) - expected).max() / scale)
                seconds = backend.median_seconds(tree, repeats)
                rows.append(common | {"method": "tree", "precision": precision,
                                      "theta": theta, "terms": count,
                                      "time_ms": seconds * 1e3, "max_rel_error": error})
                log(f"tree {common['cloud']} N={n} {precision} theta {theta} terms {count}: "
                    f"{seconds * 1e3:.3f} ms, error {error:.1e}")
    return rows
