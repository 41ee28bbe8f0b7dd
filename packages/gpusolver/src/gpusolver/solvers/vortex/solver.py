"""The vortex element method's time loop: viscous vortex domains around one rigid body.

Each step (explicit Euler, as in the paper):

1. **Generation.** The free stream's and the wake's mean tangential velocity on each
   panel (exact for point vortices, :func:`.sheet.mean_tangential`) give the sheet's
   intensities (:class:`.sheet.VortexSheet`, its inverse matrix made once); the sheet
   is shed as ``per_panel`` new elements per panel, on the panel a hair into the flow,
   each carrying its share of the panel's circulation.
2. **Velocities.** Convective: free stream plus Biot-Savart of every element (direct sum
   or tree, in the run's precision). Diffusive: the viscous vortex domains' sums, with
   the body's surface terms (:mod:`.diffusion`); with the tree on the GPU and at least
   :data:`TREE_LOCAL_MIN` elements, the domain radii and the wake's sums walk a
   quadtree too (:func:`.tree.kernel_tree_diffusion_sums`), the other sums stay direct.
3. **Move** every element by ``(V + W) dt``.
4. **Restructuring** (:mod:`.restructure`): elements whose move crossed the body are
   taken out, close same-sign pairs merged (the merging radius grows with the distance
   from the body), the far wake dropped. A dropped element's circulation stays counted
   in the flow (``far_circulation``): were it handed to the body's sheet, as the total's
   conservation alone would do, each vortex of the street leaving the far field would put
   its circulation around the body, and the lift would swing with it.
5. **Loads.** The wall pushes on the flow by its pressure and by its friction. The
   pressure's part comes from the vortex impulse: ``F = -rho dI/dt`` with
   ``I = sum Gamma (y, -x)`` and ``M = rho / 2 d/dt sum Gamma |r - r_ref|^2``, where
   ``dI/dt`` is the impulse of the circulation the wall puts into the flow: the step's
   new elements at their birth points less the absorbed ones where they left (as VM2D
   computes it); the elements' own discrete motion, which the exact flow would not
   count, stays out. The friction ``mu Omega_wall`` along the wall is added to it, the
   wall's vorticity from the elements near it (:mod:`.surface`; without it the drag of a
   cylinder at Re 100 is its pressure drag alone, about 1.0 instead of 1.33). The
   surface's pressure and friction coefficients of the step are in ``surface``. The
   loads of single steps are noisy (the sheet answers elements jittering next to the
   wall): average them.

On the ``cupy`` backend every array stays on the GPU and the sums and restructuring run
as CUDA kernels (``kernels/vvd.cu``, ``kernels/biot_savart.cu``, ``kernels/tree.cu``);
the ``numpy`` backend is the reference (fp64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.errors import ConfigError, SolverDivergedError
from gpusolver.solvers.vortex import device, diffusion, restructure, tree
from gpusolver.solvers.vortex.biot_savart import METHODS, velocity
from gpusolver.solvers.vortex.body import Body
from gpusolver.solvers.vortex.sheet import VortexSheet, mean_tangential
from gpusolver.solvers.vortex.surface import SurfaceLoads, surface_forces, surface_loads

#: New elements start this fraction of a mean panel length off their panel.
BIRTH_OFFSET = 1e-3
#: The domain radii's default floor keeps the explicit diffusive step's Fourier number
#: ``nu dt / floor^2`` at most this. Smaller radii next to the wall make the step's
#: diffusive moves overshoot and over-diffuse the separating shear layers: a cylinder's
#: Strouhal number at Re 100 was 0.157 with radii floored at 0.2 panel lengths and 0.164
#: at 2 (0.165 published). A floor of 2 panel lengths at every Reynolds number instead
#: put an impulsive start's drag peak 18% high at Re 550 (measured 2026-11-25; the
#: history of docs/validation.md).
FOURIER_MAX = 0.1
#: The default floor is at most this many mean panel lengths: larger floors smear layers
#: the panels resolve (on the Blasius plate a floor of 3.6 thinned the boundary layer,
#: 0.038 from a finite-volume solution of the same plate against 0.008 at 2).
FLOOR_PANELS = 2.0
#: The radii of the wall's vorticity (the friction) are floored at this many instead.
WALL_FLOOR_PANELS = 0.2

#: With ``method = "tree"`` on the GPU, the local searches (the diffusion's radii and wake
#: sums, merging's partners) walk a tree from this many elements on; below, the direct
#: kernels are faster (the tree's build, array code, takes about 20 ms: on the H100 the
#: direct diffusion sums take 3 ms at 51,200 elements and 73 ms at 262,144, the tree 24
#: and 29 ms; docs/benchmarks.md).
TREE_LOCAL_MIN = 131072


@dataclass(frozen=True)
class VortexSettings:
    """Physical and numerical settings of a vortex run (lengths in the body's units).

    Attributes
    ----------
    reynolds : float
        ``|V_inf| reference_length / nu``.
    dt : float
        Time step.
    free_stream : tuple of float
        ``V_inf``.
    reference_length : float or None
        Divides forces (with ``rho |V_inf|^2 / 2``); default: the body's extent in x.
    core : float or None
        Core radius ``eps`` of the Biot-Savart kernel; default: the mean panel length.
    merge_radius : float or None
        Elements closer than this merge near the body; default 0.3 mean panel lengths.
    merge_signs : str
        ``any`` (default): pairs of any sign merge, opposite circulations partly
        cancelling, as in VM2D; ``same``: only pairs of one sign (:mod:`.restructure`).
        With ``same`` a cylinder's wake collapsed at small steps (docs/validation.md).
    diffusion_signs : str
        ``same`` (default): each sign's vorticity diffuses on its own; ``any``: the
        diffusive velocity follows the smoothed vorticity of all elements, as in VM2D
        (:mod:`.diffusion`).
    merge_growth : float
        The merging radius grows by this factor per reference length of distance from
        the body's centre beyond one.
    radius_floor : float or None
        Smallest domain radius; default ``sqrt(nu dt / FOURIER_MAX)`` (:data:`FOURIER_MAX`),
        at most :data:`FLOOR_PANELS` mean panel lengths.
    far_distance : float
        Elements farther than this many reference lengths from the body's centre go.
    per_panel : int
        New elements per panel and step.
    diffusion_limit : float
        Diffusive speeds are capped at this multiple of ``|V_inf|``.
    method : str
        Biot-Savart sum: ``direct`` or ``tree``.
    theta : float
        ``tree``: the accuracy parameter.
    precision : str
        Velocities and diffusion sums: ``fp32`` or ``fp64`` (generation and
        restructuring are always fp64).
    """

    reynolds: float
    dt: float
    free_stream: tuple = (1.0, 0.0)
    reference_length: float | None = None
    core: float | None = None
    merge_radius: float | None = None
    merge_growth: float = 1.0
    merge_signs: str = "any"
    diffusion_signs: str = "same"
    radius_floor: float | None = None
    far_distance: float = 20.0
    per_panel: int = 1
    diffusion_limit: float = 1.5
    method: str = "direct"
    theta: float = 0.5
    precision: str = "fp64"

    def __post_init__(self):
        for name in ("reynolds", "dt", "far_distance", "diffusion_limit"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"vortex setting {name} must be positive, got "
                                  f"{getattr(self, name)!r}")
        for name in ("reference_length", "core", "merge_radius", "radius_floor"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"vortex setting {name} must be positive, got {value!r}")
        if not math.hypot(*self.free_stream) > 0:
            raise ConfigError("the free stream must not be zero (it sets the Reynolds "
                              "number's speed)")
        if not (isinstance(self.per_panel, int) and self.per_panel >= 1):
            raise ConfigError(f"per_panel must be a positive integer, got {self.per_panel!r}")
        if self.merge_signs not in restructure.MERGE_SIGNS:
            raise ConfigError(f"unknown merge_signs {self.merge_signs!r}; valid: "
                              f"{', '.join(restructure.MERGE_SIGNS)}")
        if self.diffusion_signs not in diffusion.DIFFUSION_SIGNS:
            raise ConfigError(f"unknown diffusion_signs {self.diffusion_signs!r}; valid: "
                              f"{', '.join(diffusion.DIFFUSION_SIGNS)}")
        if self.method not in METHODS:
            raise ConfigError(f"unknown velocity method {self.method!r}; valid: "
                              f"{', '.join(METHODS)}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"unknown precision {self.precision!r}; valid: "
                              f"{', '.join(PRECISIONS)}")


@dataclass
class Loads:
    """The loads of one step: force and moment coefficients (the friction's part of the
    force apart too), elements, circulation."""

    time: float
    cx: float
    cy: float
    cm: float
    cx_friction: float
    cy_friction: float
    elements: int
    born: int
    absorbed: int
    merged: int
    dropped: int
    circulation: float


class VortexSolver:
    """Vortex elements around ``body`` (see the module docstring).

    Parameters
    ----------
    body : Body
    settings : VortexSettings
    backend : str
        ``numpy`` (the reference), ``cupy`` or ``auto``.
    """

    def __init__(self, body: Body, settings: VortexSettings, backend: str = "auto"):
        self.body, self.settings = body, settings
        self.backend = get_backend(backend)
        xp = self.backend.xp
        self.xp = xp
        panel = float(body.lengths.mean())
        self.panel_length = panel
        extent = float(np.ptp(body.vertices[:, 0]))
        self.reference_length = settings.reference_length or extent
        self.speed = math.hypot(*settings.free_stream)
        self.nu = self.speed * self.reference_length / settings.reynolds
        self.core = settings.core or panel
        self.merge_radius = settings.merge_radius or 0.3 * panel
        self.radius_floor = settings.radius_floor or min(
            FLOOR_PANELS * panel, math.sqrt(self.nu * settings.dt / FOURIER_MAX))
        #: The wall's vorticity takes radii floored at this (never above the sums' floor).
        self.wall_radius_floor = min(self.radius_floor, WALL_FLOOR_PANELS * panel)
        self.centre = xp.asarray(body.vertices.mean(axis=0))
        self.midpoints = xp.asarray(body.midpoints)
        self.panel_lengths = xp.asarray(body.lengths)
        #: The pressure and friction along the wall in the last step.
        self.surface: SurfaceLoads | None = None
        self.sheet = VortexSheet(body)
        self.dtype = np.dtype(PRECISIONS[settings.precision])
        self.u_inf = xp.asarray(settings.free_stream, dtype=np.float64)
        self.stream_along = xp.asarray(body.tangents @ np.asarray(settings.free_stream,
                                                                  dtype=np.float64))
        per = settings.per_panel
        t = (np.arange(per) + 0.5) / per
        births = (body.vertices[:, None, :] + (body.ends - body.vertices)[:, None, :]
                  * t[None, :, None] + BIRTH_OFFSET * panel * body.normals[:, None, :])
        self.births = xp.asarray(births.reshape(-1, 2))
        self.birth_share = xp.asarray(np.repeat(body.lengths / per, per))
        self.birth_tangents = xp.asarray(np.repeat(body.tangents, per, axis=0))
        if self.backend.name != "numpy":
            self.panels = device.BodyArrays(self.backend, body, self.dtype)
            self.panels64 = (self.panels if self.dtype == np.float64
                             else device.BodyArrays(self.backend, body, np.float64))
        self.positions = xp.zeros((0, 2))
        self.gammas = xp.zeros(0)
        #: Circulation of the elements dropped beyond ``far_distance``: still in the flow,
        #: far away, so the body does not take it up (the sheet's total answers the
        #: free elements' and this).
        self.far_circulation = 0.0
        self.time = 0.0
        self.iteration = 0

    # --- state ---------------------------------------------------------------------

    @property
    def n_elements(self) -> int:
        """Free elements now."""
        return len(self.gammas)

    def set_state(self, positions, gammas, time: float, iteration: int,
                  far_circulation: float = 0.0) -> None:
        """Replace the wake (a restart)."""
        self.positions = self.xp.asarray(positions, dtype=np.float64).reshape(-1, 2)
        self.gammas = self.xp.asarray(gammas, dtype=np.float64).reshape(-1)
        self.time, self.iteration = float(time), int(iteration)
        self.far_circulation = float(far_circulation)

    def _impulse(self, positions, gammas):
        """``(sum Gamma y, -sum Gamma x, sum Gamma |r - r_ref|^2)`` about the centre."""
        r = positions - self.centre
        return self.xp.stack([(gammas * r[:, 1]).sum(), -(gammas * r[:, 0]).sum(),
                              (gammas * (r**2).sum(axis=1)).sum()])

    # --- the pieces of a step ------------------------------------------------------

    def convective_velocity(self, positions, gammas, targets=None):
        """Free stream plus Biot-Savart at ``targets`` (the elements by default), fp64."""
        if len(gammas) == 0:
            n = len(positions) if targets is None else len(targets)
            return self.xp.broadcast_to(self.u_inf, (n, 2)).copy()
        s = self.settings
        v = velocity(positions, gammas, self.core, targets, method=s.method,
                     backend=self.backend, precision=s.precision, theta=s.theta)
        return v.astype(np.float64) + self.u_inf

    def diffusive_velocity(self, positions, gammas):
        """The viscous vortex domains' velocities of the elements, fp64."""
        return self._diffusion(positions, gammas)[0]

    def _diffusion(self, positions, gammas):
        """The elements' diffusive velocities ``(N, 2)`` and the wall's vorticity
        integrated along each panel ``(n_panels,)`` (:func:`.diffusion.wall_vorticity`),
        fp64. The wall's vorticity takes the domain radii floored at
        :data:`WALL_FLOOR_PANELS` panel lengths only: the floor steadies the diffusive
        velocity, a ratio of sums, but would smear a thin layer's vorticity at the wall
        (an impulsive start's friction fell to 0.73 of Rayleigh's with 2 panel lengths)."""
        xp = self.xp
        if len(gammas) <= diffusion.NEIGHBOURS:
            return xp.zeros_like(positions), xp.zeros(self.body.n_panels)
        signs = self.settings.diffusion_signs
        # the wall's radii differ from the sums'
        separate = self.wall_radius_floor < self.radius_floor
        if self.backend.name == "numpy":
            wall_radii = diffusion.domain_radii(positions, self.wall_radius_floor)
            radii = np.maximum(wall_radii, self.radius_floor)
            i1, i2 = diffusion.wake_sums(positions, gammas, radii, signs)
            i0, i3 = diffusion.surface_sums(positions, radii, self.body)
            wall_i0 = diffusion.surface_sums(positions, wall_radii, self.body)[0] \
                if separate else i0
            wall = diffusion.wall_vorticity(positions, gammas, wall_radii, wall_i0, self.body)
        else:
            be, dtype = self.backend, self.dtype
            p = xp.ascontiguousarray(positions.astype(dtype))
            g = xp.ascontiguousarray(gammas.astype(dtype))
            if self._local_tree(gammas):
                radii, i1, i2, wall_radii = tree.kernel_tree_diffusion_sums(
                    be, positions, gammas, self.radius_floor, diffusion.CUTOFF, dtype, signs,
                    wall_floor=self.wall_radius_floor)
            else:
                wall_radii = device.domain_radii(be, p, self.wall_radius_floor)
                radii = xp.maximum(wall_radii, dtype.type(self.radius_floor))
                i1, i2 = device.wake_sums(be, p, g, radii, signs)
            if separate:
                i0, i3 = device.surface_sums(be, p, radii, self.panels)
                wall = device.surface_sums(be, p, wall_radii, self.panels, g)[2]
            else:
                i0, i3, wall = device.surface_sums(be, p, radii, self.panels, g)
        w = diffusion.combine(i0, i1, i2, i3, radii, self.nu,
                              self.settings.diffusion_limit * self.speed)
        return w.astype(np.float64), wall.astype(np.float64)

    def sheet_intensity(self):
        """The sheet that cancels the wall's slip of the present wake, ``(n_panels,)``."""
        if self.backend.name == "numpy":
            along = mean_tangential(self.positions, self.gammas, self.body)
        else:
            along = device.mean_tangential(self.backend, self.positions, self.gammas,
                                           self.panels64)
        return self.sheet.intensities(self.stream_along + along,
                                      self.gammas.sum() + self.far_circulation)

    def _add_sheet_velocity(self, targets, intensity, out) -> None:
        if len(targets) == 0:
            return
        if self.backend.name == "numpy":
            out += self.sheet.velocity(intensity, targets, self.core)
        else:
            device.add_sheet_velocity(self.backend, targets, intensity, self.panels, out,
                                      self.core)

    def _absorbed(self, start, end):
        if self.backend.name == "numpy":
            return restructure.absorbed(start, end, self.body)
        return device.absorbed(self.backend, self.xp.ascontiguousarray(start),
                               self.xp.ascontiguousarray(end), self.panels64)

    def _per_panel(self, positions, gammas):
        """Circulation of elements summed onto their nearest panels (by midpoint)."""
        xp = self.xp
        if len(gammas) == 0:
            return xp.zeros(self.body.n_panels)
        d = ((positions[:, None, :] - self.midpoints[None, :, :]) ** 2).sum(axis=2)
        return xp.bincount(d.argmin(axis=1), weights=gammas, minlength=self.body.n_panels)

    def merge_radii(self, positions):
        """Each element's merging radius: larger away from the body."""
        r = self.xp.sqrt(((positions - self.centre) ** 2).sum(axis=1))
        beyond = self.xp.maximum(r / self.reference_length - 1.0, 0.0)
        return self.merge_radius * (1.0 + self.settings.merge_growth * beyond)

    def _local_tree(self, gammas) -> bool:
        """Whether the local searches walk a tree (:data:`TREE_LOCAL_MIN`)."""
        return (self.settings.method == "tree" and self.backend.name == "cupy"
                and len(gammas) >= TREE_LOCAL_MIN)

    def _merge(self, positions, gammas):
        radii = self.merge_radii(positions)
        if self._local_tree(gammas):
            partner = tree.kernel_tree_partners(self.backend, positions, gammas, radii,
                                                self.settings.merge_signs)
        elif self.backend.name == "numpy":
            partner = restructure.partners(positions, gammas, radii, self.settings.merge_signs)
        else:
            partner = device.partners(self.backend, self.xp.ascontiguousarray(positions),
                                      self.xp.ascontiguousarray(gammas),
                                      self.xp.ascontiguousarray(radii),
                                      self.settings.merge_signs)
        return restructure.apply_merges(positions, gammas, partner)

    def flow_velocity(self, points):
        """``(m, 2)`` fluid velocity now at ``points`` (in the flow): the free stream, the
        wake and the sheet that the wall would carry now (solved for the present wake,
        so the wall's slip is cancelled), fp64, on the backend's device."""
        points = self.xp.ascontiguousarray(self.xp.asarray(points, dtype=np.float64))
        intensity = self.sheet_intensity()
        out = self.convective_velocity(self.positions, self.gammas, points)
        self._add_sheet_velocity(points, intensity, out)
        return out

    # --- the step ------------------------------------------------------------------

    def step(self) -> Loads:
        """One time step (module docstring); returns its loads."""
        xp, s = self.xp, self.settings
        intensity = self.sheet_intensity()
        per_element = xp.repeat(intensity, s.per_panel)
        born = per_element * self.birth_share
        n_wake = len(self.gammas)
        positions = xp.concatenate([self.positions, self.births])
        gammas = xp.concatenate([self.gammas, born])
        convective = xp.empty_like(positions)
        # the wake: free stream, the other free elements, and the sheet as panels
        convective[:n_wake] = self.convective_velocity(self.positions, self.gammas)
        self._add_sheet_velocity(self.positions, intensity, convective[:n_wake])
        # the new elements slide along the wall at half the sheet's slip: the mean of the
        # velocities on its two sides (zero inside the body)
        convective[n_wake:] = 0.5 * (per_element[:, None]
                                     * self.birth_tangents)
        diffusive, wall = self._diffusion(positions, gammas)
        moved = positions + s.dt * (convective + diffusive)
        inside = self._absorbed(positions, moved)
        change = (self._impulse(self.births, born)
                  - self._impulse(positions[inside], gammas[inside])) / s.dt
        generated = intensity * self.panel_lengths - self._per_panel(positions[inside],
                                                                     gammas[inside])
        keep = ~inside
        positions, gammas = moved[keep], gammas[keep]
        n_kept = len(gammas)
        positions, gammas = self._merge(positions, gammas)
        n_merged = n_kept - len(gammas)
        gone = restructure.far(positions, self.centre,
                               s.far_distance * self.reference_length)
        self.far_circulation = self.far_circulation + gammas[gone].sum()
        self.positions, self.gammas = positions[~gone], gammas[~gone]
        self.time += s.dt
        self.iteration += 1
        change = self.backend.to_host(change)
        self.surface = surface_loads(self.body, self.backend.to_host(generated),
                                     self.backend.to_host(wall), s.dt, self.nu,
                                     s.free_stream)
        _, _, friction, friction_moment = surface_forces(self.body, self.surface,
                                                         self.body.vertices.mean(axis=0))
        length = self.reference_length
        scale = 0.5 * self.speed**2 * length
        cx_friction, cy_friction = friction / length
        loads = Loads(time=self.time, cx=float(-change[0] / scale + cx_friction),
                      cy=float(-change[1] / scale + cy_friction),
                      cm=float(0.5 * change[2] / (scale * length)
                               + friction_moment / length**2),
                      cx_friction=float(cx_friction), cy_friction=float(cy_friction),
                      elements=self.n_elements, born=len(born), absorbed=int(inside.sum()),
                      merged=n_merged, dropped=int(gone.sum()),
                      circulation=float(self.gammas.sum()))
        if not (math.isfinite(loads.cx) and math.isfinite(loads.cy)):
            raise SolverDivergedError(f"vortex step {self.iteration}: the loads are not "
                                      f"finite (cx {loads.cx}, cy {loads.cy})")
        return loads
