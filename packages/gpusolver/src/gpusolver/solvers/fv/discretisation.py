"""The cell-centred finite-volume residual: reconstruction, fluxes, boundaries, viscosity.

``residual(U)`` returns, for every cell, the net flux into it: ``V dU/dt``.
Everything here is array code that runs on NumPy and CuPy alike; the accumulation
strategy decides how face values reach cells.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from gpusolver.backends import array_module
from gpusolver.errors import ConfigError
from gpusolver.layout.geometry import FVGeometry, neighbour_offsets, periodic_partners
from gpusolver.physics.boundary import BoundarySpec, characteristic_ghost, check_markers
from gpusolver.physics.fluxes import get_flux
from gpusolver.physics.gas import Gas
from gpusolver.physics.vortex_farfield import DEFAULT_CENTRE, PointVortexFarField
from gpusolver.solvers.fv import jst
from gpusolver.solvers.fv.accumulate import make_accumulator
from gpusolver.solvers.fv.fused import FusedResidual, unsupported
from gpusolver.solvers.fv.gradients import (
    GRADIENTS,
    LIMITERS,
    central_fractions,
    increments,
    van_albada,
    venkatakrishnan,
)
from gpusolver.solvers.fv.jst import BOUNDARY_FLUX, JST

#: Safety factor on the viscous spectral radius in the time step.
VISCOUS_FACTOR = 4.0
#: The factor of the viscous spectral radius in the LU-SGS operator's dissipation.
IMPLICIT_VISCOUS_FACTOR = 2.0

#: ``[scheme] gradient = "auto"``: the gradient of each dimension.
AUTO_GRADIENT = "auto"

#: What ``auto`` takes. In 3-D Green-Gauss: with Venkatakrishnan's limiter least squares
#: (inverse-distance weighted or not) stalled near three orders on every transonic 3-D
#: mesh of the corpus (tetrahedral wings of gmsh and meshorder, a prism-layer wing),
#: where Green-Gauss converged six. In 2-D least squares, exact for linear fields: on gmsh's
#: wing with flap (triangles, M 0.3) Green-Gauss gave the inviscid flow a drag of 0.087
#: against 0.0016 (docs/validation.md, "Implicit steps on meshes that fight back").
GRADIENT_OF_DIM = {2: "least-squares", 3: "green-gauss"}

#: How the residual is computed: ``fused`` CUDA kernels on the cupy backend
#: (:mod:`gpusolver.solvers.fv.fused`), or ``arrays`` (NumPy/CuPy array code, the reference).
KERNELS = ("fused", "arrays")


@dataclass(frozen=True)
class Scheme:
    """Spatial discretisation options.

    Attributes
    ----------
    flux : str
        A name in :data:`gpusolver.physics.fluxes.FLUXES` (a Riemann flux between
        reconstructed states), or ``jst``: the central scheme of
        :mod:`gpusolver.solvers.fv.jst`, second order by its fourth difference without
        reconstruction (it sets ``order`` 1 and ``limiter`` ``none``; inviscid flow).
    order : int
        1 (cell values on faces) or 2 (limited linear reconstruction).
    gradient : str
        ``green-gauss``, ``least-squares`` or ``auto`` (the default:
        :data:`GRADIENT_OF_DIM`, resolved by :meth:`for_dim`).
    limiter : str
        ``venkatakrishnan`` (per cell), ``van-albada`` (per face) or ``none``.
    venkatakrishnan_k : float
        The limiter's ``K``: larger limits less (both limiters smooth below the
        threshold ``eps^2 = (K h)^3``).
    venkatakrishnan_cap : float
        Caps the limiter's threshold ``eps^2 = (K h)^3`` at ``(cap W_ref)^2`` per
        primitive variable (``W_ref``: free-stream density, sound speed, pressure), so
        that it stays active on cells much larger than the reference length; see
        :func:`limiter_threshold`.
    jst_k2, jst_k4 : float
        ``jst``: the second-difference (shock) and fourth-difference (background)
        dissipation coefficients (SU2's defaults).
    jst_stretching : bool
        ``jst``: scale each face's dissipation by SU2's stretching factor
        (:func:`~gpusolver.solvers.fv.jst.stretching`), which makes JST converge on prism
        layers; without it, JST's dissipation as it was before 2026-11-29.
    """

    flux: str = "roe"
    order: int = 2
    gradient: str = AUTO_GRADIENT
    limiter: str = "venkatakrishnan"
    venkatakrishnan_k: float = 5.0
    venkatakrishnan_cap: float = 0.3
    jst_k2: float = 0.5
    jst_k4: float = 0.02
    jst_stretching: bool = True

    def __post_init__(self):
        if self.jst:  # cell values on faces, no limiter: the fourth difference is the
            object.__setattr__(self, "order", 1)  # second order
            object.__setattr__(self, "limiter", "none")

    @property
    def jst(self) -> bool:
        """The central JST scheme (no Riemann flux between reconstructed states)."""
        return self.flux == JST

    @property
    def stretching_power(self) -> float:
        """The exponent of JST's stretching factor, 0 without it."""
        return jst.STRETCHING if self.jst_stretching else 0.0

    @property
    def cell_limited(self) -> bool:
        """Second order with Venkatakrishnan's limiter: a limiter value per cell and
        variable, which ``[run] freeze_limiter`` can freeze."""
        return self.order == 2 and self.limiter == "venkatakrishnan"

    @property
    def riemann_flux(self) -> str:
        """The Riemann flux of the faces (``jst``: of its boundary faces)."""
        return BOUNDARY_FLUX if self.jst else self.flux

    def for_dim(self, dim: int) -> Scheme:
        """This scheme with ``gradient = "auto"`` made :data:`GRADIENT_OF_DIM`'s for a
        ``dim``-dimensional mesh.

        Examples
        --------
        >>> Scheme().for_dim(3).gradient, Scheme().for_dim(2).gradient
        ('green-gauss', 'least-squares')
        >>> Scheme(gradient="green-gauss").for_dim(2).gradient
        'green-gauss'
        """
        if self.gradient != AUTO_GRADIENT:
            return self
        return replace(self, gradient=GRADIENT_OF_DIM[dim])

    def first_order(self) -> Scheme:
        """The first-order scheme with this one's Riemann flux (multigrid's coarse levels)."""
        return replace(self, flux=self.riemann_flux, order=1)

    def check(self) -> None:
        """Raise :class:`ConfigError` on an unknown name or order."""
        if not self.jst:
            get_flux(self.flux)
        if self.gradient != AUTO_GRADIENT:
            GRADIENTS.lookup(self.gradient)
        if self.limiter not in LIMITERS:
            raise ConfigError(f"unknown limiter {self.limiter!r}; valid: {', '.join(LIMITERS)}")
        if self.order not in (1, 2):
            raise ConfigError(f"order must be 1 or 2, not {self.order!r}")


class WaveSpeeds(NamedTuple):
    """Per-face wave speeds: convective ``|u.n| + c`` and viscous (``None``: inviscid)."""

    convective: object
    viscous: object = None


class BoundaryFaces(NamedTuple):
    """One marker's faces as the discretisation sees them."""

    faces: slice
    spec: BoundarySpec
    partner: object = None  # periodic: the partner face of each face (device array)
    outside: PointVortexFarField | None = None  # vortex-corrected far field


def _vortex_flag(marker: str, params: dict) -> bool:
    value = params.get("vortex", False)
    if not isinstance(value, bool):
        raise ConfigError(f"boundary {marker!r}: vortex must be true or false, not {value!r}")
    return value


def _vortex_centre(marker: str, params: dict) -> tuple[float, float]:
    centre = params.get("centre", DEFAULT_CENTRE)
    if (not isinstance(centre, list | tuple) or len(centre) != 2
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in centre)):
        raise ConfigError(f"boundary {marker!r}: centre must be two numbers [x, y], "
                          f"not {centre!r}")
    return float(centre[0]), float(centre[1])


def limiter_threshold(volume: np.ndarray, dim: int, gas: Gas, scheme: Scheme) -> np.ndarray:
    """Venkatakrishnan's ``eps^2`` per primitive variable and cell, ``(n_vars, n_cells)``.

    ``(K h)^3`` with ``h = V^(1/dim)`` grows without bound with the cell size, so on
    the huge far-field cells of a real mesh (hundreds of chords out) the limiter
    switches off and a disturbance reaching them is reconstructed unlimited: second
    order then diverges within a few iterations where first order runs. The threshold
    is capped at ``(cap W_ref)^2`` with ``W_ref`` the free-stream scale of each
    variable (density 1, speed of sound 1 for the velocity, pressure ``1/gamma``),
    so it is unchanged on cells smaller than ``(cap W_ref)^(2/3) / K``.

    Examples
    --------
    >>> gas = Gas(dim=2, mach=0.5)
    >>> eps2 = limiter_threshold(np.array([1e-6, 1e4]), 2, gas, Scheme())
    >>> bool(np.allclose(eps2[:, 0], (5.0 * 1e-3) ** 3, rtol=1e-14, atol=0))
    True
    >>> float(eps2[0, 1]), float(eps2[-1, 1])  # doctest: +ELLIPSIS
    (0.09, 0.0459...)
    """
    h = volume ** (1.0 / dim)
    reference = np.concatenate([[1.0], np.ones(dim), [1.0 / gas.gamma]])
    cap = (scheme.venkatakrishnan_cap * reference[:, None]) ** 2
    return np.minimum((scheme.venkatakrishnan_k * h[None]) ** 3, cap)


class Discretisation:
    """Residual and time-step ingredients of one mesh, scheme and set of boundaries.

    Parameters
    ----------
    host : FVGeometry
        Geometry as NumPy arrays (plan order, colour-permuted for ``colour``).
    gas : Gas
    scheme : Scheme
    boundaries : dict of str to BoundarySpec
        One entry per mesh marker.
    strategy : str
        ``atomic``, ``colour`` or ``reduce``.
    backend : Backend
    dtype : numpy dtype
        float32 or float64, for every floating-point array.
    kernels : str
        A name in :data:`KERNELS`.

    Attributes
    ----------
    fused : FusedResidual or None
        The CUDA kernels the residual runs in (None: array code).
    """

    def __init__(self, host: FVGeometry, gas: Gas, scheme: Scheme,
                 boundaries: dict[str, BoundarySpec], strategy: str, backend, dtype,
                 kernels: str = "fused"):
        if kernels not in KERNELS:
            raise ConfigError(f"unknown kernels {kernels!r}; valid: {', '.join(KERNELS)}")
        scheme.check()
        scheme = scheme.for_dim(host.dim)
        check_markers(list(host.markers), boundaries)
        self.gas, self.scheme, self.backend, self.dtype = gas, scheme, backend, np.dtype(dtype)
        self.geometry = g = host.to(backend, dtype)
        self.accumulator = make_accumulator(strategy, g, host, backend)
        self.accumulator_name = strategy
        self.flux = get_flux(scheme.riemann_flux)
        self.viscous = gas.reynolds is not None
        if scheme.jst and self.viscous:
            raise ConfigError("flux 'jst' is for inviscid flow (euler); use a Riemann flux "
                              "(roe, rusanov, ausmpw+) for navier-stokes")
        xp = backend.xp
        ni = host.n_interior
        self.n_interior = ni
        # the offsets in float64, on the backend when its geometry is (no host gathers)
        wide = g if g.area.dtype == np.float64 else host
        self.offset_left = backend.asarray(wide.face_centre - wide.centroid[:, wide.left], dtype)
        offset_right = array_module(wide.area).zeros_like(wide.face_centre)
        offset_right[:, :ni] = wide.face_centre[:, :ni] - wide.centroid[:, wide.right[:ni]]
        self.offset_right = backend.asarray(offset_right, dtype)
        self.needs_gradient = scheme.order == 2 or self.viscous
        if self.needs_gradient:
            self.gradient = GRADIENTS.lookup(scheme.gradient)(host, g, self.accumulator)
        self.epsilon2 = backend.asarray(limiter_threshold(host.volume, host.dim, gas, scheme),
                                        dtype)
        self.boundaries = []
        for name, (first, end) in host.markers.items():
            spec = boundaries[name]
            partner = None
            if spec.condition.name == "periodic":
                if spec.params.get("partner") not in host.markers:
                    raise ConfigError(f"periodic boundary {name!r} needs partner = one of "
                                      f"{', '.join(host.markers)}")
                partner = xp.asarray(periodic_partners(host, name, spec.params["partner"]))
            outside = None
            if spec.condition.name == "farfield" and _vortex_flag(name, spec.params):
                centre = _vortex_centre(name, spec.params)
                outside = PointVortexFarField(gas, host.face_centre[:2, first:end], centre,
                                              backend=backend, dtype=self.dtype)
            self.boundaries.append(BoundaryFaces(slice(first, end), spec, partner, outside))
        #: JST's neighbours across faces (None: another flux).
        self.stencil = (jst.stencil(host, self.partner_faces(), self.accumulator, dtype)
                        if scheme.jst else None)
        if scheme.limiter == "van-albada" and scheme.order == 2:
            fractions = central_fractions(host, self.partner_faces())
            self.central_left, self.central_right = (backend.asarray(a, dtype)
                                                     for a in fractions)
        #: Clockwise circulation of the body, for vortex-corrected far fields.
        self.circulation = 0.0
        self.wall_markers = [name for name, spec in boundaries.items() if spec.condition.wall]
        if self.viscous:
            self._setup_viscous(host)
        self.boundary_flux = None
        #: Limiter values ``(n_vars, n_cells)`` of the last residual (None: unlimited).
        self.limiter_values = None
        #: When set, the residual uses these limiter values instead of computing them
        #: (Newton-Krylov products).
        self.frozen_limiter = None
        #: When set, computed limiter values are capped by these, which then take the
        #: capped values: the limiter may still fall where new extrema appear, but never
        #: rise again (late convergence without limiter chatter).
        self.limiter_ceiling = None
        self.viscous_factor = VISCOUS_FACTOR
        #: Each face's eddy viscosity (a turbulence model sets it; None: laminar).
        self.eddy_viscosity = None
        #: Each face's mass flux times area of the last residual (array code).
        self.mass_flux = None
        self.fused = (FusedResidual(self, host, strategy)
                      if kernels == "fused" and unsupported(self) is None else None)

    @property
    def fused_riemann(self) -> bool:
        """Whether the residual runs fused with a Riemann flux per face (not JST's cell
        pass): what the turbulence models' kernels (its mass fluxes) and the fused flux
        Jacobians build on."""
        return self.fused is not None and not self.fused.jst

    def partner_faces(self) -> np.ndarray:
        """The periodic partner face (global index) of each boundary face, -1 where none."""
        partner = np.full(self.geometry.n_faces - self.n_interior, -1, dtype=np.int64)
        for faces, _, periodic, _ in self.boundaries:
            if periodic is not None:
                partner[faces.start - self.n_interior:faces.stop - self.n_interior] = (
                    self.backend.to_host(periodic))
        return partner

    def _setup_viscous(self, host: FVGeometry) -> None:
        """Centroid of the cell across each face: the mirror image on the boundary."""
        ni = host.n_interior
        d = neighbour_offsets(host)
        normal_distance = (d[:, ni:] * host.normal[:, ni:]).sum(axis=0)
        d[:, ni:] = 2.0 * normal_distance * host.normal[:, ni:]
        for face_range, _, partner, _ in self.boundaries:
            if partner is not None:
                p = self.backend.to_host(partner)
                own = host.face_centre[:, face_range] - host.centroid[:, host.left[face_range]]
                d[:, face_range] = own - (host.face_centre[:, p] - host.centroid[:, host.left[p]])
        length = np.sqrt((d * d).sum(axis=0))
        self.tangent = self.backend.asarray(d / length, self.dtype)
        self.inverse_length = self.backend.asarray(1.0 / length, self.dtype)

    # ------------------------------------------------------------------ states
    def ghost_states(self, w_face):
        """Ghost states of every boundary face from the interior face states."""
        xp = self.backend.xp
        g = self.geometry
        ni = self.n_interior
        ghosts = xp.empty_like(w_face[:, ni:])
        for face_range, spec, partner, outside in self.boundaries:
            local = slice(face_range.start - ni, face_range.stop - ni)
            if partner is not None:
                ghosts[:, local] = w_face[:, partner]
            elif outside is not None:
                ghosts[:, local] = characteristic_ghost(self.gas, w_face[:, face_range],
                                                        g.normal[:, face_range],
                                                        outside.primitive(self.circulation))
            else:
                ghosts[:, local] = spec.condition.ghost(self.gas, w_face[:, face_range],
                                                        g.normal[:, face_range], spec.params)
        return ghosts

    def face_states(self, w):
        """Left and right (ghost on the boundary) states of every face, plus gradients.

        Returns
        -------
        w_left, w_right : array
            ``(n_vars, n_faces)`` reconstructed states.
        w_cell_right : array
            ``(n_vars, n_faces)`` unreconstructed right states (ghosts of cell values).
        gradient : array or None
        """
        xp = self.backend.xp
        g, ni = self.geometry, self.n_interior
        w_cell_left = w[:, g.left]
        w_cell_right = xp.concatenate([w[:, g.right[:ni]], self.ghost_states(w_cell_left)],
                                      axis=1)
        if not self.needs_gradient:
            return w_cell_left, w_cell_right, w_cell_right, None
        neighbour = w_cell_right.copy()
        neighbour[:, ni:] = 0.5 * (w_cell_left[:, ni:] + w_cell_right[:, ni:])
        gradient = self.gradient(w_cell_left, neighbour)
        if self.scheme.order == 1:
            return w_cell_left, w_cell_right, w_cell_right, gradient
        change_left = increments(gradient, g.left, self.offset_left)
        change_right = increments(gradient, g.right[:ni], self.offset_right[:, :ni])
        if self.scheme.limiter == "venkatakrishnan":
            phi = self.frozen_limiter
            if phi is None:
                phi = venkatakrishnan(w, change_left, change_right, w_cell_left, neighbour,
                                      self.epsilon2, self.accumulator)
                if self.limiter_ceiling is not None:
                    phi = self.limiter_ceiling = self.backend.xp.minimum(phi,
                                                                         self.limiter_ceiling)
            self.limiter_values = phi
            change_left *= xp.take(phi, g.left, axis=1)
            change_right *= xp.take(phi, g.right[:ni], axis=1)
        elif self.scheme.limiter == "van-albada":
            jump = w_cell_right - w_cell_left
            van_albada(change_left, self.central_left * jump,
                       xp.take(self.epsilon2, g.left, axis=1))
            van_albada(change_right, -self.central_right[:ni] * jump[:, :ni],
                       xp.take(self.epsilon2, g.right[:ni], axis=1))
        w_left = w_cell_left + change_left
        w_right_inner = w[:, g.right[:ni]] + change_right
        w_left = self._positive(w_left, w_cell_left)
        w_right_inner = self._positive(w_right_inner, w_cell_right[:, :ni])
        w_right = xp.concatenate([w_right_inner, self.ghost_states(w_left)], axis=1)
        return w_left, w_right, w_cell_right, gradient

    def _positive(self, reconstructed, cell):
        """Fall back to the cell value where reconstruction made rho or p non-positive."""
        bad = (reconstructed[0] <= 0) | (reconstructed[-1] <= 0)
        return self.backend.xp.where(bad[None], cell, reconstructed)

    # ------------------------------------------------------------------ residual
    def face_fluxes(self, u):
        """Numerical flux times area of every face, ``(n_vars, n_faces)``."""
        g = self.geometry
        w = self.gas.to_primitive(u)
        if self.stencil is not None:
            return self._jst_fluxes(u, w) * g.area
        w_left, w_right, w_cell_right, gradient = self.face_states(w)
        flux = self.flux(self.gas, w_left, w_right, g.normal)
        if self.viscous:
            flux = flux - self.viscous_flux(w, w_cell_right, gradient)
        flux = flux * g.area
        self.mass_flux = flux[0]
        return flux

    def _jst_fluxes(self, u, w):
        """JST fluxes per unit area (:mod:`~gpusolver.solvers.fv.jst`): central between
        cells, the Riemann flux of cell and ghost on the other boundary faces."""
        g, ni, xp = self.geometry, self.n_interior, self.backend.xp
        st = self.stencil
        w_left = w[:, g.left]
        w_right = xp.concatenate([w[:, g.right[:ni]], self.ghost_states(w_left)], axis=1)
        u_left, u_right = u[:, g.left], self.gas.to_conserved(w_right)
        laplacian, sensor = jst.differences(u_left, u_right, w_left[-1], w_right[-1],
                                            self.accumulator)
        across, left = st.across, g.left
        speed, cell = jst.spectral_radii(self.gas, w_left, w_right, g.normal, g.area,
                                         self.accumulator)
        speed *= jst.stretching(cell[left], cell[across], speed * g.area,
                                self.scheme.stretching_power)
        flux = jst.central_flux(self.gas, w_left, w_right, u_left, u_right,
                                laplacian[:, left], laplacian[:, across], sensor[left],
                                sensor[across], st.neighbours[left], st.neighbours[across],
                                g.normal, speed, self.scheme.jst_k2, self.scheme.jst_k4)
        boundary = self.flux(self.gas, w_left[:, ni:], w_right[:, ni:], g.normal[:, ni:])
        flux[:, ni:] = xp.where(st.joined[ni:] > 0, flux[:, ni:], boundary)
        return flux

    def residual(self, u):
        """Net flux into every cell, ``V dU/dt``, ``(n_vars, n_cells)``.

        Keeps the boundary face fluxes in :attr:`boundary_flux` for forces.
        """
        if self.fused is not None:
            return self.fused.residual(u)
        flux = self.face_fluxes(u)
        self.boundary_flux = flux[:, self.n_interior:]
        return self.accumulator.combine(-flux, flux)

    def viscous_flux(self, w, w_cell_right, gradient):
        """Viscous flux ``(0, tau . n, u . tau . n + k grad T . n)`` per unit area."""
        xp = self.backend.xp
        gas, g = self.gas, self.geometry
        dim = g.dim
        gamma = gas.gamma
        w_left = w[:, g.left]
        w_right = w_cell_right

        def temperature_gradient(grad, state):
            return gamma * (grad[-1] / state[0] - state[-1] * grad[0] / state[0] ** 2)

        grad_left, grad_right = self._side_gradients(gradient)
        t = self.tangent
        inv_len = self.inverse_length

        def corrected(grad_l, grad_r, value_l, value_r):
            mean = 0.5 * (grad_l + grad_r)
            along = (mean * t).sum(axis=0)
            return mean + ((value_r - value_l) * inv_len - along) * t

        velocity_left, velocity_right = w_left[1:-1], w_right[1:-1]
        grad_u = xp.stack([corrected(grad_left[1 + i], grad_right[1 + i],
                                     velocity_left[i], velocity_right[i]) for i in range(dim)])
        t_left, t_right = gas.temperature(w_left), gas.temperature(w_right)
        grad_t = corrected(temperature_gradient(grad_left, w_left),
                           temperature_gradient(grad_right, w_right), t_left, t_right)
        mu = gas.viscosity(0.5 * (t_left + t_right))
        return gas.viscous_flux(0.5 * (velocity_left + velocity_right), grad_u, grad_t, mu,
                                g.normal, self.eddy_viscosity)

    def _side_gradients(self, gradient):
        """Cell gradients on both sides of each face; the left one mirrors to the ghost."""
        g, ni = self.geometry, self.n_interior
        grad_left = gradient[:, :, g.left]
        grad_right = grad_left.copy()
        grad_right[:, :, :ni] = gradient[:, :, g.right[:ni]]
        for face_range, _, partner, _ in self.boundaries:
            if partner is not None:
                grad_right[:, :, face_range] = gradient[:, :, g.left[partner]]
        return grad_left, grad_right

    # ------------------------------------------------------------------ time step
    def _mean_face_states(self, u):
        """Primitive states on faces: the mean of the two cells (the cell on the boundary)."""
        g, ni = self.geometry, self.n_interior
        w = self.gas.to_primitive(u)
        w_face = w[:, g.left]
        w_face[:, :ni] = 0.5 * (w_face[:, :ni] + w[:, g.right[:ni]])
        return w_face

    def spectral_radius(self, u, speeds: WaveSpeeds | None = None):
        """``sum_f (|u.n| + c + 4 lambda_v) A_f`` per cell: ``V / dt`` at CFL 1."""
        area = self.geometry.area
        speed = self.face_spectral_radius(u, viscous_factor=VISCOUS_FACTOR, speeds=speeds) * area
        return self.accumulator.combine(speed, speed)

    def face_wave_speeds(self, u) -> WaveSpeeds:
        """Convective ``|u.n| + c`` and viscous ``lambda_v`` speeds per face.

        ``lambda_v = max(4/3, gamma/Pr) mu / (rho |d|)`` with ``|d|`` the distance
        between the two centroids (twice the wall distance on the boundary); ``None``
        for inviscid flow. States are the means of the two cells.
        """
        xp = self.backend.xp
        g, gas = self.geometry, self.gas
        w_face = self._mean_face_states(u)
        convective = xp.abs((w_face[1:-1] * g.normal).sum(axis=0)) + gas.sound_speed(w_face)
        viscous = None
        if self.viscous:
            mu = gas.viscosity(gas.temperature(w_face))
            if self.eddy_viscosity is not None:
                mu = mu + self.eddy_viscosity
            diffusivity = max(4.0 / 3.0, gas.gamma / gas.prandtl) * mu / w_face[0]
            viscous = diffusivity * self.inverse_length
        return WaveSpeeds(convective, viscous)

    def face_spectral_radius(self, u, omega: float = 1.0,
                             viscous_factor: float = IMPLICIT_VISCOUS_FACTOR,
                             speeds: WaveSpeeds | None = None):
        """``omega (|u.n| + c) + viscous_factor lambda_v`` per face.

        The defaults are the dissipation of the LU-SGS operator at ``omega = 1``;
        ``speeds`` (from :meth:`face_wave_speeds` of the same ``u``) saves computing
        them again.
        """
        speeds = self.face_wave_speeds(u) if speeds is None else speeds
        radius = omega * speeds.convective
        if speeds.viscous is not None:
            radius = radius + viscous_factor * speeds.viscous
        return radius
