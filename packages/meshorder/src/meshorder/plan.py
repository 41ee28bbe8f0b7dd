"""The plan: orderings, face arrays, colours and levels for one mesh, saved as ``.npz``.

The file holds only plain arrays plus one JSON string (no pickle). It records the
format version, the meshorder version that wrote it, the parameters, and the
digest of the mesh it belongs to; loading validates every array.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import tokenize
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .atomic import atomic_path
from .blocks import BLOCK_ARRAYS, BLOCK_DTYPES, FaceBlocks
from .errors import PlanError
from .npz import NpzArrays
from .part_mesh import PartMesh
from .partition import Partition
from .permutation import check_permutation, group_of, stable_argsort

#: 2: indices in the narrowest integer type, groupings stored as one group id per item
#: (their orders and offsets are rebuilt on load); 3: the faces' nodes and file facets
#: (so that a solver lays out the faces without the mesh's topology). Version 1 and 2
#: files still load, without the arrays that came later.
FORMAT_VERSION = 3

_EMPTY = np.zeros(0, dtype=np.int64)
_NO_GROUPS = np.zeros(1, dtype=np.int64)

#: Groupings (order, offsets) stored as a group id per item: name -> (order, offsets).
GROUPINGS = {"colour": ("colour_order", "colour_offsets"),
             "block_colour": ("block_block_order", "block_block_offsets"),
             "forward": ("forward_order", "forward_offsets"),
             "backward": ("backward_order", "backward_offsets"),
             "edge_colour": ("edge_colour_order", "edge_colour_offsets")}

#: The partition of the cells for several GPUs (:mod:`meshorder.partition`), when asked.
PARTITION_ARRAYS = ("part_offsets", "part_interior", "send_pairs", "send_offsets",
                    "send_cells")

#: Agglomeration multigrid levels (:mod:`meshorder.agglomeration`), when asked, and their
#: cells' sweep colours (with ``sweep_colours``).
MULTIGRID_ARRAYS = ("coarse_cells", "coarse_offsets", "coarse_colour")

#: The faces' nodes and file facets (format 3; empty in older files).
FACE_ARRAYS = ("face_nodes", "face_facet")

#: Array fields, in file order.
ARRAY_FIELDS = (
    "cell_order", "node_order", "face_order", "face_cells", "face_marker", *FACE_ARRAYS,
    "colour_order", "colour_offsets", "forward_order", "forward_offsets",
    "backward_order", "backward_offsets", "edges", "edge_colour_order", "edge_colour_offsets",
    *(f"block_{name}" for name in BLOCK_ARRAYS),
    *PARTITION_ARRAYS, *MULTIGRID_ARRAYS,
)

#: What reading a damaged ``.npz`` raises: zipfile's errors (NotImplementedError where the
#: damage hits a version or compression field), zlib's, and those of NumPy's array headers,
#: which it parses as Python literals (SyntaxError, TokenError; MemoryError for a shape
#: grown huge).
DAMAGED_NPZ = (ValueError, EOFError, NotImplementedError, SyntaxError, tokenize.TokenError,
               MemoryError, zipfile.BadZipFile, zlib.error)


@dataclass(frozen=True)
class Plan:
    """Everything a solver needs about the layout of one mesh.

    Permutations are new -> old. Face arrays are in the new face order and use
    new cell numbers. Grouped data (colours, levels) is a flat order plus offsets;
    an absent grouping has an empty order and offsets ``[0]``.

    Attributes
    ----------
    mesh_digest : str
        :meth:`meshorder.Mesh.digest` of the mesh the plan was made for.
    parameters : dict
        Options that produced the plan.
    metrics : dict
        Quality measures (see :mod:`meshorder.metrics`).
    marker_names : dict of int to str
        Boundary marker names.
    cell_order, node_order, face_order : numpy.ndarray
        Permutations new -> old (faces: old = the topology's native face index).
    face_cells : numpy.ndarray
        ``(n_faces, 2)`` left and right (or -1) cell of each face, new numbering.
    face_marker : numpy.ndarray
        Marker of each face, -1 for interior faces.
    face_nodes : numpy.ndarray
        ``(n_faces, k)`` the mesh's nodes of each face (-1 pads; ``k`` is 2 in 2D, 4 in
        3D, as :attr:`meshorder.Topology.face_nodes`), ``(0, 2)`` in plans of format 2
        or older.
    face_facet : numpy.ndarray
        The boundary facet of the mesh file on each face (-1: none; empty in plans of
        format 2 or older).
    colour_order, colour_offsets : numpy.ndarray
        Face colour classes (new face indices).
    forward_order, forward_offsets, backward_order, backward_offsets : numpy.ndarray
        LU-SGS hyperplanes (new cell indices).
    edges : numpy.ndarray
        ``(n_edges, 2)`` edges in the new edge order, new node numbering (node schemes).
    edge_colour_order, edge_colour_offsets : numpy.ndarray
        Edge colour classes.
    block_cell_offsets, block_cells, ..., block_block_offsets : numpy.ndarray
        The face blocks of the block-coloured kernels (:meth:`face_blocks`), when the
        plan was made with ``blocks``.
    part_offsets, part_interior : numpy.ndarray
        Parts for several GPUs (``[0]`` and empty: none): part ``p`` is new cells
        ``[part_offsets[p], part_offsets[p + 1])``, its first ``part_interior[p]`` cells
        with no neighbour in another part.
    send_pairs, send_offsets, send_cells : numpy.ndarray
        Halo lists: for pair ``k``, part ``send_pairs[k, 0]`` sends to part
        ``send_pairs[k, 1]`` the new cells ``send_cells[send_offsets[k]:send_offsets[k+1]]``
        (see :meth:`partition`).
    coarse_cells, coarse_offsets : numpy.ndarray
        Multigrid levels (``[0]`` and empty: none), see :meth:`coarse_levels`.
    coarse_colour : numpy.ndarray
        The sweep colour of every coarse cell, level after level (empty: none), see
        :meth:`coarse_colours`.
    parts : tuple of PartMesh
        With partitions: every part's mesh (own and halo cells), what one rank reads
        (:func:`read_plan_part`); empty otherwise.
    """

    mesh_digest: str
    parameters: dict
    metrics: dict
    marker_names: dict[int, str]
    cell_order: np.ndarray
    node_order: np.ndarray
    face_order: np.ndarray
    face_cells: np.ndarray
    face_marker: np.ndarray
    face_nodes: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    face_facet: np.ndarray = field(default_factory=lambda: _EMPTY)
    colour_order: np.ndarray = field(default_factory=lambda: _EMPTY)
    colour_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    forward_order: np.ndarray = field(default_factory=lambda: _EMPTY)
    forward_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    backward_order: np.ndarray = field(default_factory=lambda: _EMPTY)
    backward_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    edges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    edge_colour_order: np.ndarray = field(default_factory=lambda: _EMPTY)
    edge_colour_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    block_cell_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    block_cells: np.ndarray = field(default_factory=lambda: _EMPTY)
    block_local_left: np.ndarray = field(default_factory=lambda: _EMPTY)
    block_local_right: np.ndarray = field(default_factory=lambda: _EMPTY)
    block_side_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    block_sides: np.ndarray = field(default_factory=lambda: _EMPTY)
    block_block_order: np.ndarray = field(default_factory=lambda: _EMPTY)
    block_block_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    part_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    part_interior: np.ndarray = field(default_factory=lambda: _EMPTY)
    send_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    send_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    send_cells: np.ndarray = field(default_factory=lambda: _EMPTY)
    coarse_cells: np.ndarray = field(default_factory=lambda: _EMPTY)
    coarse_offsets: np.ndarray = field(default_factory=lambda: _NO_GROUPS)
    coarse_colour: np.ndarray = field(default_factory=lambda: _EMPTY)
    parts: tuple[PartMesh, ...] = ()
    format_version: int = FORMAT_VERSION
    created_by: str = ""

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return len(self.cell_order)

    @property
    def n_faces(self) -> int:
        """Number of faces."""
        return len(self.face_order)

    def coarse_levels(self) -> list[np.ndarray]:
        """Agglomeration multigrid levels: entry ``k`` maps the cells of level ``k`` (0:
        the mesh, new numbering) to their coarse cells of level ``k + 1``."""
        offsets = self.coarse_offsets
        return [self.coarse_cells[a:b] for a, b in itertools.pairwise(offsets)]

    def coarse_colours(self) -> list[np.ndarray]:
        """The cell colours of each coarse level for LU-SGS colour sweeps (entry ``k``:
        the cells of level ``k + 1``), or ``[]`` when the plan has none."""
        if not len(self.coarse_colour):
            return []
        sizes = [int(coarse.max()) + 1 for coarse in self.coarse_levels()]
        return np.split(self.coarse_colour, np.cumsum(sizes)[:-1])

    @property
    def n_interior_faces(self) -> int:
        """Interior faces come first; this is where boundary faces start."""
        return int(np.count_nonzero(self.face_marker < 0))

    def boundary_ranges(self) -> dict[str, tuple[int, int]]:
        """Marker name -> ``(first, end)`` range of its faces in the new face order."""
        ranges = {}
        for marker in np.unique(self.face_marker[self.face_marker >= 0]):
            where = np.flatnonzero(self.face_marker == marker)
            ranges[self.marker_names[int(marker)]] = (int(where[0]), int(where[-1]) + 1)
        return ranges

    def face_blocks(self) -> FaceBlocks | None:
        """The plan's face blocks in the kernels' dtypes, or None if it has none."""
        if len(self.block_cells) == 0:
            return None
        return FaceBlocks(block_size=int(self.parameters["blocks"]),
                          **{name: getattr(self, f"block_{name}").astype(BLOCK_DTYPES[name])
                             for name in BLOCK_ARRAYS})

    @property
    def n_parts(self) -> int:
        """Number of parts (1 when the plan was made without partitions)."""
        return max(1, len(self.part_offsets) - 1)

    def partition(self) -> Partition | None:
        """The plan's partition (new numbering: ``order`` is the identity), or None."""
        if len(self.part_offsets) <= 1:
            return None
        send = _send_lists(self.send_pairs, self.send_offsets, self.send_cells)
        return Partition(np.arange(self.n_cells), self.part_offsets, self.part_interior, send)

    def part(self, part: int) -> PlanPart:
        """What the rank of ``part`` needs (as :func:`read_plan_part` reads it)."""
        split = self.partition()
        if split is None or not self.parts:
            raise PlanError("the plan has no parts; make it with "
                            "`meshorder reorder --partitions N`")
        return PlanPart(self.mesh_digest, self.marker_names, list(self.boundary_ranges()),
                        split.offsets, split.send, self.parts[part])

    def check_mesh(self, digest: str, source: str = "the mesh") -> None:
        """Raise :class:`PlanError` unless the plan was made for the mesh with ``digest``."""
        if digest != self.mesh_digest:
            raise PlanError(f"this plan was made for another mesh (plan digest "
                            f"{self.mesh_digest[:12]}..., {source} has {digest[:12]}...); "
                            "make a new plan with `meshorder reorder`")

    def save(self, path: str | Path, *, compress: bool = False) -> None:
        """Write the plan to ``path`` (``.npz``) through a temporary file and a rename.

        Indices are stored in the narrowest integer type that holds them and each
        grouping as one group id per item (about a third of the int64 arrays);
        ``compress`` deflates the arrays too (smaller, slower to write and read).
        """
        meta = {
            "format_version": FORMAT_VERSION, "created_by": self.created_by,
            "mesh_digest": self.mesh_digest, "parameters": self.parameters,
            "metrics": self.metrics,
            "marker_names": {str(k): v for k, v in self.marker_names.items()},
            "groups": {name: len(getattr(self, offsets)) - 1
                       for name, (_, offsets) in GROUPINGS.items()},
            "boundary_markers": list(self.boundary_ranges()),
            "parts": [{"cells": [b.type for b in part.mesh.cells],
                       "facets": [b.type for b in part.mesh.facets]} for part in self.parts],
        }
        grouped = {f for pair in GROUPINGS.values() for f in pair}
        arrays = {name: _narrow(getattr(self, name)) for name in ARRAY_FIELDS
                  if name not in grouped}
        for name, (order, offsets) in GROUPINGS.items():
            arrays[f"{name}_group"] = _narrow(group_of(getattr(self, order),
                                                       getattr(self, offsets)))
        for part in self.parts:
            arrays |= {_part_key(part.part, name): _narrow(array) if array.dtype.kind == "i"
                       else array for name, array in part.arrays().items()}
        write = np.savez_compressed if compress else np.savez
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            write(handle, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """Read and validate a plan.

        Raises
        ------
        PlanError
            If the file is not a plan, was written by a newer format, or is inconsistent.
        """
        try:
            with NpzArrays(path) as data:
                contents = {name: data[name] for name in data.files
                            if not name.startswith(PART_PREFIX)}
                meta = _meta(path, data)
                parts = tuple(_read_part(path, data, meta, p)
                              for p in range(len(meta.get("parts", []))))
        except PlanError:
            raise
        except (OSError, *DAMAGED_NPZ) as exc:
            reason = "truncated or corrupted?" if not isinstance(exc, OSError) else exc
            raise PlanError(f"{path}: not a meshorder plan ({reason})") from None
        contents.pop("meta")
        version = meta["format_version"]
        if version >= 2:
            try:
                contents = _ungroup(contents, meta.get("groups", {}))
            except PlanError as exc:  # the file named, as in every other error of it
                raise PlanError(f"{path}: {exc}") from None
        contents = _optional_defaults() | contents
        missing = [name for name in ARRAY_FIELDS if name not in contents]
        if missing:
            raise PlanError(f"{path}: plan lacks arrays {', '.join(missing)}")
        # widened side by side: NumPy's casts let go of Python's lock (0.45 s of a 1.7M-cell
        # plan's loading in one thread on 2 cores, 2026-11-28)
        with ThreadPoolExecutor() as pool:
            wide = dict(zip(ARRAY_FIELDS, pool.map(
                lambda name: np.asarray(contents[name], dtype=np.int64), ARRAY_FIELDS),
                strict=True))
        plan = cls(
            mesh_digest=meta["mesh_digest"], parameters=meta["parameters"],
            metrics=meta["metrics"],
            marker_names={int(k): v for k, v in meta["marker_names"].items()},
            format_version=version, created_by=meta.get("created_by", ""), parts=parts,
            **wide,
        )
        try:
            plan.validate()
        except PlanError as exc:
            raise PlanError(f"{path}: {exc}") from None
        return plan

    def validate(self) -> None:
        """Check shapes, ranges and that every permutation really is one."""
        n, n_faces = self.n_cells, self.n_faces
        check_permutation(self.cell_order, n, "cell_order")
        check_permutation(self.node_order, len(self.node_order), "node_order")
        check_permutation(self.face_order, n_faces, "face_order")
        if self.face_cells.shape != (n_faces, 2) or self.face_marker.shape != (n_faces,):
            raise PlanError(f"face arrays have shapes {self.face_cells.shape} and "
                            f"{self.face_marker.shape}, expected ({n_faces}, 2) and ({n_faces},)")
        if n_faces and (self.face_cells.min() < -1 or self.face_cells.max() >= n
                        or self.face_cells[:, 0].min() < 0):
            raise PlanError(f"face_cells holds cell ids outside 0..{n - 1}")
        self._check_face_nodes()
        unknown = set(np.unique(self.face_marker[self.face_marker >= 0]).tolist()) - set(
            self.marker_names)
        if unknown:
            raise PlanError(f"face_marker uses marker ids {sorted(unknown)} that have no name")
        _check_groups(self.colour_order, self.colour_offsets, n_faces, "colour")
        _check_groups(self.forward_order, self.forward_offsets, n, "forward level")
        _check_groups(self.backward_order, self.backward_offsets, n, "backward level")
        n_nodes = len(self.node_order)
        if len(self.edges) and (self.edges.min() < 0 or self.edges.max() >= n_nodes):
            raise PlanError(f"edges hold node ids outside 0..{n_nodes - 1}")
        _check_groups(self.edge_colour_order, self.edge_colour_offsets, len(self.edges),
                      "edge colour")
        n_blocks = len(self.block_cell_offsets) - 1
        if len(self.block_cells) and (self.block_cells.min() < 0 or self.block_cells.max() >= n
                                      or self.block_cell_offsets[-1] != len(self.block_cells)):
            raise PlanError("face blocks hold cells outside the mesh or do not add up")
        _check_groups(self.block_block_order, self.block_block_offsets, n_blocks,
                      "block colour")
        self._check_partition()
        self._check_coarse_levels()

    def has_face_nodes(self) -> bool:
        """Whether the plan holds its faces' nodes and facets (format 3 and later)."""
        return len(self.face_nodes) > 0 or self.n_faces == 0

    def _check_face_nodes(self) -> None:
        if not len(self.face_nodes) and not len(self.face_facet):
            return
        n_faces, n_nodes = self.n_faces, len(self.node_order)
        nodes, facet = self.face_nodes, self.face_facet
        if nodes.ndim != 2 or len(nodes) != n_faces or nodes.shape[1] not in (2, 4):
            raise PlanError(f"face_nodes has shape {nodes.shape}, expected ({n_faces}, 2) "
                            f"or ({n_faces}, 4)")
        if facet.shape != (n_faces,):
            raise PlanError(f"face_facet has shape {facet.shape}, expected ({n_faces},)")
        if n_faces and (nodes.min() < -1 or nodes.max() >= n_nodes or nodes[:, :2].min() < 0
                        or facet.min() < -1):
            raise PlanError(f"face_nodes holds node ids outside 0..{n_nodes - 1}, or "
                            "face_facet a facet below -1")

    def _check_coarse_levels(self) -> None:
        offsets, n = self.coarse_offsets, self.n_cells
        if offsets[0] != 0 or offsets[-1] != len(self.coarse_cells):
            raise PlanError("multigrid levels do not add up to their cells")
        for k, coarse in enumerate(self.coarse_levels()):
            if len(coarse) != n or coarse.min() < 0 or coarse.max() >= n:
                raise PlanError(f"multigrid level {k + 1} does not map the {n} cells of "
                                f"level {k} to fewer coarse cells")
            n = int(coarse.max()) + 1
        n_coarse = sum(int(coarse.max()) + 1 for coarse in self.coarse_levels())
        colour = self.coarse_colour
        if len(colour) and (len(colour) != n_coarse or colour.min() < 0):
            raise PlanError(f"coarse_colour must hold a colour (>= 0) for each of the "
                            f"{n_coarse} coarse cells")

    def _check_partition(self) -> None:
        offsets, n = self.part_offsets, self.n_cells
        if len(offsets) <= 1:
            return
        n_parts = len(offsets) - 1
        if offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) <= 0):
            raise PlanError(f"part offsets must rise strictly from 0 to {n}")
        if (len(self.part_interior) != n_parts or np.any(self.part_interior < 0)
                or np.any(self.part_interior > np.diff(offsets))):
            raise PlanError(f"part_interior must hold {n_parts} counts within the parts")
        pairs, send = self.send_pairs, self.send_offsets
        if (pairs.shape != (len(send) - 1, 2) or (len(pairs) and (pairs.min() < 0
                                                                  or pairs.max() >= n_parts))
                or send[0] != 0 or send[-1] != len(self.send_cells)
                or np.any(np.diff(send) < 0)):
            raise PlanError("halo lists do not match the parts")
        if len(self.send_cells) and (self.send_cells.min() < 0 or self.send_cells.max() >= n):
            raise PlanError(f"halo lists hold cells outside 0..{n - 1}")
        if self.parts and [part.part for part in self.parts] != list(range(n_parts)):
            raise PlanError(f"the plan holds {len(self.parts)} part meshes for {n_parts} parts")

    def replace(self, **changes: object) -> Plan:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def with_face_order(self, order: np.ndarray) -> Plan:
        """A copy with its faces taken in ``order`` (new -> this plan's face index), every
        face array with them.

        Raises
        ------
        PlanError
            If the plan groups its faces (colours or blocks), which would not follow.
        """
        if len(self.colour_order) or len(self.block_cells):
            raise PlanError("a plan with face colours or blocks keeps its face order")
        changes = {name: getattr(self, name)[order]
                   for name in ("face_order", "face_cells", "face_marker")}
        if self.has_face_nodes():
            changes |= {name: getattr(self, name)[order] for name in FACE_ARRAYS}
        return self.replace(**changes)


@dataclass(frozen=True)
class PlanPart:
    """What one rank of a partitioned run reads of a plan: the partition and its part.

    Attributes
    ----------
    mesh_digest : str
        :meth:`meshorder.Mesh.digest` of the whole mesh.
    marker_names : dict of int to str
        Boundary marker names.
    boundary_markers : list of str
        The markers on the whole mesh's boundary faces.
    offsets : numpy.ndarray
        ``(n_parts + 1,)``: part ``p`` owns plan cells ``[offsets[p], offsets[p + 1])``.
    send : dict of (int, int) to numpy.ndarray
        The halo lists (:attr:`meshorder.partition.Partition.send`).
    mesh : PartMesh
        This rank's part.
    children : int
        A part refined on its rank (:func:`meshorder.part_refine.refine_part`): the fine
        cells of each cell of the coarse plan (``8^levels``), so that plan cell ``c``
        lies in the coarse plan's cell ``c // children``; 1 for a part as planned.
    """

    mesh_digest: str
    marker_names: dict[int, str]
    boundary_markers: list[str]
    offsets: np.ndarray
    send: dict[tuple[int, int], np.ndarray]
    mesh: PartMesh
    children: int = 1

    @property
    def n_parts(self) -> int:
        """Number of parts in the plan."""
        return len(self.offsets) - 1

    @property
    def n_cells(self) -> int:
        """Number of cells of the whole mesh."""
        return int(self.offsets[-1])

    def own(self) -> np.ndarray:
        """Positions among the part mesh's cells of the part's own cells, in plan order."""
        cells = self.mesh.cells
        first, end = self.offsets[self.mesh.part], self.offsets[self.mesh.part + 1]
        own = np.flatnonzero((cells >= first) & (cells < end))
        return own[np.argsort(cells[own])]


#: The prefix of the arrays of the parts in a plan file (``part.<p>.<name>``).
PART_PREFIX = "part."


def _part_key(part: int, name: str) -> str:
    return f"{PART_PREFIX}{part}.{name}"


def read_plan_part(path: str | Path, part: int) -> PlanPart:
    """Read, of the plan at ``path``, the partition and the mesh of ``part`` only.

    Raises
    ------
    PlanError
        If the file is not a plan, has no parts, or no part ``part``.
    """
    try:
        with NpzArrays(path) as data:
            meta = _meta(path, data)
            if not meta.get("parts"):
                raise PlanError(f"{path}: the plan has no parts; make it with "
                                "`meshorder reorder --partitions N`")
            if not 0 <= part < len(meta["parts"]):
                raise PlanError(f"{path}: the plan has {len(meta['parts'])} parts, "
                                f"not a part {part}")
            arrays = {name: np.asarray(data[name], np.int64) for name in PARTITION_ARRAYS}
            mesh = _read_part(path, data, meta, part)
    except PlanError:
        raise
    except (OSError, *DAMAGED_NPZ) as exc:
        reason = "truncated or corrupted?" if not isinstance(exc, OSError) else exc
        raise PlanError(f"{path}: not a meshorder plan ({reason})") from None
    except KeyError as exc:
        raise PlanError(f"{path}: plan lacks {exc}") from None
    send = _send_lists(arrays["send_pairs"], arrays["send_offsets"], arrays["send_cells"])
    return PlanPart(meta["mesh_digest"], {int(k): v for k, v in meta["marker_names"].items()},
                    list(meta["boundary_markers"]), arrays["part_offsets"], send, mesh)


def _send_lists(pairs: np.ndarray, offsets: np.ndarray, cells: np.ndarray) -> dict:
    """The halo lists by (sending part, receiving part), from their flat arrays."""
    return {(int(p), int(q)): cells[a:b]
            for (p, q), a, b in zip(pairs.reshape(-1, 2), offsets[:-1], offsets[1:], strict=True)}


def _meta(path: str | Path, data) -> dict:
    """The metadata of an open plan file, its format checked."""
    try:
        meta = json.loads(str(data["meta"]))
    except (KeyError, json.JSONDecodeError):
        raise PlanError(f"{path}: not a meshorder plan (no metadata)") from None
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise PlanError(f"{path}: plan format {version!r} is newer than this meshorder "
                        f"reads ({FORMAT_VERSION}); upgrade meshorder")
    return meta


def _read_part(path: str | Path, data, meta: dict, part: int) -> PartMesh:
    """Part ``part`` of an open plan file."""
    prefix = _part_key(part, "")
    arrays = {name[len(prefix):]: data[name] for name in data.files if name.startswith(prefix)}
    types = meta["parts"][part]
    return PartMesh.from_arrays(part, arrays, types["cells"], types["facets"],
                                {int(k): v for k, v in meta["marker_names"].items()},
                                f"{path} (part {part})")


def _optional_defaults() -> dict[str, np.ndarray]:
    """Defaults of the fields older plan files lack (face nodes, face blocks, partitions,
    multigrid)."""
    return {f.name: f.default_factory() for f in dataclasses.fields(Plan)
            if f.name.startswith("block_")
            or f.name in (*FACE_ARRAYS, *PARTITION_ARRAYS, *MULTIGRID_ARRAYS)}


def _narrow(array: np.ndarray) -> np.ndarray:
    """``array`` in the narrowest signed integer type that holds its values."""
    if array.size == 0:
        return array.astype(np.int8)
    low, high = int(array.min()), int(array.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return array.astype(dtype)
    return array.astype(np.int64)


def _ungroup(contents: dict, groups: dict) -> dict:
    """Rebuild each grouping's order (items by group, increasing inside) and offsets."""
    contents = dict(contents)
    for name, (order, offsets) in GROUPINGS.items():
        key = f"{name}_group"
        if key not in contents:
            continue
        group = np.asarray(contents.pop(key), dtype=np.int64)
        n_groups = int(groups.get(name, 0))
        if len(group) and (group.min() < 0 or group.max() >= n_groups):
            raise PlanError(f"{name} groups hold ids outside 0..{n_groups - 1}")
        contents[order] = stable_argsort(group)
        counts = np.bincount(group, minlength=n_groups)
        contents[offsets] = np.concatenate([[0], np.cumsum(counts)])
    return contents


def _check_groups(order: np.ndarray, offsets: np.ndarray, n: int, what: str) -> None:
    """An absent grouping, or a permutation of ``0..n-1`` split by monotone offsets."""
    if len(order) == 0 and np.array_equal(offsets, _NO_GROUPS):
        return
    check_permutation(order, n, f"{what} order")
    if offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) < 0):
        raise PlanError(f"{what} offsets must rise from 0 to {n}")
