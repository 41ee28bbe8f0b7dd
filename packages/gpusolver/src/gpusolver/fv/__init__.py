"""Cell-centred finite volume: Euler and laminar Navier-Stokes, explicit Runge-Kutta."""

from .boundary import CONDITIONS
from .discretisation import BoundarySpec, Discretisation, Scheme
from .fluxes import FLUXES
from .gas import Gas
from .solver import PRECISIONS, Forces, Solver, Stepping

__all__ = ["CONDITIONS", "FLUXES", "PRECISIONS", "BoundarySpec", "Discretisation", "Forces",
           "Gas", "Scheme", "Solver", "Stepping"]
