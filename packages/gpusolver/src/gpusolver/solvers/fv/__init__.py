"""Cell-centred finite volume: Euler and laminar Navier-Stokes, explicit Runge-Kutta and
implicit steps, on a whole mesh or its parts."""

from gpusolver.backends import PRECISIONS
from gpusolver.monitors.forces import Forces
from gpusolver.physics.boundary import CONDITIONS, BoundarySpec
from gpusolver.physics.fluxes import FLUXES
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.discretisation import Discretisation, Scheme
from gpusolver.solvers.fv.solver import Solver, Stepping

__all__ = ["CONDITIONS", "FLUXES", "PRECISIONS", "BoundarySpec", "Discretisation", "Forces",
           "Gas", "Scheme", "Solver", "Stepping"]
