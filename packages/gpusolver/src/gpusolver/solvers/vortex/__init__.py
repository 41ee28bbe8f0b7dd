"""The 2D vortex element method (issue 15).

Biot-Savart velocities by direct summation and by a Barnes-Hut tree (NumPy references and
CUDA kernels; the public entry point is :func:`gpusolver.vortex.velocity`), bodies
(:mod:`.body`), the vortex sheet on them (:mod:`.sheet`), the viscous vortex domains'
diffusive velocities with the body's surface terms (:mod:`.diffusion`), the wake's
restructuring (:mod:`.restructure`), their kernel launches (:mod:`.device`) and the time
loop (:mod:`.solver`).
"""
