"""Time the viscous vortex domains' local sums, direct against the tree, on the GPU.

Usage: ``python scripts/time_diffusion_sums.py [--sizes 51200,262144,1048576]
[--clouds uniform,wake] [--precision fp32] [--repeats 3]``.

For each cloud of :func:`gpusolver.bench.vortex.cloud`: the domain radii and the wake
sums ``I1``, ``I2`` by the direct kernels (``device.domain_radii``, ``device.wake_sums``:
``O(N^2)``) and by walking a quadtree (``tree.kernel_tree_diffusion_sums``, the tree's
build included), the median wall time of ``--repeats`` calls after one warm-up, and the
largest difference between the two over the largest value (radii, ``I1``, ``I2``). Prints
a markdown table.
"""

import argparse
import time

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.bench.vortex import cloud
from gpusolver.solvers.vortex import device, diffusion
from gpusolver.solvers.vortex.tree import kernel_tree_diffusion_sums

#: The radii's floor (the wall's radii, 0.2 panel lengths, are of this order on the bodies run).
FLOOR = 1e-5


def seconds(work, backend, repeats: int) -> float:
    """Median wall-clock seconds of ``work()`` over ``repeats`` calls after a warm-up."""
    work()
    times = []
    for _ in range(repeats):
        backend.synchronize()
        start = time.perf_counter()
        work()
        backend.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="51200,262144,1048576")
    parser.add_argument("--clouds", default="uniform,wake")
    parser.add_argument("--precision", default="fp32", choices=tuple(PRECISIONS))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    backend = get_backend("cupy")
    xp, dtype = backend.xp, np.dtype(PRECISIONS[args.precision])
    print("| cloud | N | direct ms | tree ms | speed-up | max difference (radii, I1, I2) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in args.clouds.split(","):
        for n in (int(size) for size in args.sizes.split(",")):
            positions, gammas = cloud(kind, n, seed=0)
            p64, g64 = xp.asarray(positions), xp.asarray(gammas)
            p, g = p64.astype(dtype), g64.astype(dtype)

            def direct(p=p, g=g):
                radii = device.domain_radii(backend, p, FLOOR)
                return (radii, *device.wake_sums(backend, p, g, radii))

            def by_tree(p64=p64, g64=g64):
                return kernel_tree_diffusion_sums(backend, p64, g64, FLOOR, diffusion.CUTOFF,
                                                  dtype)[:3]

            ms_direct = 1e3 * seconds(direct, backend, args.repeats)
            ms_tree = 1e3 * seconds(by_tree, backend, args.repeats)
            errors = [float(xp.abs(a - b).max() / xp.abs(a).max())
                      for a, b in zip(direct(), by_tree(), strict=True)]
            print(f"| {kind} | {n:,} | {ms_direct:.2f} | {ms_tree:.2f} | "
                  f"{ms_direct / ms_tree:.1f}x | "
                  f"{', '.join(f'{e:.1e}' for e in errors)} |", flush=True)


if __name__ == "__main__":
    main()
