"""The 2D vortex element method (issue 15).

So far: Biot-Savart velocities by direct summation and by a Barnes-Hut tree (NumPy
references and CUDA kernels; the public entry point is :func:`gpusolver.vortex.velocity`),
bodies (:mod:`.body`), the vortex sheet's intensity on them (:mod:`.sheet`) and the
diffusive velocities of the viscous vortex domains away from bodies (:mod:`.diffusion`).
"""
