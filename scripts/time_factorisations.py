"""Block cyclic reduction's factorisation of one scalar per cell timed on the GPU: the
kernels (``KernelFactorise``) against CuPy's array code, on the level shapes of TMR's
grids (the flat plate's nu_tilde matrix: 136 levels of 96 cells; the NACA 0012's: 176 of
128), and where their time goes.

Usage: ``python scripts/time_factorisations.py [--shapes 136x96,176x128,176x64]
[--max-width 96] [--repeat 20]``. ``--max-width`` sets the widest levels the kernels
take (``KernelFactorise.MAX_GPU_WIDTH``). Each shape is a grid of quadrilaterals whose
levels are its columns, a matrix with a dominant diagonal; times are medians, each to the
GPU's end. The two solutions of one right-hand side are compared.
"""

import argparse
import time

import cupy
import numpy as np

from gpusolver.backends import get_backend
from gpusolver.solvers.fv.jacobian import operator_pattern
from gpusolver.solvers.fv.level_lu import CellLevels, KernelFactorise, LevelLU
from meshorder import Topology
from meshorder.testing import grid_mesh
from meshorder.topology import CSR


def _median_ms(work, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        work()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="136x96,176x128,176x64")
    parser.add_argument("--max-width", type=int, default=KernelFactorise.MAX_GPU_WIDTH)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    KernelFactorise.MAX_GPU_WIDTH = args.max_width
    backend = get_backend("cupy")
    rng = np.random.default_rng(3)
    for shape in args.shapes.split(","):
        n_levels, width = map(int, shape.split("x"))
        topology = Topology(grid_mesh(n_levels, width, "quad"))
        left, right = topology.face_cells[topology.interior].T
        n = topology.n_cells
        levels = CellLevels.from_seeds(CSR.from_pairs(left, right, n), np.arange(width))
        rows, cols = operator_pattern(left, right, n)
        values = rng.normal(size=(1, 1, len(rows)))
        values[:, :, :n] += 16.0
        blocks, rhs = backend.asarray(values), backend.asarray(rng.normal(size=(1, n)))
        times, solutions = [], []
        for kernels in (False, True):
            lu = LevelLU(levels, rows, cols, 1, backend, kernels=kernels)
            lu.factorise(blocks, slot=0)  # compile and warm
            times.append(_median_ms(lambda lu=lu, b=blocks: lu.factorise(b, slot=0),
                                    args.repeat))
            solutions.append(backend.to_host(lu.factorise(blocks, slot=0)(rhs)))
        inverses = backend.asarray(rng.normal(size=((n_levels + 1) // 2, width, width))
                                   + 4 * width * np.eye(width))
        inverse_ms = _median_ms(lambda m=inverses: backend.inverse(m), args.repeat)
        difference = np.abs(solutions[0] - solutions[1]).max() / np.abs(solutions[0]).max()
        print(f"{n_levels} levels x {width}: array code {times[0]:.3f} ms, kernels "
              f"{times[1]:.3f} ms (kernels used: {width <= args.max_width}); one launch of "
              f"the first stage's {len(inverses)} inverses {inverse_ms:.3f} ms; solutions "
              f"differ by {difference:.1e}", flush=True)


if __name__ == "__main__":
    main()
