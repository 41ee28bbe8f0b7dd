"""Meshes through the gmsh API: ``.geo`` geometries (meshed here) and CGNS/ADF files."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import MeshReadError
from ..mesh import Mesh

#: gmsh element families (by number of primary nodes and dimension) -> linear type name.
_GMSH_LINEAR = {(1, 2): "line", (2, 3): "triangle", (2, 4): "quad", (3, 4): "tetra",
                (3, 8): "hexahedron", (3, 6): "wedge", (3, 5): "pyramid"}
#: 2D second-order types kept whole, by (dimension, nodes): their mid-edge nodes curve
#: the edges (:attr:`meshorder.mesh.Mesh.mid_edge_nodes`).
_GMSH_SECOND_ORDER = {(1, 3): "line3", (2, 6): "triangle6", (2, 8): "quad8", (2, 9): "quad9"}


@contextmanager
def gmsh_session() -> Iterator[object]:
    """An initialised, quiet gmsh API session, always finalised."""
    import gmsh

    gmsh.initialize(readConfigFiles=False, interruptible=False)
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.option.setNumber("General.Verbosity", 1)
        yield gmsh
    finally:
        gmsh.finalize()


def read_geo(path: Path, *, mesh_size_factor: float = 1.0) -> Mesh:
    """Mesh a gmsh ``.geo`` geometry in its highest dimension and return the mesh.

    Parameters
    ----------
    path : pathlib.Path
        The geometry file.
    mesh_size_factor : float
        ``Mesh.MeshSizeFactor``; cell count grows roughly as its power ``-dim``.
    """
    if mesh_size_factor <= 0:
        raise MeshReadError(f"{path}: mesh size factor must be positive, got {mesh_size_factor}")
    with gmsh_session() as gmsh:
        _open(gmsh, path)
        gmsh.option.setNumber("Mesh.MeshSizeFactor", mesh_size_factor)
        dim = gmsh.model.getDimension()
        if dim < 2:
            raise MeshReadError(f"{path}: geometry has no surfaces or volumes to mesh")
        try:
            gmsh.model.mesh.generate(dim)
        except Exception as exc:
            raise MeshReadError(f"{path}: gmsh could not mesh the geometry: {exc}") from None
        return mesh_from_model(gmsh, str(path))


def read_with_gmsh(path: Path) -> Mesh:
    """Read any mesh file gmsh can open (CGNS/ADF, for instance)."""
    with gmsh_session() as gmsh:
        _open(gmsh, path)
        return mesh_from_model(gmsh, str(path))


def _open(gmsh: object, path: Path) -> None:
    try:
        gmsh.open(str(path))
    except Exception as exc:
        raise MeshReadError(f"{path}: gmsh could not read it: {exc}") from None


def mesh_from_model(gmsh: object, source: str) -> Mesh:
    """Convert the current gmsh model's mesh: volume cells plus marked facets.

    Facet markers come from physical groups one dimension below the cells; if
    there are none, each geometrical entity is a marker (``curve_<tag>``,
    ``surface_<tag>``).
    """
    node_tags, coords, _ = gmsh.model.mesh.getNodes()
    if len(node_tags) == 0:
        raise MeshReadError(f"{source}: gmsh found no mesh nodes")
    index = np.full(int(node_tags.max()) + 1, -1, np.int64)
    index[node_tags.astype(np.int64)] = np.arange(len(node_tags))
    points = coords.reshape(-1, 3)
    dim = max(d for d, _ in gmsh.model.getEntities() if _has_elements(gmsh, d))
    blocks: list[tuple[str, np.ndarray, np.ndarray | None]] = []
    for _, tag in gmsh.model.getEntities(dim):
        blocks += _entity_blocks(gmsh, index, dim, tag, None)
    markers = _facet_markers(gmsh, dim - 1)
    for tag, (marker, _) in markers.items():
        blocks += _entity_blocks(gmsh, index, dim - 1, tag, marker)
    names = {marker: name for marker, name in markers.values()}
    return Mesh.from_blocks(points, blocks, names, source)


def _has_elements(gmsh: object, dim: int) -> bool:
    types, _, _ = gmsh.model.mesh.getElements(dim)
    return len(types) > 0


def _facet_markers(gmsh: object, facet_dim: int) -> dict[int, tuple[int, str]]:
    """Entity tag -> (marker id, marker name) for facet entities."""
    groups = gmsh.model.getPhysicalGroups(facet_dim)
    result: dict[int, tuple[int, str]] = {}
    for _, group in groups:
        name = gmsh.model.getPhysicalName(facet_dim, group) or f"physical_{group}"
        for entity in gmsh.model.getEntitiesForPhysicalGroup(facet_dim, group):
            result.setdefault(int(entity), (int(group), name))
    if not groups:
        prefix = "curve" if facet_dim == 1 else "surface"
        for _, entity in gmsh.model.getEntities(facet_dim):
            result[int(entity)] = (int(entity), f"{prefix}_{entity}")
    return result


def _entity_blocks(gmsh: object, index: np.ndarray, dim: int, tag: int,
                   marker: int | None) -> list[tuple[str, np.ndarray, np.ndarray | None]]:
    blocks = []
    types, _, nodes = gmsh.model.mesh.getElements(dim, tag)
    for etype, enodes in zip(types, nodes, strict=True):
        _, edim, _, n_nodes, _, n_primary = gmsh.model.mesh.getElementProperties(etype)
        name = _GMSH_LINEAR.get((edim, n_primary))
        if name is None:
            continue
        kept = n_primary
        if (edim, n_nodes) in _GMSH_SECOND_ORDER:
            name, kept = _GMSH_SECOND_ORDER[edim, n_nodes], n_nodes
        conn = index[enodes.astype(np.int64).reshape(-1, n_nodes)[:, :kept]]
        marks = None if marker is None else np.full(len(conn), marker, np.int64)
        blocks.append((name, conn, marks))
    return blocks
