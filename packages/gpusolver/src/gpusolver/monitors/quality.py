"""Cell quality of a finite-volume layout, and where a residual that will not fall sits.

The measures are those a CFD user checks first (as OpenFOAM's ``checkMesh`` reports
them), per cell:

- ``aspect_ratio``: its largest face area over its smallest (edge lengths in 2D);
- ``volume_ratio``: the largest ratio of its volume to a neighbour's, either way up;
- ``non_orthogonality``: the largest angle (degrees) between a face's normal and the line
  from the cell's centroid to the neighbour's (to the face centre on the boundary).

A run that does not converge names the cells that hold most of its density residual
and how their quality compares with the mesh's (:func:`residual_note`); the solution
file carries the residual and the measures as fields, for ParaView.
"""

from __future__ import annotations

import numpy as np

from gpusolver.layout.geometry import FVGeometry, neighbour_offsets

#: The note names the fewest cells that hold this fraction of the residual's square sum.
SHARE = 0.9

#: The quality measures, in :func:`cell_quality`'s order.
QUALITY = ("aspect_ratio", "volume_ratio", "non_orthogonality")


def cell_quality(g: FVGeometry) -> dict[str, np.ndarray]:
    """``aspect_ratio``, ``volume_ratio`` and ``non_orthogonality`` (degrees) of every cell
    of the host geometry ``g`` (its cell order).

    Examples
    --------
    >>> from meshorder.pipeline import make_plan
    >>> from meshorder.testing import grid_mesh
    >>> from gpusolver.layout.geometry import build_geometry
    >>> mesh = grid_mesh(4, 2)  # cells of 0.25 by 0.5
    >>> q = cell_quality(build_geometry(mesh, make_plan(mesh)))
    >>> [float(q[name].max()) for name in QUALITY]
    [2.0, 1.0, 0.0]
    """
    n, ni = g.n_cells, g.n_interior
    left, right = g.left, g.right[:ni]
    largest, smallest = np.zeros(n), np.full(n, np.inf)
    for cells, area in ((left, g.area), (right, g.area[:ni])):
        np.maximum.at(largest, cells, area)
        np.minimum.at(smallest, cells, area)
    ratio = np.maximum(g.volume[left[:ni]] / g.volume[right], g.volume[right] / g.volume[left[:ni]])
    volume_ratio = np.ones(n)
    for cells in (left[:ni], right):
        np.maximum.at(volume_ratio, cells, ratio)
    line = neighbour_offsets(g)
    cosine = np.abs((line * g.normal).sum(axis=0)) / np.maximum(
        np.sqrt((line * line).sum(axis=0)), np.finfo(float).tiny)
    angle = np.degrees(np.arccos(np.clip(cosine, 0.0, 1.0)))
    non_orthogonality = np.zeros(n)
    for cells, values in ((left, angle), (right, angle[:ni])):
        np.maximum.at(non_orthogonality, cells, values)
    return {"aspect_ratio": largest / smallest, "volume_ratio": volume_ratio,
            "non_orthogonality": non_orthogonality}


def residual_note(residual: np.ndarray, centroid: np.ndarray,
                  quality: dict[str, np.ndarray]) -> str:
    """One line on where the density residual ``residual`` (one value per cell) sits: the
    fewest cells that hold :data:`SHARE` of its square sum, their centroid (``(dim,
    n)``, the same cell order) and the median of each quality measure over them and
    over the mesh."""
    squares = np.nan_to_num(residual.astype(np.float64) ** 2, nan=np.inf)
    order = np.argsort(squares)[::-1]
    total = squares.sum()
    count = int(np.searchsorted(np.cumsum(squares[order]), SHARE * total) + 1) if total else 1
    cells = order[:min(count, len(order))]
    where = ", ".join(f"{x:.4g}" for x in centroid[:, cells].mean(axis=1))
    measures = "; ".join(f"{name.replace('_', ' ')} {np.median(values[cells]):.3g} (mesh "
                         f"{np.median(values):.3g})" for name, values in quality.items())
    return (f"{SHARE:.0%} of the density residual sits in {len(cells)} of {len(residual)} "
            f"cells around ({where}); their median {measures}; see the fields "
            "density_residual, aspect_ratio, volume_ratio and non_orthogonality of the "
            "solution file")
