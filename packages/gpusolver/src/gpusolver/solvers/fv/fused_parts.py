"""Explicit Runge-Kutta steps of the mesh parts of one process in the fused kernels
(a whole mesh: one part without a halo).

Every stage of every part (:class:`~gpusolver.layout.parts.PartLayout`) runs the
single-mesh kernels of :class:`~gpusolver.solvers.fv.fused.FusedRungeKutta` in pieces,
so that the halo exchange of the stage overlaps with the work that needs no halo:

1. the transport starts the exchange of the stage's states (its own stream on the GPU);
2. meanwhile: the gradients of the part's deep cells and the fluxes of its deep faces;
3. once the halo is in: the gradients of the other own cells and of the first halo
   layer, the fluxes of the other own, interface and boundary faces;
4. the cell update of the own cells (the halo is refreshed by the next exchange).

Faces between two halo cells carry no flux an own cell needs and are skipped.

On the GPU, with a transport whose exchange a CUDA graph may record (``capturable``:
NCCL's), a whole step (every stage, exchanges included) is recorded as one graph on its
second use and replayed after, as the single-mesh steps are: no launch gaps between the
step's 40 or so kernels, and no host work in the step.
"""

from __future__ import annotations

from gpusolver.backends.cuda import NULL
from gpusolver.backends.graphs import alternate, graphs_for_exchanges
from gpusolver.layout.parts import PartLayout
from gpusolver.solvers.fv.fused import FROZEN, VENKATAKRISHNAN, FusedResidual, FusedRungeKutta


class FusedPartsRungeKutta:
    """Explicit Runge-Kutta steps (local or global time steps) of a process's parts.

    Parameters
    ----------
    fused : list of FusedResidual
        One per local part, on its layout's geometry (atomic accumulation).
    layouts : list of PartLayout
    stages : tuple of Stage
        The method (:data:`gpusolver.integrators.explicit.TABLEAUX`).
    transport
        Loopback, MpiHost or Nccl (:mod:`gpusolver.parallel`).
    overlap : bool
        Compute the deep cells and faces while the halo is in flight (False: after).
    """

    def __init__(self, fused: list[FusedResidual], layouts: list[PartLayout], stages,
                 transport, overlap: bool = True):
        self.parts = []
        for f, layout in zip(fused, layouts, strict=True):
            f.n_active = layout.n_own
            self.parts.append(FusedRungeKutta(f, stages, graphs=False))
        self.layouts, self.overlap = layouts, overlap
        self.n_stages = len(stages)
        self.use_transport(transport)

    def use_transport(self, transport) -> None:
        """Exchange through ``transport`` from now on (steps recorded with the previous
        one are forgotten first: :func:`graphs_for_exchanges`)."""
        self.graphs = graphs_for_exchanges(self.parts[0].fused.backend, transport)
        self.transport = transport

    def __call__(self, states: list, cfl: float, dt=None, limiters: list | None = None) -> list:
        """One step of every local part from ``states`` (not modified; their halos need
        not be current); returns the new states, one per part (each one of two buffers
        that steps alternate between).

        ``cfl``: the CFL number of local time steps; ``dt``: one global time step instead
        (a scalar); ``limiters``: per part, ``(array, mode)`` from
        :func:`~gpusolver.solvers.fv.fused.limiter_input` (default: computed into each
        part's buffer).

        Each part's sums of ``(dU/dt)^2`` per variable over its own cells (at ``states``)
        and its first own cell whose new state is non-finite or has non-positive density
        or pressure (:data:`~gpusolver.solvers.fv.fused.NO_BAD_CELL` if none) stay on the
        device, in ``parts[k].squares`` and ``parts[k].bad_cell``; the boundary fluxes
        of the first stage in its discretisation's ``boundary_flux``.
        """
        local = dt is None
        phis, modes, starts, u0s, outs = [], [], [], [], []
        for k, steps in enumerate(self.parts):
            phi, mode = limiters[k] if limiters else (None, VENKATAKRISHNAN)
            phis.append(steps.phi if phi is None else phi)
            modes.append(mode)
            steps.fused.update_far_field()
        with self.graphs.stream:
            for steps, u in zip(self.parts, states, strict=True):
                if u is not steps.states[0] and u is not steps.states[1]:
                    # a state from outside: the stage buffers' halos, which only exchanges
                    # write, start from it (a transport that exchanges nothing then reads
                    # the step's start there, not uninitialised memory)
                    for buffer in (*steps.states, steps.stage_state):
                        buffer[...] = u
                u0, out = alternate(steps.states, u)
                u0s.append(u0)
                outs.append(out)
                starts.append(u0 is steps.states[0])
                steps.cfl.fill(cfl)
                if not local:
                    steps.dt[:1] = dt
        modes = tuple(modes)
        key = (tuple(starts), self.overlap, local, tuple(map(id, phis)), modes)
        self.graphs.run(key, lambda: self._stages(u0s, outs, local, phis, modes))
        for steps, phi, mode in zip(self.parts, phis, modes, strict=True):
            steps.fused.d.boundary_flux = steps.boundary_flux
            if steps.fused.limited and mode != FROZEN:
                steps.fused.d.limiter_values = phi
        return outs

    def _stages(self, u0s: list, outs: list, local: bool, phis: list, modes: tuple) -> None:
        """Every stage's kernels and exchange, from ``u0s`` into ``outs`` (a part each).

        A part without a halo (a whole mesh) computes all its faces while the exchange
        runs, in its strategy's face pass."""
        for steps in self.parts:
            steps.begin()
        currents = list(u0s)
        whole = [layout.n_own == layout.geometry.n_cells for layout in self.layouts]
        for i in range(self.n_stages):
            def interior(i=i, currents=currents):
                for k, (steps, layout) in enumerate(zip(self.parts, self.layouts, strict=True)):
                    if whole[k]:
                        steps.fused.face_pass(currents[k], phis[k], modes[k],
                                              steps.boundary_flux if i == 0 else NULL,
                                              speed=i == 0 and local)
                        continue
                    steps.fused.clear()
                    steps.stage_faces(i, currents[k], local, phis[k], modes[k],
                                      (0, layout.n_deep), layout.face_ranges["deep"])

            if self.overlap:
                self.transport.exchange(currents, interior)
            else:
                self.transport.exchange(currents)
                interior()
            for k, (steps, layout) in enumerate(zip(self.parts, self.layouts, strict=True)):
                current, f = currents[k], steps.fused
                if not whole[k]:
                    steps.stage_faces(i, current, local, phis[k], modes[k],
                                      (layout.n_deep, layout.n_near),
                                      (layout.face_ranges["deep"][1],
                                       layout.face_ranges["interface"][1]))
                    steps.stage_faces(i, current, local, phis[k], modes[k], (0, 0),
                                      (f.n_interior, f.n_faces))
                currents[k] = steps.stage_update(i, u0s[k], current, outs[k], local)
