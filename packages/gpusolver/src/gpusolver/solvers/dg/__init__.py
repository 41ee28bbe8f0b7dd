"""Modal discontinuous Galerkin (RKDG) for the 2-D Euler equations.

``reference``: quadrature and orthonormal bases of the reference elements; ``layout``:
the elements and faces of a mesh in a plan's order; ``solver``: the right-hand side (the
NumPy reference), explicit Runge-Kutta steps, projection, loads and outputs; ``fused``: the
right-hand side in the CUDA kernels of ``kernels/dg.cu``; ``shock``: the modal-decay sensor
and filter.
"""
