"""The 2D vortex element method (issue 15): Biot-Savart velocities of vortex elements.

So far the velocity evaluation by direct summation (NumPy reference and a tiled CUDA
kernel); the public entry point is :func:`gpusolver.vortex.velocity`.
"""
