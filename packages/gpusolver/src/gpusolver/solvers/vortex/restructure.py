"""Restructuring of the wake after each move: non-penetration, merging, the far wake.

- **Non-penetration** (:func:`absorbed`): an element whose last move crossed a panel, or
  which ended inside the body, is taken out; the circulation it carried is then missing
  from the free vortices, and the next sheet (which conserves the total) makes it up at
  the wall. Two stages, as in the paper: a bounding-box test of the move against the
  body, then, for the few moves that pass it, the trajectory against every panel and the
  end point against the contour (crossing number).
- **Merging** (:func:`partners`, :func:`apply_merges`): elements closer than a merging
  radius become one, at their centre weighted by ``|Gamma|`` (for two of one sign that
  keeps the total circulation and the first moment, so the vortex impulse). Pairs are of
  one sign (``same``), or of any sign (``any``, as VM2D's restructuring: opposite
  circulations partly cancel, the vorticity's noise is smoothed away). Stage one finds for
  each element ``i`` its partner: the lowest ``j > i`` within ``i``'s radius (of the same
  sign with ``same``). Stage two applies
  the pairs whose partner seeks no one itself, the lowest claimant winning; so no element
  is in two pairs, and the rest wait a step. The rule is the same on every backend, so
  the kernels reproduce the NumPy reference exactly.
- **Far wake** (:func:`far`): elements beyond a distance from the body are dropped.

These are the NumPy references; :mod:`.kernels` runs the same rules as CUDA kernels.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import array_module
from gpusolver.solvers.vortex.body import Body


def _cross(ax, ay, bx, by):
    return ax * by - ay * bx


def absorbed(start: np.ndarray, end: np.ndarray, body: Body) -> np.ndarray:
    """Boolean ``(N,)``: the moves from ``start`` to ``end`` ``(N, 2)`` that cross the
    body's contour or end inside it."""
    lo, hi = body.vertices.min(axis=0), body.vertices.max(axis=0)
    low, high = np.minimum(start, end), np.maximum(start, end)
    out = np.zeros(len(start), dtype=bool)
    candidates = np.flatnonzero(np.all((high >= lo) & (low <= hi), axis=1))
    if len(candidates) == 0:
        return out
    p, q = start[candidates, None, :], end[candidates, None, :]
    a, b = body.vertices[None], body.ends[None]
    edge = b - a
    move = q - p
    side_p = _cross(edge[..., 0], edge[..., 1], p[..., 0] - a[..., 0], p[..., 1] - a[..., 1])
    side_q = _cross(edge[..., 0], edge[..., 1], q[..., 0] - a[..., 0], q[..., 1] - a[..., 1])
    side_a = _cross(move[..., 0], move[..., 1], a[..., 0] - p[..., 0], a[..., 1] - p[..., 1])
    side_b = _cross(move[..., 0], move[..., 1], b[..., 0] - p[..., 0], b[..., 1] - p[..., 1])
    crossed = ((side_p * side_q < 0) & (side_a * side_b < 0)).any(axis=1)
    x, y = q[..., 0], q[..., 1]
    straddles = (a[..., 1] > y) != (b[..., 1] > y)
    with np.errstate(invalid="ignore", divide="ignore"):
        x_cut = a[..., 0] + (y - a[..., 1]) * edge[..., 0] / edge[..., 1]
    inside = (straddles & (x < x_cut)).sum(axis=1) % 2 == 1
    out[candidates] = crossed | inside
    return out


#: Which pairs merge: of one sign, or of any.
MERGE_SIGNS = ("same", "any")


def partners(positions: np.ndarray, gammas: np.ndarray, radii: np.ndarray,
             signs: str = "same") -> np.ndarray:
    """Stage one of merging: each element's partner (the lowest ``j > i`` closer than
    ``radii[i]``, of the same sign unless ``signs`` is ``any``), or -1."""
    partner = np.full(len(positions), -1, dtype=np.int64)
    if len(positions) < 2:
        return partner
    from scipy.spatial import cKDTree
    pairs = cKDTree(positions).query_pairs(float(radii.max()), output_type="ndarray")
    if len(pairs) == 0:
        return partner
    i, j = pairs.min(axis=1), pairs.max(axis=1)
    d2 = ((positions[i] - positions[j]) ** 2).sum(axis=1)
    product = gammas[i] * gammas[j]
    keep = (d2 < radii[i] ** 2) & ((product > 0) if signs == "same" else (product != 0))
    i, j = i[keep], j[keep]
    order = np.lexsort((j, i))
    i, j = i[order], j[order]
    first = np.ones(len(i), dtype=bool)
    first[1:] = i[1:] != i[:-1]
    partner[i[first]] = j[first]
    return partner


def accepted(partner):
    """Stage two's choice: the elements ``i`` whose pair ``(i, partner[i])`` is applied:
    ``i`` is the lowest claimant of its partner, and the partner seeks no one itself
    (array code for NumPy and CuPy)."""
    xp = array_module(partner)
    seeking = xp.flatnonzero(partner >= 0)
    targets, first = xp.unique(partner[seeking], return_index=True)
    chosen = seeking[first]  # the lowest claimant of each target (seeking is ascending)
    out = xp.zeros(len(partner), dtype=bool)
    out[chosen[partner[targets] < 0]] = True
    return out


def apply_merges(positions, gammas, partner):
    """Stage two: merge the accepted pairs of ``partner`` (from :func:`partners` or its
    kernel); returns the new positions and circulations, fewer by the pairs merged
    (array code for NumPy and CuPy)."""
    xp = array_module(partner)
    i = xp.flatnonzero(accepted(partner))
    j = partner[i]
    positions, gammas = positions.copy(), gammas.copy()
    wi, wj = xp.abs(gammas[i]), xp.abs(gammas[j])
    positions[i] = (wi[:, None] * positions[i] + wj[:, None] * positions[j]) / (wi + wj)[:, None]
    gammas[i] += gammas[j]
    alive = xp.ones(len(gammas), dtype=bool)
    alive[j] = False
    return positions[alive], gammas[alive]


def far(positions: np.ndarray, centre: np.ndarray, distance: float) -> np.ndarray:
    """Boolean ``(N,)``: the elements farther than ``distance`` from ``centre``."""
    return ((positions - centre) ** 2).sum(axis=1) > distance**2
