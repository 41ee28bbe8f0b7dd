"""The systems an integrator advances: finite volume (``fv``) today."""
