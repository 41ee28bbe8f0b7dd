"""Where the kernel tests run: compiled as C++ for the CPU (``host``), and on a GPU."""

from __future__ import annotations

import pytest

from gpusolver.backends.host import compiler
from gpusolver.solvers.fv.fused import FusedResidual
from gpusolver.solvers.fv.lusgs import LUSGS, FusedLUSGS
from gpusolver.solvers.fv.multigrid import MultigridKernels

BACKENDS = [pytest.param("host", marks=pytest.mark.skipif(compiler() is None,
                                                          reason="no C++ compiler")),
            pytest.param("cupy", marks=pytest.mark.gpu)]


def attach_host_kernels(solver) -> None:
    """Run a NumPy solver's LU-SGS steps and multigrid cycles in host-compiled kernels."""
    solver.fuse()
    for mine in solver.multigrid.parts:
        for level in mine:
            coarse = level.discretisation
            coarse.fused = FusedResidual(coarse, level.host, coarse.accumulator_name)
            if level.n_own is not None:  # a part's update advances its own cells
                coarse.fused.n_active = level.n_own
            level.lusgs = LUSGS(coarse, level.host, kernels=True, levels=level.lusgs.levels)
            level.steps = FusedLUSGS(coarse.fused, level.lusgs.kernels, forcing=True)
    solver.multigrid.kernels = MultigridKernels(solver.multigrid, solver.multigrid.transports[0])
