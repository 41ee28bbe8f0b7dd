"""Mesh readers and writers, chosen by file extension.

``read_mesh`` dispatches to one reader per source: our own SU2 parser (it keeps
marker names), gmsh for ``.geo`` geometry and for CGNS files meshio cannot read,
and meshio for everything else.
"""

from .read import READERS, read_mesh
from .write import check_format, write_mesh

__all__ = ["READERS", "check_format", "read_mesh", "write_mesh"]
