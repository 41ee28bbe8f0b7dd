"""Modal discontinuous Galerkin (RKDG) for the 2-D Euler equations: the NumPy reference.

``reference``: quadrature and orthonormal bases of the reference elements; ``layout``:
the elements and faces of a mesh in a plan's order; ``solver``: the right-hand side,
explicit Runge-Kutta steps, projection and error norms.
"""
