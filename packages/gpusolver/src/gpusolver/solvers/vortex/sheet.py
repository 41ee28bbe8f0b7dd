"""The vortex sheet on a body: its intensity from the boundary integral equation.

Each step the body sheds a vortex sheet of piecewise-constant intensity ``gamma_j`` on its
panels. The intensity makes the velocity's limit from inside the body vanish, the no-slip
condition of the viscous vortex domains method, written as in Kempka, Kuzmina and
Marchevsky's T-scheme: on average over each panel ``K_i`` (length ``L_i``, unit tangent
``tau_i``) the tangential velocity from inside is zero,

    (1 / L_i) int_{K_i} [V_known(r) + sum_j gamma_j V_j(r)] . tau_i dl - gamma_i / 2 = 0,

``V_j`` the principal-value velocity of panel ``j`` at unit intensity (a flat panel induces
no principal-value tangential velocity along itself, so the diagonal is ``-1/2``) and
``V_known`` the free stream plus every free vortex. The circulation is conserved,
``sum_j gamma_j L_j = -(circulation of the free vortices)``; with it the ``n + 1``
equations take one more unknown, added to every panel equation, and are solvable. The
matrix depends on the body alone: it is built and inverted once.

A straight panel from ``a`` to ``b`` of unit intensity induces, in complex form,

    u - i v = -exp(-i alpha) / (2 pi i) Log((z - b) / (z - a)),

the principal branch of the ratio, whose only cut is the panel itself. The matrix's
averages over ``K_i`` are Gauss-Legendre sums; on the two panels that share a vertex with
``K_i`` the points are graded towards it (``t = u^2``), where the integrand has a
logarithmic singularity.

The free vortices' part of the average is exact (:func:`mean_tangential`): a point vortex
``Gamma`` at ``z0`` turns ``int_{K_i} V . tau_i dl = Gamma theta / (2 pi)``, ``theta`` the
angle that the panel subtends at ``z0``, ``arg((b - z0) / (a - z0))``. The vortices are
taken as points here, as in VM2D, not with their smoothed cores: the known field is then
harmonic inside the body, so zero mean slip on every panel leaves the inside at rest. With
smoothed cores overlapping a thin body (a plate of a few panel lengths' thickness) the data
are not harmonic there, and the nearly free mode of such a body, flow straight through
its faces, is excited until the step blows up.
"""

from __future__ import annotations

import math

import numpy as np

from gpusolver.backends import array_module
from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.body import Body

#: Gauss-Legendre points per panel of the averages.
POINTS_PER_PANEL = 8
#: Receiving panels per block of the matrix assembly (bounds its temporaries).
ROWS_PER_BLOCK = 64
#: Elements per chunk of :func:`mean_tangential` (bounds its temporaries).
CHUNK = 2048


def panel_velocity(points: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Complex ``u - i v`` at ``points`` (complex, any shape) of unit-intensity panels from
    ``begin`` to ``end`` (complex, broadcast against ``points``); principal value on a panel.

    Examples
    --------
    Far away a panel is a point vortex of its length: at distance 100 from a unit panel,
    the speed ``1 / (2 pi 100)``.

    >>> w = panel_velocity(np.array(100j), np.array(-0.5), np.array(0.5))
    >>> round(float(w.real) * 2 * math.pi * 100, 4), round(float(w.imag), 6)
    (-1.0, 0.0)
    """
    direction = (end - begin) / np.abs(end - begin)
    return -np.conj(direction) / (2j * math.pi) * np.log((points - end) / (points - begin))


class VortexSheet:
    """The sheet's equations on ``body``, factored once.

    Parameters
    ----------
    body : Body
    points_per_panel : int
        Gauss-Legendre points of each panel's average in the matrix.

    """

    def __init__(self, body: Body, points_per_panel: int = POINTS_PER_PANEL):
        if not (isinstance(points_per_panel, int) and points_per_panel >= 1):
            raise ConfigError(f"points_per_panel must be a positive integer, got "
                              f"{points_per_panel!r}")
        self.body = body
        nodes, weights = np.polynomial.legendre.leggauss(points_per_panel)
        self._t, self._w = (nodes + 1) / 2, weights / 2
        a, b = _complex(body.vertices), _complex(body.ends)
        n = body.n_panels
        self.matrix = np.zeros((n + 1, n + 1))
        self.matrix[:n, :n] = self._tangential_averages(a, b)
        self.matrix[:n, n] = 1.0
        self.matrix[n, :n] = body.lengths
        #: The matrix's inverse, as the paper stores it: each step's solve is one product.
        import scipy.linalg
        self.inverse = scipy.linalg.inv(self.matrix)
        self._device: dict = {}

    def _tangential_averages(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``A[i, j]``: panel ``j``'s tangential velocity along ``K_i``, averaged; ``-1/2``
        on the diagonal."""
        n = len(a)
        tangent = (b - a) / np.abs(b - a)
        averages = np.empty((n, n))
        for first in range(0, n, ROWS_PER_BLOCK):
            rows = np.arange(first, min(first + ROWS_PER_BLOCK, n))
            points = a[rows, None] + self._t[None, :] * (b - a)[rows, None]  # (rows, G)
            w = panel_velocity(points[:, :, None], a[None, None, :], b[None, None, :])
            along = (w * tangent[rows, None, None]).real  # V . tau_i
            averages[rows] = np.einsum("k,rkj->rj", self._w, along)
        for shift in (1, -1):  # neighbours: graded towards the shared vertex
            rows, cols = np.arange(n), (np.arange(n) + shift) % n
            graded, weights = self._t**2, 2 * self._t * self._w
            if shift == 1:  # the shared vertex is the end of K_i
                graded = 1 - graded
            points = a[rows, None] + graded[None, :] * (b - a)[rows, None]
            w = panel_velocity(points, a[cols, None], b[cols, None])
            averages[rows, cols] = (w * tangent[rows, None]).real @ weights
        averages[np.arange(n), np.arange(n)] = -0.5
        return averages

    def intensities(self, along, free_circulation):
        """Panel intensities ``gamma`` ``(n_panels,)``, on the arrays' device (NumPy or
        CuPy).

        Parameters
        ----------
        along : array
            ``(n_panels,)``: each panel's mean tangential velocity of the free stream and
            every free vortex (:func:`mean_tangential`).
        free_circulation : float or 0-d array
            Total circulation of the free vortices.
        """
        xp = array_module(along)
        n = self.body.n_panels
        if along.shape != (n,):
            raise ConfigError(f"along must be ({n},) (one mean per panel), got "
                              f"{along.shape}")
        inverse = self._inverse(xp)
        rhs = xp.concatenate([-along.astype(np.float64, copy=False),
                              -xp.reshape(xp.asarray(free_circulation, dtype=np.float64), (1,))])
        return (inverse @ rhs)[:n]

    def _inverse(self, xp):
        """The inverse as an ``xp`` array (copied to the device once)."""
        if xp not in self._device:
            self._device[xp] = xp.asarray(self.inverse)
        return self._device[xp]

    def velocity(self, gamma: np.ndarray, targets: np.ndarray,
                 smoothing: float = 0.0) -> np.ndarray:
        """``(m, 2)`` velocity of the sheet of intensities ``gamma`` at ``targets``.

        ``smoothing`` > 0 regularises the panels' ends: the distances in the logarithm
        (the velocity across the panel) are at least ``smoothing``, as the elements'
        cores bound theirs, so that an element a hair off the wall near a vertex is not
        thrown by the jump of intensity there.
        """
        z = np.asarray(targets, dtype=np.float64)[:, None, :]
        a, b = self.body.vertices[None], self.body.ends[None]
        to_a, to_b = z - a, z - b
        floor = smoothing**2
        log_ratio = 0.5 * np.log(np.maximum((to_b**2).sum(axis=-1), floor)
                                 / np.maximum((to_a**2).sum(axis=-1), floor))
        angle = np.arctan2(to_b[..., 1] * to_a[..., 0] - to_b[..., 0] * to_a[..., 1],
                           (to_b * to_a).sum(axis=-1))
        tx, ty = self.body.tangents[None, :, 0], self.body.tangents[None, :, 1]
        u = ((ty * log_ratio - tx * angle) * gamma).sum(axis=1)
        v = (-(tx * log_ratio + ty * angle) * gamma).sum(axis=1)
        return np.column_stack([u, v]) / (2 * math.pi)


def mean_tangential(positions: np.ndarray, gammas: np.ndarray, body: Body) -> np.ndarray:
    """``(n_panels,)`` each panel's mean tangential velocity induced by point vortices of
    circulations ``gammas`` at ``positions`` ``(N, 2)``: ``sum Gamma theta / (2 pi L)``
    (module docstring), elements in chunks.

    Examples
    --------
    A unit vortex at the centre of a square turns each side at a quarter of its
    circulation, over the side's length 2:

    >>> square = Body(np.array([[1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0]]))
    >>> mean_tangential(np.zeros((1, 2)), np.ones(1), square).round(6).tolist()
    [0.125, 0.125, 0.125, 0.125]
    """
    out = np.zeros(body.n_panels)
    for first in range(0, len(positions), CHUNK):
        z = positions[first:first + CHUNK, None, :]
        to_a, to_b = body.vertices[None] - z, body.ends[None] - z
        theta = np.arctan2(to_a[..., 0] * to_b[..., 1] - to_a[..., 1] * to_b[..., 0],
                           (to_a * to_b).sum(axis=-1))
        out += gammas[first:first + CHUNK] @ theta
    return out / (2 * math.pi * body.lengths)


def _complex(points: np.ndarray) -> np.ndarray:
    return points[..., 0] + 1j * points[..., 1]
