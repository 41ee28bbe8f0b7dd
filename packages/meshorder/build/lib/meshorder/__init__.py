"""meshorder: read any mesh, build its topology, and plan a GPU-friendly layout."""

from .errors import MeshorderError, MeshReadError, MeshWarning, PlanError, TopologyError
from .io import read_mesh, write_mesh
from .mesh import CellBlock, Mesh
from .topology import Topology

__version__ = "0.1.0"

__all__ = [
    "CellBlock", "Mesh", "MeshReadError", "MeshWarning", "MeshorderError", "PlanError",
    "Topology", "TopologyError", "__version__", "read_mesh", "write_mesh",
]
