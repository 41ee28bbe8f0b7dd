"""Diffusive velocities of the viscous vortex domains method (Dynnikova), with the body.

Viscosity moves vorticity as if it were carried by the diffusive velocity
``W = -nu grad(Omega) / Omega``. Around each element ``i`` the method smooths the
vorticity with the kernel ``exp(-|r - r_i| / eps_i)`` over the flow region (the plane less
the body) and differentiates the smoothed field:

    W_i = nu (I2_i / (eps_i I1_i) + I3_i / I0_i),
    I1_i = sum_{j != i} Gamma_j exp(-r_ij / eps_i),
    I2_i = sum_{j != i} Gamma_j (r_i - r_j) / r_ij exp(-r_ij / eps_i),

the sums over the other elements of the sign of ``Gamma_i`` (``signs = "same"``:
diffusion is linear, so the positive and the negative vorticity may each diffuse on their
own; an element with none near has no diffusive velocity from the wake), or over the
other elements of any sign (``signs = "any"``, as in VM2D: the gradient of the smoothed
vorticity itself, which drives opposite vorticity together where it meets, merging then
cancelling it). The element itself stays out of ``I1``, as in
VM2D: with it in, a Gaussian spread at 0.85 of the viscosity on a lattice, without it at
0.99 (and a half-Gaussian on a wall at 0.985). And
    I0_i = 2 pi eps_i^2 - int_body exp(-|r_i - xi| / eps_i) dA,
    I3_i = oint_contour exp(-|r_i - xi| / eps_i) n dl,

``n`` the contour's normal into the flow. ``I0`` is the kernel's integral over the flow
region: the body's part is turned into a contour integral by the divergence theorem,
``int_body exp(-rho / eps) dA = eps oint (rho + eps) exp(-rho / eps) (r_i - xi) . n / rho^2
dl``. ``I3 / I0`` is the gradient of that normalisation: it pushes vorticity off the wall,
which is how the sheet shed on the body enters the flow. Panels are summed by the midpoint
rule on pieces as short as the element's distance asks (five per panel length of
distance); for an element on a panel (closer than a tenth of its length, within its
span) that panel's terms are their limits on it instead, its exact line integral
``2 eps (1 - exp(-L / 2 eps) cosh(s / eps))`` and half the kernel's area ``pi eps^2``,
the other panels summed as before. (Taking the panel alone, as VM2D does, loses the
neighbours' part of ``I3`` when the radius is a panel length or more: elements born on
the wall were then pushed into it and most were absorbed each step.)

``eps_i`` is the element's domain radius: the root mean square of the distances to its
three nearest neighbours, at least a floor (:func:`domain_radii`). Sums stop at
:data:`CUTOFF` radii (the kernel is below 3.4e-4 there).

These are the NumPy references; :mod:`.kernels` runs the same sums as CUDA kernels
(``kernels/vvd.cu``).
"""

from __future__ import annotations

import math

import numpy as np

from gpusolver.backends import array_module
from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.body import Body

#: Whose vorticity the wake sums smooth: the element's sign only, or any.
DIFFUSION_SIGNS = ("same", "any")
#: Neighbours whose root mean square distance is an element's domain radius.
NEIGHBOURS = 3
#: Sums stop at this many domain radii.
CUTOFF = 8.0
#: Targets per chunk of the sums (bounds their temporaries).
CHUNK = 512
#: An element is on a panel within this fraction of its length from it (and within its span).
ON_PANEL = 0.1
#: A panel closer than this many of its lengths is cut into pieces ...
NEAR_PANEL = 5.0
#: ... about this many per panel length of the element's distance, at most MAX_PIECES.
PIECES_PER_DISTANCE = 5.0
MAX_PIECES = 64
#: Sums below this magnitude carry no direction (the velocity is zero there).
TINY = 1e-300


def domain_radii(positions: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Each element's root mean square distance to its three nearest other elements, at
    least ``floor``.

    Examples
    --------
    >>> lattice = np.stack(np.meshgrid(np.arange(5.0), np.arange(5.0)), -1).reshape(-1, 2)
    >>> float(domain_radii(lattice)[12])  # the centre: its four neighbours at distance 1
    1.0
    """
    positions = np.asarray(positions, dtype=np.float64)
    if len(positions) <= NEIGHBOURS:
        raise ConfigError(f"domain radii need more than {NEIGHBOURS} elements, got "
                          f"{len(positions)}")
    from scipy.spatial import cKDTree
    distances, _ = cKDTree(positions).query(positions, k=NEIGHBOURS + 1)
    return np.maximum(np.sqrt((distances[:, 1:] ** 2).mean(axis=1)), floor)


def wake_sums(positions: np.ndarray, gammas: np.ndarray, radii: np.ndarray,
              signs: str = "same") -> tuple[np.ndarray, np.ndarray]:
    """``I1`` ``(N,)`` and ``I2`` ``(N, 2)`` of every element over the others of its sign
    (``signs = "same"``) or of any (module docstring)."""
    i1 = np.zeros(len(positions))
    i2 = np.zeros((len(positions), 2))
    for first in range(0, len(positions), CHUNK):
        rows = slice(first, first + CHUNK)
        d = positions[rows, None, :] - positions[None, :, :]  # (chunk, N, 2)
        distance = np.hypot(d[..., 0], d[..., 1])
        eps = radii[rows, None]
        product = gammas[rows, None] * gammas[None, :]
        counted = product > 0 if signs == "same" else product != 0
        weight = np.where((distance < CUTOFF * eps) & (distance > 0) & counted,
                          gammas[None, :] * np.exp(-distance / eps), 0.0)
        i1[rows] = weight.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            unit = np.where(distance[..., None] > 0, d / distance[..., None], 0.0)
        i2[rows] = (weight[..., None] * unit).sum(axis=1)
    return i1, i2


def _pieces(q: np.ndarray, body: Body) -> np.ndarray:
    """Pieces each panel is cut into for elements at offsets ``q`` ``(..., n, 2)`` from the
    panels' midpoints."""
    along = np.abs((q * body.tangents).sum(axis=-1))
    across = np.abs((q * body.normals).sum(axis=-1))
    length = body.lengths
    distance = np.where(along < 0.5 * length, across, along + across - 0.5 * length)
    near = (across <= NEAR_PANEL * length) & (along <= NEAR_PANEL * length)
    with np.errstate(divide="ignore"):
        count = np.ceil(PIECES_PER_DISTANCE * length / distance)
    return np.where(near, np.clip(count, 1, MAX_PIECES), 1).astype(np.int64)


def _panel_weights(positions: np.ndarray, radii: np.ndarray, body: Body):
    """The kernel's integral over each panel near each element of ``positions``:
    ``(element, panel, weight, body_part)``, a row per piece of the midpoint rule and one
    per on-panel limit (module docstring), ``body_part`` the piece's share of the kernel's
    integral over the body."""
    q = positions[:, None, :] - body.midpoints[None, :, :]  # (n, panels, 2)
    normals, tangents, lengths = body.normals, body.tangents, body.lengths
    along = (q * tangents).sum(axis=-1)
    on = (np.abs((q * normals).sum(axis=-1)) < ON_PANEL * lengths) & (
        np.abs(along) < 0.5 * lengths)
    hit = np.flatnonzero(on.any(axis=1))
    own = on[hit].argmax(axis=1)  # the first panel an element lies on
    pieces = _pieces(q, body)
    pieces[hit, own] = 0  # that panel's terms are its limits, added below
    element, panel = np.nonzero(pieces > 0)  # every other pair, cut into its pieces
    count = pieces[element, panel]
    starts = np.cumsum(count) - count
    k = np.arange(int(count.sum())) - np.repeat(starts, count)
    element, panel = np.repeat(element, count), np.repeat(panel, count)
    count = np.repeat(count, count)
    t = lengths[panel] * (k + 0.5) / count
    r = positions[element] - (body.vertices[panel] + tangents[panel] * t[:, None])
    rho = np.hypot(r[:, 0], r[:, 1])
    eps = radii[element]
    use = rho < CUTOFF * eps
    weight = np.where(use, np.exp(-rho / eps) * lengths[panel] / count, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        body_part = np.where(use, eps * (rho + eps) * (r * normals[panel]).sum(axis=1)
                             / rho**2 * weight, 0.0)
    eps_hit = radii[hit]
    line = 2 * eps_hit * (1 - np.exp(-lengths[own] / (2 * eps_hit))
                          * np.cosh(along[hit, own] / eps_hit))
    return (np.concatenate([element, hit]), np.concatenate([panel, own]),
            np.concatenate([weight, line]), np.concatenate([body_part, math.pi * eps_hit**2]))


def surface_sums(positions: np.ndarray, radii: np.ndarray,
                 body: Body) -> tuple[np.ndarray, np.ndarray]:
    """``I0`` ``(N,)`` and ``I3`` ``(N, 2)`` of every element (module docstring)."""
    n = len(positions)
    i0 = 2 * math.pi * radii**2
    i3 = np.zeros((n, 2))
    for first in range(0, n, CHUNK):
        rows = slice(first, min(first + CHUNK, n))
        m = rows.stop - first
        element, panel, weight, body_part = _panel_weights(positions[rows], radii[rows], body)
        i0[rows] -= np.bincount(element, body_part, minlength=m)
        for axis in range(2):
            i3[rows, axis] = np.bincount(element, weight * body.normals[panel, axis],
                                         minlength=m)
    return i0, i3


def wall_vorticity(positions: np.ndarray, gammas: np.ndarray, radii: np.ndarray,
                   i0: np.ndarray, body: Body) -> np.ndarray:
    """``(n_panels,)`` integral along each panel of the vorticity at the wall.

    Element ``i`` spreads its circulation over the flow region as
    ``Gamma_i exp(-|r - r_i| / eps_i) / I0_i`` (the kernel of its diffusive velocity,
    normalised over the flow), so the wall's vorticity integrated along panel ``j`` is
    ``sum_i Gamma_i w_ij / I0_i`` with ``w_ij`` the kernel's integral over the panel, the
    same as in ``I3``. The friction along the wall is ``mu`` times it.
    """
    out = np.zeros(body.n_panels)
    for first in range(0, len(positions), CHUNK):
        rows = slice(first, first + CHUNK)
        element, panel, weight, _ = _panel_weights(positions[rows], radii[rows], body)
        share = gammas[rows] / i0[rows]
        out += np.bincount(panel, share[element] * weight, minlength=body.n_panels)
    return out


def combine(i0: np.ndarray | None, i1: np.ndarray, i2: np.ndarray, i3: np.ndarray | None,
            radii: np.ndarray, nu: float, limit: float):
    """``W = nu (I2 / (eps I1) + I3 / I0)``, its magnitude at most ``limit`` (array code for
    NumPy and CuPy arrays alike; ``i0``, ``i3`` None without a body)."""
    xp = array_module(i1)
    scale = xp.where(xp.abs(i1) > TINY, 1 / (radii * xp.where(i1 == 0, 1, i1)), 0.0)
    w = i2 * scale[:, None]
    if i3 is not None:
        w = w + i3 / i0[:, None]
    w = nu * w
    speed = xp.hypot(w[:, 0], w[:, 1])
    return w * xp.minimum(1.0, limit / xp.maximum(speed, TINY))[:, None]


def diffusive_velocity(positions: np.ndarray, gammas: np.ndarray, nu: float,
                       radii: np.ndarray, body: Body | None = None,
                       limit: float = math.inf, signs: str = "same") -> np.ndarray:
    """``(N, 2)`` diffusive velocities of the elements (the module docstring), with the
    surface terms of ``body`` when given; elements whose smoothed vorticity vanishes get
    none from the wake sums; no speed above ``limit``; ``signs`` as in :func:`wake_sums`."""
    positions = np.asarray(positions, dtype=np.float64)
    gammas = np.asarray(gammas, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    if not nu > 0:
        raise ConfigError(f"the kinematic viscosity must be positive, got {nu!r}")
    if gammas.shape != (len(positions),) or radii.shape != (len(positions),):
        raise ConfigError("positions, gammas and radii must describe the same elements")
    if not np.all(radii > 0):
        raise ConfigError("every domain radius must be positive")
    i1, i2 = wake_sums(positions, gammas, radii, signs)
    i0, i3 = surface_sums(positions, radii, body) if body is not None else (None, None)
    return combine(i0, i1, i2, i3, radii, nu, limit)
