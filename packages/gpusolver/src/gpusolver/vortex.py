"""The vortex method's public API: ``from gpusolver.vortex import velocity``."""

from gpusolver.solvers.vortex.biot_savart import velocity

__all__ = ["velocity"]
