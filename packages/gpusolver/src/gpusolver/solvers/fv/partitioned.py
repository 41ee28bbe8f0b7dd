"""The finite-volume solver on the parts of a partitioned plan, exchanging halos.

Each part (``meshorder reorder --partitions N``) runs the single-mesh discretisation on
its own cells plus a two-layer halo (:mod:`gpusolver.layout.parts`); before every
residual evaluation the halo states are refreshed from the parts that own them. This
module holds the ``loopback`` transport, all parts in one process: the reference that
the MPI and NCCL transports must reproduce, and the test that the layout is exact
(the parts' answer equals the one-part answer to round-off).
"""

from __future__ import annotations

import itertools

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.errors import ConfigError
from gpusolver.integrators.explicit import TABLEAUX, runge_kutta
from gpusolver.layout.geometry import build_geometry
from gpusolver.layout.parts import part_layout
from gpusolver.monitors.forces import Forces, wall_forces
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.discretisation import BoundarySpec, Discretisation, Scheme
from meshorder import Mesh, Topology
from meshorder.plan import Plan


class PartitionedSolver:
    """Explicit Runge-Kutta steps on every part of a partitioned plan (loopback).

    Parameters
    ----------
    mesh : Mesh
    gas : Gas
    boundaries : dict
        Condition per marker (as for :class:`gpusolver.solvers.fv.Solver`); periodic
        markers are not supported across parts.
    plan : Plan
        Made with ``partitions`` > 1.
    scheme : Scheme, optional
    integrator : str
        A name in :data:`gpusolver.integrators.explicit.TABLEAUX`.
    cfl : float
    backend, precision : str
    reference_area : float
    topology : Topology, optional
    """

    def __init__(self, mesh: Mesh, gas: Gas, boundaries: dict, plan: Plan, *,
                 scheme: Scheme | None = None, integrator: str = "rk4", cfl: float = 1.0,
                 backend: str = "numpy", precision: str = "fp64", reference_area: float = 1.0,
                 topology: Topology | None = None):
        split = plan.partition()
        if split is None:
            raise ConfigError("the plan has no partitions; make it with "
                              "`meshorder reorder --partitions N`")
        if integrator not in TABLEAUX:
            raise ConfigError(f"partitioned runs step explicitly; time_integrator must be one "
                              f"of {', '.join(TABLEAUX)}, not {integrator!r}")
        specs = {name: value if isinstance(value, BoundarySpec) else BoundarySpec.parse(name, value)
                 for name, value in boundaries.items()}
        if any(spec.condition.name == "periodic" for spec in specs.values()):
            raise ConfigError("periodic boundaries are not supported across parts yet")
        self.backend = get_backend(backend)
        self.dtype = np.dtype(PRECISIONS[precision])
        self.gas, self.cfl, self.reference_area = gas, cfl, reference_area
        self.stages = TABLEAUX[integrator]
        self.host = build_geometry(mesh, topology or Topology(mesh), plan)
        self.parts = [part_layout(self.host, int(a), int(b))
                      for a, b in itertools.pairwise(split.offsets)]
        scheme = scheme or Scheme()
        self.discretisations = [
            Discretisation(part.geometry, gas, scheme,
                           {name: specs[name] for name in part.geometry.markers}, "atomic",
                           self.backend, self.dtype, kernels="arrays")
            for part in self.parts]
        self.wall_markers = [name for name, spec in specs.items() if spec.condition.wall]
        xp = self.backend.xp
        w = np.repeat(gas.free_stream[:, None], self.host.n_cells, axis=1)
        self.u = self.backend.asarray(gas.to_conserved(w), self.dtype)
        self.volume = self.backend.asarray(self.host.volume, self.dtype)
        self.boundary_flux = xp.zeros((gas.n_vars, self.host.n_faces - self.host.n_interior),
                                      self.dtype)
        self.iteration = 0

    @property
    def n_parts(self) -> int:
        """Number of parts."""
        return len(self.parts)

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the state from conserved values in the file's cell order."""
        self.u = self.backend.asarray(np.asarray(u)[:, self.host.cell_order], self.dtype)

    def conserved(self) -> np.ndarray:
        """Conserved state on the host, in the file's cell order."""
        out = np.empty((self.gas.n_vars, self.host.n_cells), dtype=self.dtype)
        out[:, self.host.cell_order] = self.backend.to_host(self.u)
        return out

    def _each_part(self, u, work) -> None:
        """Run ``work(part, discretisation, local_state)`` on every part after the exchange.

        Loopback: a part's local state (own cells and halo) is gathered straight from
        the global state that the owners' updates wrote.
        """
        for part, d in zip(self.parts, self.discretisations, strict=True):
            work(part, d, u[:, self.backend.asarray(part.cells)])

    def residual(self, u):
        """``R(u)`` of every cell, each part computing its own cells (plan order)."""
        out = self.backend.xp.empty_like(u)
        ni = self.host.n_interior

        def own_residual(part, d, local):
            own = self.backend.asarray(part.cells[:part.n_own])
            out[:, own] = d.residual(local)[:, :part.n_own]
            faces = self.backend.asarray(part.boundary_faces[part.own_boundary] - ni)
            self.boundary_flux[:, faces] = d.boundary_flux[:, self.backend.asarray(
                part.own_boundary)]
        self._each_part(u, own_residual)
        return out

    def time_step(self, u):
        """Local time step of every cell at the CFL number, each part its own cells."""
        dt = self.backend.xp.empty(u.shape[1], dtype=self.dtype)

        def own_step(part, d, local):
            own = self.backend.asarray(part.cells[:part.n_own])
            radius = d.spectral_radius(local)[:part.n_own]
            dt[own] = self.cfl * d.geometry.volume[:part.n_own] / radius
        self._each_part(u, own_step)
        return dt

    def step(self) -> np.ndarray:
        """One step; the RMS of ``dU/dt`` per variable before it (one global reduction)."""
        dt = self.time_step(self.u)
        flux: dict = {}

        def rate(u):
            r = self.residual(u) / self.volume
            flux.setdefault("wall", self.boundary_flux.copy())
            return r

        self.u, r0 = runge_kutta(self.stages, self.u, rate, dt)
        self._wall_flux = flux["wall"]
        self.iteration += 1
        xp = self.backend.xp
        return self.backend.to_host(xp.sqrt((r0.astype(np.float64) ** 2).mean(axis=1)))

    def wall_forces(self) -> dict[str, Forces]:
        """Forces on the wall markers at the start of the last step (summed over parts)."""
        flux = self.backend.to_host(self._wall_flux).astype(np.float64)
        return wall_forces(flux, self.host, self.gas, self.wall_markers, self.reference_area)
