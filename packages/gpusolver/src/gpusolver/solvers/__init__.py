"""The solution methods, one :class:`~gpusolver.solvers.base.System` each: finite volume
(``fv/``), modal DG (``dg/``) and the vortex element method (``vortex/``); what the
mesh-based ones share (``mesh_system.py``, ``parts.py``: a whole mesh is a run of one part)."""
