"""The finite-volume solver on the parts of a partitioned plan, exchanging halos.

Explicit Runge-Kutta steps give the one-part answer at every step. LU-SGS steps sweep
each part's own cells (:func:`gpusolver.solvers.fv.lusgs.own_levels`) with the halo's
change taken as zero: Gauss-Seidel inside a part, block Jacobi between parts (the
coupling the LU-SGS papers use across GPUs). The steady state is the same; the steps to
it differ a little from one part's.

Each part (``meshorder reorder --partitions N``) runs the single-mesh discretisation on
its own cells plus a two-layer halo (:mod:`gpusolver.layout.parts`); before every
residual evaluation the halo states are refreshed from the parts that own them, by a
transport (:mod:`gpusolver.parallel`): ``loopback`` holds every part in one process
(the reference, and the test that the layout is exact), ``mpi-host`` and ``nccl`` one
part per MPI rank. Every global quantity (time step, residual norms, forces) goes
through the transport's ``sum``.

Explicit steps run in the fused kernels where the discretisation has them (the cupy
backend), each stage's exchange overlapped with the parts' interior
(:mod:`gpusolver.solvers.fv.fused_parts`); elsewhere in array code.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import PRECISIONS, get_backend
from gpusolver.errors import ConfigError
from gpusolver.integrators.cfl import backing_off, ramped_cfl
from gpusolver.integrators.explicit import TABLEAUX, keeping_first, runge_kutta
from gpusolver.layout.parts import PartLayout, layout_of_part
from gpusolver.parallel import Loopback, halo_lists
from gpusolver.physics.boundary import BoundarySpec
from gpusolver.physics.gas import Gas
from gpusolver.solvers.fv.discretisation import Discretisation, Scheme
from gpusolver.solvers.fv.fused import FusedResidual
from gpusolver.solvers.fv.fused_parts import FusedPartsRungeKutta
from gpusolver.solvers.fv.lusgs import LUSGS, SWEEPS, FusedLUSGS, own_levels
from gpusolver.solvers.parts import Parts, PerPart
from meshorder.pipeline import DEFAULT_FACES
from meshorder.plan import PlanPart


class PartitionedSolver(Parts):
    """Explicit Runge-Kutta or LU-SGS steps on the parts of a partitioned plan.

    Parameters
    ----------
    parts : list of meshorder.plan.PlanPart
        The parts this process computes (:meth:`meshorder.Plan.part` or
        :func:`meshorder.plan.read_plan_part`): one under MPI, every part with the
        ``loopback`` transport. The whole mesh is never needed.
    gas : Gas
    boundaries : dict
        Condition per marker (as for :class:`gpusolver.solvers.fv.Solver`); periodic
        markers are not supported across parts.
    scheme : Scheme, optional
    integrator : str
        A name in :data:`gpusolver.integrators.explicit.TABLEAUX`, or ``lusgs``.
    cfl : float
        The CFL number (LU-SGS: the first one).
    cfl_max : float, optional
        LU-SGS: ramp the CFL number with the residual's fall up to this
        (:func:`~gpusolver.integrators.cfl.ramped_cfl`).
    sweeps : str
        LU-SGS levels inside each part: ``hyperplanes`` or ``colours``.
    backend, precision : str
    reference_area : float
    transport : callable, optional
        Makes the transport from the parts' halo lists: :class:`~gpusolver.parallel.Loopback`
        (default: every part in this process) or one of
        :func:`~gpusolver.parallel.make_transport` (this rank's part).
    kernels : str
        ``fused``: explicit steps in the fused kernels on the cupy backend; ``arrays``:
        array code.
    overlap : bool
        Fused steps: compute each part's interior while its halo is in flight.
    faces : str
        meshorder's face order inside each part (:func:`~gpusolver.layout.parts.layout_of_part`).
    """

    def __init__(self, parts: list[PlanPart], gas: Gas, boundaries: dict, *,
                 scheme: Scheme | None = None, integrator: str = "rk4", cfl: float = 1.0,
                 cfl_max: float | None = None, sweeps: str = "hyperplanes",
                 backend: str = "numpy", precision: str = "fp64", reference_area: float = 1.0,
                 transport=None, kernels: str = "fused", overlap: bool = True,
                 faces: str = DEFAULT_FACES):
        if integrator not in (*TABLEAUX, "lusgs"):
            raise ConfigError(f"partitioned runs take explicit or LU-SGS steps; "
                              f"time_integrator must be one of {', '.join(TABLEAUX)} or "
                              f"lusgs, not {integrator!r}")
        if sweeps not in SWEEPS:
            raise ConfigError(f"unknown sweeps {sweeps!r}; valid: {', '.join(SWEEPS)}")
        specs = {name: value if isinstance(value, BoundarySpec) else BoundarySpec.parse(name, value)
                 for name, value in boundaries.items()}
        if any(spec.condition.name == "periodic" or spec.params.get("vortex")
               for spec in specs.values()):
            raise ConfigError("periodic boundaries and vortex far fields are not supported "
                              "across parts yet")
        self.backend = get_backend(backend)
        self.dtype = np.dtype(PRECISIONS[precision])
        self.gas, self.cfl, self.reference_area = gas, cfl, reference_area
        #: Number of cells of the whole mesh.
        self.n_cells = parts[0].n_cells
        self.stages = TABLEAUX.get(integrator)
        self.start_cfl, self.cfl_max = cfl, cfl_max
        #: The parts this process computes, their meshes and layouts.
        self.local = [part.mesh.part for part in parts]
        self.parts = parts
        self.layouts = [layout_of_part(part, faces) for part in parts]
        #: Every local part's exchange lists.
        self.halos = halo_lists(dict(zip(self.local, self.layouts, strict=True)), parts[0].send)
        self.transport = (transport or Loopback)(self.halos)
        scheme = scheme or Scheme()
        self.discretisations = [
            Discretisation(layout.geometry, gas, scheme,
                           {name: specs[name] for name in layout.geometry.markers}, "atomic",
                           self.backend, self.dtype, kernels=kernels)
            for layout in self.layouts]
        self.overlap = overlap
        #: Explicit steps in the fused kernels (None: array code).
        self.fused_steps = None
        self.sweeps = sweeps
        #: LU-SGS sweeps of each local part's own cells (None: explicit steps).
        self.lusgs = self._lusgs() if integrator == "lusgs" else None
        #: Whole LU-SGS steps of each local part in the fused kernels (None: array code).
        self.fused_implicit = None
        self.wall_markers = [name for name, spec in specs.items() if spec.condition.wall]
        self.states = [self._uniform(layout) for layout in self.layouts]
        #: Local time steps only: no physical time passes.
        self.time = 0.0
        #: Checkpointed with the state; vortex far fields are not supported across parts.
        self.circulation = 0.0
        self._start_loads()
        if all(d.fused is not None for d in self.discretisations):
            self.fuse()

    def _lusgs(self) -> list[LUSGS]:
        """LU-SGS sweeps of each local part's own cells (level kernels where the part's
        discretisation has fused kernels)."""
        return [LUSGS(d, layout.geometry,
                      levels=own_levels(layout.geometry, layout.n_own, self.sweeps == "colours"))
                for d, layout in zip(self.discretisations, self.layouts, strict=True)]

    def fuse(self) -> None:
        """Take steps in the fused kernels (on the numpy backend compiled for the CPU:
        how the tests check the GPU path without a GPU); each part's update kernel
        advances its own cells only."""
        fused = []
        for d, layout in zip(self.discretisations, self.layouts, strict=True):
            if d.fused is None:
                d.fused = FusedResidual(d, layout.geometry, "atomic")
            d.fused.n_active = layout.n_own
            fused.append(d.fused)
        if self.stages is not None:
            self.fused_steps = FusedPartsRungeKutta(fused, self.layouts, self.stages,
                                                    self.transport, self.overlap)
        else:
            if any(lusgs.kernels is None for lusgs in self.lusgs):
                self.lusgs = self._lusgs()
            self.fused_implicit = [FusedLUSGS(f, lusgs.kernels)
                                   for f, lusgs in zip(fused, self.lusgs, strict=True)]

    def _uniform(self, layout: PartLayout):
        w = np.repeat(self.gas.free_stream[:, None], len(layout.cells), axis=1)
        return self.backend.asarray(self.gas.to_conserved(w), self.dtype)

    def set_conserved(self, u: np.ndarray) -> None:
        """Set the state from conserved values of every cell in the file's cell order."""
        self._gathered = None
        self.states = [self.backend.asarray(np.asarray(u)[:, layout.file_cells],
                                            self.dtype) for layout in self.layouts]

    def primitive(self) -> np.ndarray:
        """Primitive state ``(rho, u, p)`` of every cell, in the file's cell order."""
        return self.gas.to_primitive(self.conserved().astype(np.float64))

    def step(self) -> np.ndarray:
        """One step of every part; the RMS of ``dU/dt`` per variable before it."""
        if self.lusgs is not None:
            return self._lusgs_step()
        if self.fused_steps is not None:
            return self._fused_step()
        self.transport.exchange(self.states)
        dt = PerPart(self.cfl * d.geometry.volume / d.spectral_radius(state)
                     for d, state in zip(self.discretisations, self.states, strict=True))

        def rate(states: PerPart) -> PerPart:
            self.transport.exchange(states)
            return PerPart(d.residual(state) / d.geometry.volume
                           for d, state in zip(self.discretisations, states, strict=True))

        rate, boundary = keeping_first(rate, lambda: [d.boundary_flux
                                                      for d in self.discretisations])
        self.states, first_rates = runge_kutta(self.stages, PerPart(self.states), rate, dt)
        return self._finish(self._own_squares(first_rates), boundary[0])

    def _fused_step(self) -> np.ndarray:
        """One explicit step of every part in the fused kernels; what the step reports
        (residual sums, first bad cell, wall momentum) comes from the device in one
        transfer and is summed over all parts in one global sum."""
        states = self.fused_steps(self.states, self.cfl)
        norms = self._finish_on_device([steps.bad_cell for steps in self.fused_steps.parts],
                                       [steps.squares for steps in self.fused_steps.parts],
                                       [d.boundary_flux for d in self.discretisations])
        self.states = states
        return norms

    def _lusgs_step(self) -> np.ndarray:
        """One LU-SGS step of every part (retried at smaller CFL numbers if a state goes
        bad anywhere), in the fused kernels or array code, then the CFL ramp."""
        self.transport.exchange(self.states)
        if self.fused_implicit is not None:
            results = self._backing_off(self._fused_lusgs_attempt)
            self.states = [u_new for u_new, *_ in results]
            # each part's norms are the RMS over its own cells
            squares = sum(norms ** 2 * layout.n_own
                          for (_, norms, _), layout in zip(results, self.layouts, strict=True))
            boundary = [d.boundary_flux for d in self.discretisations]
        else:
            parts = [(d.face_wave_speeds(u), d.residual(u), d.boundary_flux)
                     for d, u in zip(self.discretisations, self.states, strict=True)]
            self.states = self._backing_off(lambda: self._arrays_lusgs_attempt(parts))
            squares = self._own_squares([residual / d.geometry.volume for d, (_, residual, _)
                                         in zip(self.discretisations, parts, strict=True)])
            boundary = [flux for *_, flux in parts]
        norms = self._finish(squares, boundary)
        if self.cfl_max is not None:
            self.cfl = ramped_cfl(self.start_cfl, self.cfl, norms[0] / self.first_residual,
                                  self.cfl_max)
        return norms

    def _backing_off(self, attempt):
        """``attempt()`` (returning its result and, per local part, its first bad own cell
        or None) at the CFL number, retried at smaller ones while any part in any process
        went bad; raises :class:`SolverDivergedError` naming a cell if it stays bad. One
        global sum per attempt: the parts' bad-cell flags."""

        def tried(cfl: float):
            self.cfl = cfl  # what the attempts read
            result, bad_cells = attempt()
            flags = self.transport.sum(self._bad_flags(bad_cells))
            return (result, flags), bool(flags.any())

        (result, flags), self.cfl = backing_off(tried, self.cfl)
        self._raise_if_bad(flags)
        return result

    def _fused_lusgs_attempt(self) -> tuple[list, list]:
        """Each part's fused LU-SGS step (halos current): ``(u_new, norms, bad_cell)`` per
        part, and the bad cells."""
        results = [steps(u, self.cfl)
                   for steps, u in zip(self.fused_implicit, self.states, strict=True)]
        return results, [bad for *_, bad in results]

    def _arrays_lusgs_attempt(self, parts: list) -> tuple[list, list]:
        """Each part's LU-SGS step in array code from its ``parts`` entry (wave speeds,
        residual, boundary flux): the new states, and the first bad own cell of each."""
        news, bad_cells = [], []
        for d, lusgs, u, layout, (speeds, residual, _) in zip(
                self.discretisations, self.lusgs, self.states, self.layouts, parts,
                strict=True):
            dt = self.cfl * d.geometry.volume / d.spectral_radius(u, speeds)
            news.append(u + lusgs(u, residual, dt, speeds))
            bad = np.flatnonzero(self.backend.to_host(self.gas.invalid(news[-1][:, :layout.n_own])))
            bad_cells.append(int(bad[0]) if len(bad) else None)
        return news, bad_cells
