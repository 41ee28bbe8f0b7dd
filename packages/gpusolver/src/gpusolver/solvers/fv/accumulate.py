"""Face-to-cell accumulation strategies: ``atomic``, ``colour`` and ``reduce``.

A face loop produces one value for its left cell and one for its right cell; the
strategy combines them into cell arrays with ``add``, ``min`` or ``max``:

- ``atomic``: scatter with duplicates (``atomicAdd``/``atomicMin`` on the GPU);
- ``colour``: one pass per face colour; no two faces of a colour share a cell, so
  plain indexed updates are race-free. Boundary faces go in rounds: round ``k``
  holds the ``k``-th boundary face of each cell;
- ``reduce``: each cell gathers the values of its own face slots and reduces them.

All three give the same result up to the order of floating-point additions.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod

import numpy as np

from gpusolver.layout.geometry import FVGeometry
from gpusolver.layout.slots import face_slots
from meshorder.registry import Registry

#: Strategy name -> class.
STRATEGIES: Registry = Registry("strategy")

#: Reduction name -> (element-wise function, reduction along an axis, identity) names.
OPERATIONS = {"add": ("add", "sum", 0.0), "min": ("minimum", "min", np.inf),
              "max": ("maximum", "max", -np.inf)}


class Accumulator(ABC):
    """Combines per-face values into per-cell values."""

    def __init__(self, geometry: FVGeometry, host: FVGeometry, backend):
        self.geometry = geometry
        self.backend = backend
        self.n_cells = host.n_cells
        self.n_interior = host.n_interior

    def combine(self, left_values, right_values, op: str = "add", out=None):
        """Combine face values into cells.

        Parameters
        ----------
        left_values, right_values : array
            ``(..., n_faces)``; ``right_values`` of boundary faces are ignored.
        op : {"add", "min", "max"}
        out : array, optional
            ``(..., n_cells)`` array combined into in place; a new array filled
            with the operation's identity when omitted.

        Returns
        -------
        array
            ``(..., n_cells)``.
        """
        if out is None:
            xp = self.backend.xp
            out = xp.full((*left_values.shape[:-1], self.n_cells), OPERATIONS[op][2],
                          dtype=left_values.dtype)
        self._combine(left_values, right_values, op, out)
        return out

    @abstractmethod
    def _combine(self, left_values, right_values, op: str, out) -> None: ...


@STRATEGIES.register("atomic")
class AtomicAccumulator(Accumulator):
    """Scatter with duplicate indices (atomics on the GPU)."""

    def _combine(self, left_values, right_values, op, out):
        g, ni = self.geometry, self.n_interior
        scatter = self.backend.scatter[op]
        scatter(out, g.left, left_values)
        scatter(out, g.right[:ni], right_values[..., :ni])


def boundary_rounds(left: np.ndarray, n_interior: int) -> list[np.ndarray]:
    """Boundary face indices split so that no round holds two faces of one cell."""
    faces = np.arange(n_interior, len(left))
    cells = left[faces]
    order = np.argsort(cells, kind="stable")
    sorted_cells = cells[order]
    first = np.searchsorted(sorted_cells, sorted_cells)
    rank = np.empty(len(faces), dtype=np.int64)
    rank[order] = np.arange(len(faces)) - first
    return [faces[rank == k] for k in range(int(rank.max(initial=-1)) + 1)]


@STRATEGIES.register("colour")
class ColourAccumulator(Accumulator):
    """One indexed update per colour class; no atomics."""

    def __init__(self, geometry, host, backend):
        super().__init__(geometry, host, backend)
        offsets = host.interior_colours
        self.ranges = [(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
        self.rounds = [backend.asarray(r) for r in boundary_rounds(host.left, host.n_interior)]
        self.round_cells = [geometry.left[r] for r in self.rounds]

    def _combine(self, left_values, right_values, op, out):
        g = self.geometry
        function = getattr(self.backend.xp, OPERATIONS[op][0])
        for a, b in self.ranges:
            for cells, values in ((g.left[a:b], left_values[..., a:b]),
                                  (g.right[a:b], right_values[..., a:b])):
                out[..., cells] = function(out[..., cells], values)
        for faces, cells in zip(self.rounds, self.round_cells, strict=False):
            out[..., cells] = function(out[..., cells], left_values[..., faces])


@STRATEGIES.register("reduce")
class ReduceAccumulator(Accumulator):
    """Each cell gathers its face slots and reduces them; no atomics, no colours."""

    def __init__(self, geometry, host, backend):
        super().__init__(geometry, host, backend)
        self.slots = face_slots(host.left, host.right, host.n_cells, host.n_interior,
                                backend.xp)

    def _combine(self, left_values, right_values, op, out):
        xp = self.backend.xp
        name, reduction, identity = OPERATIONS[op]
        pad = xp.full((*left_values.shape[:-1], 1), identity, dtype=left_values.dtype)
        values = xp.concatenate([left_values, right_values, pad], axis=-1)
        reduced = getattr(xp, reduction)(values[..., self.slots], axis=-1)
        getattr(xp, name)(out, reduced, out=out)


def make_accumulator(name: str, geometry: FVGeometry, host: FVGeometry,
                     backend) -> Accumulator:
    """The accumulator called ``name`` for ``geometry`` (on ``backend``) and its host copy."""
    return STRATEGIES.lookup(name)(geometry, host, backend)
