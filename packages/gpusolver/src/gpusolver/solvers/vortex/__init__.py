"""The 2D vortex element method (issue 15).

So far: Biot-Savart velocities by direct summation and by a Barnes-Hut tree (NumPy
references and CUDA kernels; the public entry point is :func:`gpusolver.vortex.velocity`),
and the bodies the vortex sheet will live on (:mod:`.body`: generated circles, rounded
plates and NACA sections, or the contour of a mesh marker).
"""
