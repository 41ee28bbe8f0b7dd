"""Implicit lines: chains of strongly coupled cells, for line-implicit smoothers.

In a boundary layer's stretched cells the coupling across the thin direction outweighs
every other by the cells' aspect ratio, and point Gauss-Seidel (LU-SGS) converges there
at a rate that falls with it. Line-implicit smoothers (Mavriplis 1998, as FUN3D's)
solve each chain of such cells, wall to outer edge, exactly (a tridiagonal system a
line) inside the sweep. This module finds the chains and the sweep levels over them.

A face's coupling weight is its area over the distance between its two cells'
centroids (the weight of a diffusion operator). A face is *strong* for a cell when it
is one of the cell's two heaviest interior faces and at least ``ratio`` times the
cell's third heaviest; a face strong for both of its cells joins them in a line. Each
cell has at most two line faces, so the lines are paths (a closed ring is cut at its
lowest cell); every other cell is a line of one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .colouring import colour_cells
from .hyperplanes import Levels
from .permutation import group_of, grouped, stable_argsort
from .topology import CSR

#: A face joins two cells in a line when it is at least this many times heavier than
#: each cell's third heaviest face (aspect ratio ~2 for quadrilaterals and prisms).
LINE_RATIO = 4.0


@dataclass(frozen=True)
class Lines:
    """Every cell once, grouped into lines.

    Attributes
    ----------
    cells : numpy.ndarray
        Cells line after line, each line in order along it (neighbours in a line share
        a face).
    offsets : numpy.ndarray
        Line ``k`` is ``cells[offsets[k]:offsets[k+1]]``.
    """

    cells: np.ndarray
    offsets: np.ndarray

    @property
    def n_lines(self) -> int:
        """Number of lines, lines of one cell included."""
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        """Number of cells of each line."""
        return np.diff(self.offsets)

    def line_of(self) -> np.ndarray:
        """The line of each cell."""
        return group_of(self.cells, self.offsets)


@dataclass(frozen=True)
class LineLevels(Levels):
    """Sweep levels whose cells come in whole lines: a line's cells share its level.

    ``order`` holds each level's lines one after another, each in order along it.

    Attributes
    ----------
    line_offsets : numpy.ndarray
        Positions in ``order`` where each line starts, and the end (``n_lines + 1``).
    level_lines : numpy.ndarray
        Level ``k`` holds lines ``level_lines[k]`` to ``level_lines[k+1]``.
    """

    line_offsets: np.ndarray
    level_lines: np.ndarray


def implicit_lines(left: np.ndarray, right: np.ndarray, weight: np.ndarray, n_cells: int,
                   ratio: float = LINE_RATIO, joinable: np.ndarray | None = None) -> Lines:
    """The lines of strongly coupled cells (see the module's description).

    Parameters
    ----------
    left, right : numpy.ndarray
        The two cells of each interior face.
    weight : numpy.ndarray
        Each face's coupling weight (area over centroid distance).
    n_cells : int
    ratio : float
        How many times a line's face outweighs each of its cells' third heaviest face.
    joinable : numpy.ndarray, optional
        Which faces may join a line (all by default); the others still count among their
        cells' heaviest.

    Returns
    -------
    Lines

    Examples
    --------
    Three cells in a row, thin across (heavy faces between them), with light side faces:

    >>> left, right = np.array([0, 1, 0, 1, 2]), np.array([1, 2, 3, 4, 5])
    >>> lines = implicit_lines(left, right, np.array([10., 10., 1., 1., 1.]), 6)
    >>> [lines.cells[a:b].tolist() for a, b in zip(lines.offsets[:-1], lines.offsets[1:])]
    [[0, 1, 2], [3], [4], [5]]
    """
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    weight = np.asarray(weight, dtype=float)
    n_faces = len(left)
    cell = np.concatenate([left, right])
    face = np.tile(np.arange(n_faces), 2)
    by = np.argsort(cell, kind="stable")  # each cell's faces, in face order
    cell, face = cell[by], face[by]
    start = np.searchsorted(cell, np.arange(n_cells + 1))
    count = np.diff(start)
    slot = np.arange(len(cell)) - start[cell]
    # each cell's face weights as a row, heaviest first (ties in face order)
    table = np.full((n_cells, max(3, int(count.max(initial=0)))), -np.inf)
    table[cell, slot] = weight[face]
    heaviest = np.argsort(-table, axis=1, kind="stable")
    rank = np.empty_like(heaviest)
    np.put_along_axis(rank, heaviest, np.arange(table.shape[1])[None, :], axis=1)
    ranked = np.take_along_axis(table, heaviest[:, :3], axis=1)
    # the third heaviest (of two faces the lighter); a cell of one interior face joins
    # no line
    third = np.where(count >= 3, ranked[:, 2], np.where(count == 2, ranked[:, 1], np.inf))
    strong = (rank[cell, slot] < 2) & (weight[face] >= ratio * third[cell])
    votes = np.bincount(face[strong], minlength=n_faces)
    joined = np.flatnonzero((votes == 2) & (True if joinable is None else joinable))
    return _paths(left[joined], right[joined], n_cells)


def _paths(a: np.ndarray, b: np.ndarray, n: int) -> Lines:
    """The paths of a graph of degree at most two (edges ``a``-``b``), each in order
    from an end; a ring is cut at its lowest vertex."""
    import scipy.sparse as sp  # here, not at the top: a run with a plan needs no SciPy
    from scipy.sparse import csgraph

    degree = np.bincount(a, minlength=n) + np.bincount(b, minlength=n)
    graph = sp.coo_array((np.ones(len(a)), (a, b)), shape=(n, n)).tocsr()
    n_parts, part = csgraph.connected_components(graph, directed=False)
    end = np.full(n_parts, n, dtype=np.int64)  # the lowest end of each path
    ends = np.flatnonzero(degree < 2)
    np.minimum.at(end, part[ends], ends)
    ring = end == n
    if ring.any():  # cut each ring at its lowest vertex
        lowest = np.full(n_parts, n, dtype=np.int64)
        np.minimum.at(lowest, part, np.arange(n))
        end[ring] = lowest[ring]
        is_cut = np.zeros(n, dtype=bool)
        is_cut[lowest[ring]] = True
        at = np.flatnonzero(is_cut[a] | is_cut[b])
        first = np.unique(np.where(is_cut[a[at]], a[at], b[at]), return_index=True)[1]
        keep = np.ones(len(a), dtype=bool)
        keep[at[first]] = False
        a, b = a[keep], b[keep]
    root = n  # a vertex joined to one end of every path: a breadth-first order from it
    tree = sp.coo_array((np.ones(len(a) + n_parts),
                         (np.concatenate([a, np.full(n_parts, root)]),
                          np.concatenate([b, end]))), shape=(n + 1, n + 1)).tocsr()
    order = csgraph.breadth_first_order(tree, root, directed=False,
                                        return_predecessors=False)[1:]
    cells = order[stable_argsort(part[order])]  # each path's vertices by distance
    offsets = np.concatenate([[0], np.cumsum(np.bincount(part, minlength=n_parts))])
    return Lines(cells.astype(np.int64), offsets.astype(np.int64))


def line_levels(lines: Lines, left: np.ndarray, right: np.ndarray, seed: int = 0
                ) -> tuple[LineLevels, LineLevels]:
    """Forward and backward sweep levels over whole lines: the lines coloured so that no
    two lines of a colour share a face (cells ``left``-``right``; a long line may touch
    more than 64 others), the forward sweep taking the colours in turn and the backward
    one in reverse."""
    line = lines.line_of()
    between = line[left] != line[right]
    graph = CSR.from_pairs(line[left[between]], line[right[between]], lines.n_lines)
    colour = colour_cells(graph, seed, any_degree=True).colour
    return (_line_levels(lines, line, colour),
            _line_levels(lines, line, int(colour.max(initial=-1)) - colour))


def _line_levels(lines: Lines, line: np.ndarray, colour: np.ndarray) -> LineLevels:
    by_colour, level_lines = grouped(colour)
    lengths = lines.lengths()[by_colour]
    line_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    shift = np.repeat(lines.offsets[:-1][by_colour] - line_offsets[:-1], lengths)
    order = lines.cells[np.arange(line_offsets[-1]) + shift]
    level = colour[line]
    return LineLevels(level, order, line_offsets[level_lines], line_offsets, level_lines)
