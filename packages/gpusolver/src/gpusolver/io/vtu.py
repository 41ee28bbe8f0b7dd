"""VTK XML unstructured grids (``.vtu``), arrays as inline base64 binary.

The layout is meshio's (``format="binary"``: each array's UInt64 header and its bytes
base64-encoded apart), so ParaView, VTK and meshio read it; written straight from the
arrays instead of through an XML tree: on the 1.7M-tetrahedron ONERA M6 meshio's writer
took 0.87 s of a 10.6 s run (H100 host, 2026-11-27). Raw appended data would be faster
still, but meshio's reader mistakes one raw array for another when a raw offset equals an
earlier array's base64 one. Compression uses VTK's block format
(``vtkZLibDataCompressor``, ``vtkLZMADataCompressor``): a header of UInt64 block sizes,
then each block deflated.

The base64 text is encoded by NumPy in pieces on a pool of threads (NumPy lets go of
Python's lock, ``binascii`` does not), and the blocks are compressed there too.
"""

from __future__ import annotations

import binascii
import lzma
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from meshorder.atomic import atomic_path

#: meshio's cell type name -> VTK cell type id (node orders are VTK's, as meshio's are).
VTK_CELL_TYPES = {"vertex": 1, "line": 3, "triangle": 5, "quad": 9, "tetra": 10,
                  "hexahedron": 12, "wedge": 13, "pyramid": 14}

#: ``[output] vtu_compression``: how the arrays are stored. On a 1M-tetrahedron wing
#: meshio's ``zlib`` took 3.6-5.7 s for 42 MB (a uniform flow) to 75 MB (a converged one)
#: against 132 MB uncompressed.
COMPRESSORS = {"none": None, "zlib": "vtkZLibDataCompressor", "lzma": "vtkLZMADataCompressor"}

#: Bytes of each compressed block (VTK's readers take any size).
BLOCK_BYTES = 1 << 20

#: Bytes encoded as one base64 piece by one thread (a multiple of 3: the pieces' texts
#: join without padding into the text of the whole).
BASE64_BYTES = 3 << 20

_ALPHABET = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                          np.uint8)
#: The two base64 characters of each 12-bit value, as one little-endian 16-bit word.
_PAIRS = (_ALPHABET[np.arange(4096) >> 6].astype("<u2")
          | (_ALPHABET[np.arange(4096) & 63].astype("<u2") << 8))

_VTK_TYPES = {np.dtype(np.float64): "Float64", np.dtype(np.float32): "Float32",
              np.dtype(np.int64): "Int64", np.dtype(np.int32): "Int32",
              np.dtype(np.uint8): "UInt8"}


def write_vtu(path: str | Path, points: np.ndarray, cells: list[tuple[str, np.ndarray]],
              cell_data: dict[str, np.ndarray] | None = None,
              point_data: dict[str, np.ndarray] | None = None,
              compression: str = "none") -> None:
    """Write an unstructured grid to ``path`` through a temporary file and a rename.

    Parameters
    ----------
    path : str or pathlib.Path
    points : numpy.ndarray
        ``(n_points, 3)``.
    cells : list of (str, numpy.ndarray)
        Blocks of one cell type (a key of :data:`VTK_CELL_TYPES`) and their nodes.
    cell_data, point_data : dict of str to numpy.ndarray
        One value (``(n,)``) or a vector (``(n, k)``) per cell (in block order) or point.
    compression : str
        A key of :data:`COMPRESSORS`.

    Examples
    --------
    >>> import meshio, tempfile
    >>> points = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_vtu(f"{folder}/t.vtu", points, [("triangle", np.array([[0, 1, 2]]))],
    ...               cell_data={"p": np.array([2.5])})
    ...     mesh = meshio.read(f"{folder}/t.vtu")
    >>> mesh.cells[0].type, mesh.cell_data["p"][0].tolist()
    ('triangle', [2.5])
    """
    compressor = COMPRESSORS[compression]
    blocks = [(kind, np.asarray(nodes)) for kind, nodes in cells if len(nodes)]
    sizes = [nodes.shape[1] for _, nodes in blocks]
    n_cells = sum(len(nodes) for _, nodes in blocks)
    arrays = [("Points", None, np.ascontiguousarray(points, np.float64))]
    # node numbers and offsets as Int32 where they fit (VTK reads either): a quarter less
    # to encode and write on a tetrahedral mesh
    n_nodes = sum(nodes.size for _, nodes in blocks)
    index = np.int32 if max(len(points), n_nodes) < np.iinfo(np.int32).max else np.int64
    arrays += [
        ("Cells", "connectivity", _concatenated([nodes.ravel() for _, nodes in blocks],
                                                index)),
        ("Cells", "offsets", np.cumsum(np.repeat(sizes, [len(n) for _, n in blocks]),
                                       dtype=index)),
        ("Cells", "types", _concatenated([np.full(len(nodes), VTK_CELL_TYPES[kind], np.uint8)
                                          for kind, nodes in blocks], np.uint8)),
    ]
    arrays += [("CellData", name, _stored(values)) for name, values in (cell_data or {}).items()]
    arrays += [("PointData", name, _stored(values))
               for name, values in (point_data or {}).items()]
    head, tail = _xml(arrays, len(points), n_cells, compressor)
    with (ThreadPoolExecutor() as pool, atomic_path(path) as tmp, open(tmp, "wb") as handle):
        texts = [_encoded(values, compressor, pool) for *_, values in arrays]
        handle.write(head[0].encode())
        for pieces, after in zip(texts, head[1:], strict=True):
            for piece in pieces:
                handle.write(piece.result())
            handle.write(after.encode())
        handle.write(tail.encode())


def _stored(values) -> np.ndarray:
    """``values`` C-contiguous in a type VTK names (other integers as Int64, other numbers
    as Float64)."""
    values = np.ascontiguousarray(values)
    if values.dtype in _VTK_TYPES:
        return values
    return values.astype(np.int64 if values.dtype.kind in "iub" else np.float64)


def _concatenated(pieces: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(pieces).astype(dtype, copy=False) if pieces else np.zeros(0, dtype)


def _encoded(values: np.ndarray, compressor: str | None, pool: ThreadPoolExecutor
             ) -> list[Future]:
    """The base64 text of one array, in pieces computed on ``pool``: its UInt64 byte count
    (or VTK's compressed-block header) and its bytes (or the compressed blocks), each
    encoded apart."""
    raw = memoryview(values).cast("B")
    if compressor is None:
        header, body = np.uint64(raw.nbytes).tobytes(), raw
    else:
        compress = zlib.compress if compressor == COMPRESSORS["zlib"] else lzma.compress
        chunks = [chunk.result() for chunk in
                  [pool.submit(compress, raw[start:start + BLOCK_BYTES])
                   for start in range(0, raw.nbytes, BLOCK_BYTES)]] or [compress(b"")]
        last = raw.nbytes - (len(chunks) - 1) * BLOCK_BYTES
        header = np.array([len(chunks), BLOCK_BYTES, last, *map(len, chunks)],
                          np.uint64).tobytes()
        body = memoryview(b"".join(chunks))
    return [*_base64(memoryview(header), pool), *_base64(body, pool)]


def _base64(data: memoryview, pool: ThreadPoolExecutor) -> list[Future]:
    """``binascii.b2a_base64(data, newline=False)`` in pieces computed on ``pool``.

    Examples
    --------
    >>> data = memoryview(bytes(range(256)) * 40000)  # 10 MB: several pieces
    >>> with ThreadPoolExecutor() as pool:
    ...     text = b"".join(piece.result() for piece in _base64(data, pool))
    >>> text == binascii.b2a_base64(data, newline=False)
    True
    """
    whole = len(data) - len(data) % 3
    pieces = [pool.submit(_base64_of_groups, data[start:min(start + BASE64_BYTES, whole)])
              for start in range(0, whole, BASE64_BYTES)]
    if whole < len(data):  # the last one or two bytes, padded
        pieces.append(pool.submit(binascii.b2a_base64, data[whole:], newline=False))
    return pieces


def _base64_of_groups(data: memoryview) -> bytes:
    """Base64 of ``data``, a multiple of 3 bytes: each group of 3 bytes as two 12-bit
    values, each looked up as two characters."""
    octets = np.frombuffer(data, np.uint8)
    groups = ((octets[0::3].astype(np.uint32) << 16) | (octets[1::3].astype(np.uint32) << 8)
              | octets[2::3])
    text = np.empty((len(groups), 2), "<u2")
    text[:, 0] = _PAIRS[groups >> 12]
    text[:, 1] = _PAIRS[groups & 0xFFF]
    return text.tobytes()


def _xml(arrays: list, n_points: int, n_cells: int,
         compressor: str | None) -> tuple[list[str], str]:
    """The XML around the arrays' texts: the text before the first, after each but the
    last, and after the last (in ``head``), and the closing tags."""
    sections = ("Points", "Cells", "CellData", "PointData")
    pieces: list[str] = []
    compressed = f' compressor="{compressor}"' if compressor else ""
    text = ('<?xml version="1.0"?>\n'
            '<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" '
            f'header_type="UInt64"{compressed}>\n'
            f'  <UnstructuredGrid>\n    <Piece NumberOfPoints="{n_points}" '
            f'NumberOfCells="{n_cells}">\n')
    for section in sections:
        mine = [(name, values) for where, name, values in arrays if where == section]
        if not mine:
            continue
        text += f"      <{section}>\n"
        for name, values in mine:
            named = f' Name="{name}"' if name else ""
            if values.ndim > 1:  # one component (scalars) is VTK's default
                named += f' NumberOfComponents="{values.shape[1]}"'
            text += (f'        <DataArray type="{_VTK_TYPES[values.dtype]}"{named} '
                     'format="binary">')
            pieces.append(text)
            text = "</DataArray>\n"
        text += f"      </{section}>\n"
    pieces.append(text)
    return pieces, "    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n"
