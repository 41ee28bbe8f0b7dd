"""Gas model, Riemann fluxes, boundary conditions, exact solutions (NumPy and CuPy code)."""
