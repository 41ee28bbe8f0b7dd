"""Reader registry: file extension -> reader function."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import MeshReadError
from ..mesh import Mesh
from . import gmsh_model, meshio_reader, plot3d, su2

Reader = Callable[..., Mesh]


def _read_cgns(path: Path, **options: float) -> Mesh:
    """CGNS/HDF5 through meshio; CGNS/ADF (which meshio cannot read) through gmsh."""
    try:
        return meshio_reader.read(path)
    except MeshReadError as meshio_error:
        try:
            return gmsh_model.read_with_gmsh(path)
        except MeshReadError as gmsh_error:
            raise MeshReadError(f"{meshio_error}; gmsh also failed: {gmsh_error}") from None


#: Readers for extensions that need more than meshio. Everything else goes to meshio.
READERS: dict[str, Reader] = {
    ".su2": su2.read,
    ".geo": gmsh_model.read_geo,
    ".cgns": _read_cgns,
    **{suffix: plot3d.read for suffix in plot3d.SUFFIXES},
}


def read_mesh(path: str | Path, *, mesh_size_factor: float = 1.0) -> Mesh:
    """Read a volume mesh with its boundary markers.

    Parameters
    ----------
    path : str or pathlib.Path
        Any format meshio reads (gmsh ``.msh`` 2.2/4.1, VTK/VTU, XDMF, CGNS, ...),
        SU2 (marker names kept), ASCII PLOT3D (``.p2dfmt``, ``.p3dfmt``, ``.x``, ...;
        boundaries from the Neutral Map File beside it,
        :mod:`meshorder.io.plot3d`), or a gmsh ``.geo`` geometry, which is meshed.
    mesh_size_factor : float
        gmsh ``Mesh.MeshSizeFactor`` for ``.geo`` files; smaller is finer.

    Returns
    -------
    Mesh

    Raises
    ------
    MeshReadError
        If the file is missing, not a mesh, truncated or malformed.
    TopologyError
        If it holds no volume cells, or a degenerate or inverted cell.
    """
    path = Path(path)
    if path.is_dir():
        raise MeshReadError(f"{path}: is a folder, not a mesh file")
    if not path.is_file():
        raise MeshReadError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise MeshReadError(f"{path}: empty file")
    reader = READERS.get(path.suffix.lower())
    if reader is gmsh_model.read_geo:
        return reader(path, mesh_size_factor=mesh_size_factor)
    if reader is not None:
        return reader(path)
    return meshio_reader.read(path)
