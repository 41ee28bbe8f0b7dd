"""Cell gradients (Green-Gauss, weighted least squares) and the slope limiters:
Venkatakrishnan's (one value per cell and variable, the minimum over the cell's faces)
and van Albada's (per face, smooth: no limiter chatter in steady convergence).

Gradients are ``(n_vars, dim, n_cells)``. Boundary faces act as neighbours that sit
at the face centre and carry the face value (mean of the interior and ghost states).
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import array_module
from gpusolver.layout.geometry import FVGeometry, neighbour_offsets
from gpusolver.solvers.fv.accumulate import Accumulator
from meshorder.registry import Registry

#: Gradient name -> class.
GRADIENTS: Registry = Registry("gradient")

#: Limiter names (``none`` keeps the unlimited gradient).
LIMITERS = ("venkatakrishnan", "van-albada", "none")


@GRADIENTS.register("green-gauss")
class GreenGauss:
    """``grad W = (1/V) sum_f W_f n_f A_f``: ``W_f`` the mean of the two cells, or the
    boundary face value."""

    def __init__(self, host: FVGeometry, device: FVGeometry, accumulator: Accumulator):
        self.weights = device.normal * device.area
        self.volume = device.volume
        self.accumulator = accumulator
        self.n_interior = host.n_interior

    def __call__(self, w_left, w_neighbour):
        """Gradients from the left and neighbour (right or boundary face) values per face."""
        ni = self.n_interior
        face = w_neighbour.copy()
        face[:, :ni] = 0.5 * (w_left[:, :ni] + w_neighbour[:, :ni])
        contribution = face[:, None, :] * self.weights[None]
        return self.accumulator.combine(contribution, -contribution) / self.volume


@GRADIENTS.register("least-squares")
class LeastSquares:
    """Inverse-distance-weighted least squares, both sides of every face.

    Solves ``min sum_f w_f^2 (grad W . d_f - dW_f)^2`` per cell with ``w_f = 1/|d_f|``;
    the ``dim x dim`` normal matrices are inverted once, on the host.
    """

    def __init__(self, host: FVGeometry, device: FVGeometry, accumulator: Accumulator):
        d = neighbour_offsets(host)
        ni, dim = host.n_interior, host.dim
        weight = 1.0 / (d * d).sum(axis=0)
        outer = np.einsum("if,jf,f->ijf", d, d, weight)
        matrix = np.zeros((dim, dim, host.n_cells))
        for cells, values in ((host.left, outer), (host.right[:ni], outer[..., :ni])):
            for i in range(dim):
                for j in range(dim):
                    matrix[i, j] += np.bincount(cells, values[i, j], minlength=host.n_cells)
        inverse = inverse_or_zero(matrix)
        coef_left = _times(inverse, host.left, d) * weight
        coef_right = np.zeros_like(coef_left)
        # seen from the right cell both the offset and the jump change sign
        coef_right[:, :ni] = _times(inverse, host.right[:ni], d[:, :ni]) * weight[:ni]
        backend = accumulator.backend
        dtype = device.volume.dtype
        self.coef_left = backend.asarray(coef_left, dtype=dtype)
        self.coef_right = backend.asarray(coef_right, dtype=dtype)
        self.accumulator = accumulator

    def __call__(self, w_left, w_neighbour):
        """Gradients from the left and neighbour (right or boundary face) values per face."""
        jump = (w_neighbour - w_left)[:, None, :]
        return self.accumulator.combine(jump * self.coef_left[None],
                                        jump * self.coef_right[None])


def inverse_or_zero(matrix: np.ndarray) -> np.ndarray:
    """The inverse of every ``(dim, dim)`` matrix ``matrix[:, :, k]`` (dim 2 or 3), by its
    adjugate over its determinant; zero where the matrix is singular (its determinant at
    most 1e-12 of its largest entry to the power dim: a cell seen through fewer than dim
    independent neighbours, as the outer halo cells of a mesh part,
    :mod:`gpusolver.layout.parts`, whose gradient is then zero).

    Examples
    --------
    >>> m = np.stack([np.array([[2.0, 1.0], [1.0, 1.0]]), np.ones((2, 2))], axis=2)
    >>> inverse_or_zero(m)[..., 0].tolist(), inverse_or_zero(m)[..., 1].tolist()
    ([[1.0, -1.0], [-1.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]])
    >>> a = np.random.default_rng(0).normal(size=(3, 3, 5))
    >>> np.allclose(np.moveaxis(inverse_or_zero(a), 2, 0), np.linalg.inv(np.moveaxis(a, 2, 0)))
    True
    """
    m, dim = matrix, matrix.shape[0]
    if dim == 2:
        adjugate = np.array([[m[1, 1], -m[0, 1]], [-m[1, 0], m[0, 0]]])
    else:
        adjugate = np.empty_like(m)
        for i in range(3):
            for j in range(3):  # cofactor of m[j, i]
                r, c = [k for k in range(3) if k != j], [k for k in range(3) if k != i]
                adjugate[i, j] = ((-1) ** (i + j)
                                  * (m[r[0], c[0]] * m[r[1], c[1]] - m[r[0], c[1]] * m[r[1], c[0]]))
    det = (m[0] * adjugate[:, 0]).sum(axis=0)
    scale = np.abs(m).max(axis=(0, 1)) ** dim
    singular = np.abs(det) <= 1e-12 * scale
    return np.where(singular, 0.0, adjugate / np.where(singular, 1.0, det))


def _times(inverse: np.ndarray, cells: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``inverse[:, :, cells[f]] @ d[:, f]`` for every face ``f``, one gathered row at a
    time (no ``(dim, dim, n_faces)`` temporary)."""
    out = np.zeros_like(d)
    for i in range(d.shape[0]):
        for j in range(d.shape[0]):
            out[i] += inverse[i, j][cells] * d[j]
    return out


def increments(gradient, cells, offsets):
    """``gradient . offset``: the unlimited change from cell value to face value,
    ``(n_vars, n_faces)``, of ``cells`` (one per face) with face offsets ``(dim, n_faces)``."""
    xp = array_module(gradient)
    g = xp.take(gradient, cells, axis=2)
    change = g[:, 0] * offsets[0]
    for d in range(1, g.shape[1]):
        change += g[:, d] * offsets[d]
    return change


def central_fractions(geometry: FVGeometry, partner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How much of the jump between two cells lies between each cell and the face.

    ``s = r . d / (d . d)`` with ``r`` the cell's offset to the face centre and ``d``
    the vector between the two cells (1/2 where the face is midway), for the left
    cell of every face and the right cell of interior faces (0 elsewhere). Across a
    periodic boundary face ``d`` leads to its partner's cell, shifted onto this face
    (``partner``: the partner face per boundary face, -1 where none); other boundary
    faces take 1/2 (the ghost cell is the mirror image).
    """
    g, ni = geometry, geometry.n_interior
    to_face = g.face_centre - g.centroid[:, g.left]
    across = np.zeros_like(to_face)
    across[:, :ni] = g.face_centre[:, :ni] - g.centroid[:, g.right[:ni]]
    periodic = np.flatnonzero(partner >= 0)
    across[:, ni + periodic] = to_face[:, partner[periodic]]
    d = to_face - across
    length2 = (d * d).sum(axis=0)
    s_left, s_right = np.full(g.n_faces, 0.5), np.zeros(g.n_faces)
    joined = np.concatenate([np.arange(ni), ni + periodic])
    s_left[joined] = (to_face[:, joined] * d[:, joined]).sum(axis=0) / length2[joined]
    s_right[:ni] = -(across[:, :ni] * d[:, :ni]).sum(axis=0) / length2[:ni]
    return s_left, s_right


def van_albada(change, jump, epsilon2):
    """Van Albada's limited change from a cell to a face, in place of ``change``.

    ``(a + b) (a b + eps^2) / (a^2 + b^2 + 2 eps^2)`` of the central change ``b``
    (``jump``: the share of the jump to the other cell that lies before the face) and
    the upwind change ``a = 2 change - b`` (``change``: the gradient's change to the
    face; on a uniform 1D mesh ``a`` and ``b`` are the half backward and forward
    differences, the classic MUSCL form): about their mean where they agree, nothing
    where they are equal and opposite, and differentiable everywhere (the smooth form
    of CFL3D, without a switch on the sign of ``a b``), so that no minimum over faces
    makes steady residuals chatter.

    Examples
    --------
    >>> change = np.array([1.0, 2.0, 0.0, 0.75])  # a = 1, 1, -1, 2: opposite to b = -0.5
    >>> jump = np.array([1.0, 3.0, 1.0, -0.5])
    >>> van_albada(change, jump, 0.0).round(6).tolist()
    [1.0, 1.2, -0.0, -0.352941]
    """
    change *= 2.0
    change -= jump  # the upwind change
    product = change * jump
    product += epsilon2
    denominator = change * change
    denominator += jump * jump
    denominator += 2 * epsilon2
    change += jump
    change *= product
    change /= denominator
    return change


def venkatakrishnan(w, increment_left, increment_right, w_left, w_neighbour, epsilon2,
                    accumulator: Accumulator):
    """Venkatakrishnan's limiter ``phi`` in ``[0, 1]``, per variable and cell.

    Parameters
    ----------
    w : array
        ``(n_vars, n_cells)`` cell values.
    increment_left, increment_right : array
        Unlimited reconstruction changes (:func:`increments`) from the left cell to each
        face ``(n_vars, n_faces)`` and from the right cell to each interior face.
    w_left, w_neighbour : array
        ``(n_vars, n_faces)`` values on the two sides of each face.
    epsilon2 : array
        ``(n_vars, n_cells)``: the smoothing threshold (``discretisation.limiter_threshold``).
    """
    xp = accumulator.backend.xp
    w_max = xp.maximum(w, accumulator.combine(w_neighbour, w_left, "max"))
    w_min = xp.minimum(w, accumulator.combine(w_neighbour, w_left, "min"))
    g = accumulator.geometry
    ni = accumulator.n_interior

    def face_phi(cells, d2):  # in place where it can: the CPU reference's hot spot
        d1 = xp.where(d2 > 0, xp.take(w_max, cells, axis=1), xp.take(w_min, cells, axis=1))
        d1 -= xp.take(w, cells, axis=1)
        shared = d1 * d1
        shared += xp.take(epsilon2, cells, axis=1)
        phi = 2 * d1 * d2
        phi += shared
        denominator = 2 * d2 * d2
        denominator += shared
        denominator += d1 * d2
        phi /= denominator
        return xp.where(d2 == 0, 1.0, phi)

    right = xp.ones_like(w_left)
    right[:, :ni] = face_phi(g.right[:ni], increment_right)
    return xp.minimum(accumulator.combine(face_phi(g.left, increment_left), right, "min"), 1.0)
