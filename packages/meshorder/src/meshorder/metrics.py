"""Layout quality measures of an ordering.

All functions take data already in the new numbering: a graph whose vertex ids
are new indices, and faces as (lower, higher) new cell indices in face order.
"""

from __future__ import annotations

import numpy as np

from .graph import gather_neighbours
from .topology import CSR

WARP = 32
SECTOR_BYTES = 32


def matrix_metrics(graph: CSR) -> dict[str, float]:
    """Bandwidth, profile and index span of the adjacency matrix.

    Parameters
    ----------
    graph : CSR
        Adjacency in the new numbering.

    Returns
    -------
    dict
        ``bandwidth`` (max ``|i - j|`` over edges), ``profile`` (sum over rows of
        ``i - min(j <= i)``), ``mean_span`` and ``max_span`` (per row, highest minus
        lowest index among the row and its neighbours).

    Examples
    --------
    >>> path = CSR(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))
    >>> matrix_metrics(path)["bandwidth"]
    1
    """
    n = graph.n
    rows = np.repeat(np.arange(n), graph.degrees())
    cols = graph.indices
    bandwidth = int(np.abs(rows - cols).max(initial=0))
    low = np.arange(n)
    high = np.arange(n)
    np.minimum.at(low, rows, cols)
    np.maximum.at(high, rows, cols)
    span = high - low
    return {
        "bandwidth": bandwidth,
        "profile": int((np.arange(n) - low).sum()),
        "mean_span": float(span.mean()) if n else 0.0,
        "max_span": int(span.max(initial=0)),
    }


def sectors_per_warp(face_cells: np.ndarray, value_bytes: int) -> float:
    """Mean number of distinct 32-byte sectors a warp of 32 consecutive faces reads.

    Each face reads one value of each of its cells from one Structure-of-Arrays
    variable; boundary faces (second cell ``-1``) read one. Fewer is better: a
    perfectly local order approaches ``(cells per warp) * value_bytes / 32``.

    Parameters
    ----------
    face_cells : numpy.ndarray
        ``(n_faces, 2)`` new cell indices, in face order.
    value_bytes : int
        4 for fp32, 8 for fp64.

    Examples
    --------
    >>> sectors_per_warp(np.array([[0, 1], [2, -1]]), 8)  # cells 0-3 share one sector
    1.0
    """
    n_faces = len(face_cells)
    if n_faces == 0:
        return 0.0
    n_warps = -(-n_faces // WARP)
    sector = np.full((n_warps * WARP, 2), -1, dtype=np.int64)
    sector[:n_faces] = np.where(face_cells >= 0, face_cells * value_bytes // SECTOR_BYTES, -1)
    per_warp = np.sort(sector.reshape(n_warps, 2 * WARP), axis=1)
    distinct = (np.diff(per_warp, axis=1) != 0) & (per_warp[:, 1:] >= 0)
    touched = distinct.sum() + np.count_nonzero(per_warp[:, 0] >= 0)
    return float(touched / n_warps)


def neighbour_sectors_per_warp(face_cells: np.ndarray, n_cells: int,
                               value_bytes: tuple[int, ...]) -> tuple[float, ...]:
    """Mean number of distinct 32-byte sectors a warp of 32 consecutive cells reads when
    each cell gathers one value of each of its face neighbours (a cell loop: gradients,
    sweeps), for each value size (one sort serves them all).

    Parameters
    ----------
    face_cells : numpy.ndarray
        ``(n_faces, 2)`` new cell indices (-1 for no second cell).
    n_cells : int
    value_bytes : tuple of int
        Bytes per value: 4 for fp32, 8 for fp64.

    Examples
    --------
    >>> neighbour_sectors_per_warp(np.array([[0, 1], [1, 40]]), 41, (8,))  # warp 0 reads
    ... # sectors 0 (cells 0, 1) and 10 (cell 40); warp 1 (cell 40) reads sector 0
    (1.5,)
    """
    inner = face_cells[face_cells[:, 1] >= 0]
    if n_cells == 0 or len(inner) == 0:
        return tuple(0.0 for _ in value_bytes)
    cell = np.concatenate([inner[:, 0], inner[:, 1]]).astype(np.int64)
    neighbour = np.concatenate([inner[:, 1], inner[:, 0]]).astype(np.int64)
    # sorted by warp, then neighbour (so, for any size, by warp, then sector): one key,
    # one sort (a third of a lexsort's time)
    key = cell // WARP * n_cells + neighbour
    key.sort()
    warp, neighbour = key // n_cells, key % n_cells
    n_warps = -(-n_cells // WARP)
    result = []
    for size in value_bytes:
        sector = neighbour * size // SECTOR_BYTES
        new = (np.diff(warp) != 0) | (np.diff(sector) != 0)
        result.append(float((1 + np.count_nonzero(new)) / n_warps))
    return tuple(result)


def repeated_adds_per_warp(face_cells: np.ndarray) -> float:
    """Mean number of atomic adds per warp of 32 consecutive faces that go to a cell
    another face of the warp adds to through the same side.

    A face kernel with one thread per face adds its flux into its first cell, then into
    its second; adds of one instruction to one address are serialised. 0 is best: no
    two faces of a warp share a cell on one side.

    Parameters
    ----------
    face_cells : numpy.ndarray
        ``(n_faces, 2)`` new cell indices (first and second cell, -1 for none), in face
        order.

    Examples
    --------
    >>> repeated_adds_per_warp(np.array([[0, 1], [0, 2], [3, 0]]))  # cell 0 twice first
    1.0
    """
    n_faces = len(face_cells)
    if n_faces == 0:
        return 0.0
    n_warps = -(-n_faces // WARP)
    repeated = 0
    for side in face_cells.T:
        cells = np.full(n_warps * WARP, -1, dtype=np.int64)
        cells[:n_faces] = side
        per_warp = np.sort(cells.reshape(n_warps, WARP), axis=1)
        repeated += np.count_nonzero((np.diff(per_warp, axis=1) == 0) & (per_warp[:, 1:] >= 0))
    return float(repeated / n_warps)


def layout_metrics(graph: CSR, face_cells: np.ndarray) -> dict[str, float]:
    """Matrix metrics of ``graph`` plus, of ``face_cells``, sectors per warp of faces and
    of cells' neighbours in fp32 and fp64, and repeated atomic adds per warp."""
    result = matrix_metrics(graph)
    result["sectors_per_warp_fp32"] = sectors_per_warp(face_cells, 4)
    result["sectors_per_warp_fp64"] = sectors_per_warp(face_cells, 8)
    result["repeated_adds_per_warp"] = repeated_adds_per_warp(face_cells)
    fp32, fp64 = neighbour_sectors_per_warp(face_cells, graph.n, (4, 8))
    result |= {"neighbour_sectors_per_warp_fp32": fp32, "neighbour_sectors_per_warp_fp64": fp64}
    return result


def renumber_graph(graph: CSR, order: np.ndarray) -> CSR:
    """The same graph with vertex ``order[k]`` renamed ``k`` (``order`` is new -> old)."""
    rank = np.empty(graph.n, dtype=np.int64)
    rank[order] = np.arange(graph.n)
    indptr = np.zeros(graph.n + 1, dtype=np.int64)
    np.cumsum(graph.degrees()[order], out=indptr[1:])
    return CSR(indptr, rank[gather_neighbours(graph, order)])
