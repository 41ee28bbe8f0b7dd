"""Fixtures that build small mesh files with the gmsh API."""

from pathlib import Path

import pytest

from meshorder.io.gmsh_model import gmsh_session


def make_square(path: Path, *, version: float = 4.1, binary: bool = False,
                physical: bool = True) -> Path:
    """A unit square of ~160 triangles; markers 'wall' (sides 1, 2), 'far' (3, 4)."""
    with gmsh_session() as gmsh:
        gmsh.model.occ.addRectangle(0, 0, 0, 1, 1)
        gmsh.model.occ.synchronize()
        if physical:
            gmsh.model.addPhysicalGroup(1, [1, 2], name="wall")
            gmsh.model.addPhysicalGroup(1, [3, 4], name="far")
            gmsh.model.addPhysicalGroup(2, [1], name="fluid")
        gmsh.option.setNumber("Mesh.MeshSizeMax", 0.2)
        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", version)
        gmsh.option.setNumber("Mesh.Binary", int(binary))
        gmsh.option.setNumber("Mesh.SaveAll", 0)
        gmsh.write(str(path))
    return path


@pytest.fixture
def square_msh(tmp_path: Path) -> Path:
    """A gmsh 4.1 ASCII square with physical groups."""
    return make_square(tmp_path / "square.msh")
