"""Explicit Runge-Kutta steps of the DG parts of one process in the kernels.

Every stage of every part runs the kernels of
:class:`~gpusolver.solvers.dg.fused.FusedDGSteps` with its right-hand side in two pieces
(:meth:`~gpusolver.solvers.dg.fused.FusedDG.split_at_halo`), so that the stage's halo
exchange overlaps with the work that reads no halo state:

1. the transport starts the exchange of the stage's states (its own stream on the GPU);
2. meanwhile: each part's volume terms and face fluxes that read no halo state;
3. once the halo is in: the rest of each part's right-hand side, then the stage's update
   (the halo's rows of the rate are zero: the next exchange refreshes the halo).

On the GPU, with a transport whose exchange a CUDA graph may record (``capturable``:
NCCL's) and no boundary in array code, a whole step, exchanges included, is recorded as
one graph on its second use and replayed after, as the single-mesh steps are.
"""

from __future__ import annotations

from gpusolver.backends.graphs import graphs_for_exchanges
from gpusolver.solvers.dg.fused import FusedDG, FusedDGSteps


class FusedDGPartsSteps:
    """Explicit Runge-Kutta steps of a process's DG parts in the kernels.

    Parameters
    ----------
    fused : list of FusedDG
        One per local part, split at its halo.
    stages : tuple of Stage
        The method (:data:`gpusolver.integrators.explicit.TABLEAUX`).
    transport
        Loopback, MpiHost or Nccl (:mod:`gpusolver.parallel`).
    """

    def __init__(self, fused: list[FusedDG], stages, transport):
        self.parts = [FusedDGSteps(f, stages, graphs=False) for f in fused]
        self.n_stages = len(stages)
        self.use_transport(transport)

    def use_transport(self, transport) -> None:
        """Exchange through ``transport`` from now on (steps recorded with the previous
        one are forgotten first: :func:`graphs_for_exchanges`; none are recorded where a
        boundary's ghost states are array code)."""
        fused = [steps.fused for steps in self.parts]
        self.graphs = graphs_for_exchanges(fused[0].backend, transport,
                                           not any(f.array_markers for f in fused))
        self.transport = transport

    def __call__(self, states: list, dt, overlap: bool = True) -> list:
        """One step of every local part from ``states`` (not modified; their halos need
        not be current) with time step ``dt`` (a float, or None: each element's local
        step); with ``overlap``, the work that reads no halo state runs while the halo is
        in flight. Returns the new states, one per part (each one of two buffers that
        steps alternate between); each part's rate and boundary fluxes of the first
        stage stay in its ``first_rate`` and ``wall_flux``."""
        stream = self.graphs.stream
        for steps in self.parts:  # each part's buffers are written on its own stream
            _after(steps.graphs.stream, stream)
        starts = [steps.begin(u, dt) for steps, u in zip(self.parts, states, strict=True)]
        for steps in self.parts:
            _after(stream, steps.graphs.stream)
        key = (tuple(u0 is steps.states[0] for (u0, _), steps in zip(starts, self.parts,
                                                                     strict=True)),
               dt is None, overlap)
        self.graphs.run(key, lambda: self._stages(starts, dt is None, overlap))
        return [out for _, out in starts]

    def _stages(self, starts: list, local: bool, overlap: bool) -> None:
        """Every stage's kernels and exchange, from and into ``starts`` (a part each)."""
        if local:  # (each element's step reads its own state alone)
            for steps, (u0, _) in zip(self.parts, starts, strict=True):
                steps.fused.local_time_steps_into(u0, steps.dt)
        currents = [u0 for u0, _ in starts]
        for i in range(self.n_stages):
            work = [(steps.fused, current, *steps.stage_buffers(i))
                    for steps, current in zip(self.parts, currents, strict=True)]

            def interior(work=work) -> None:
                for fused, u, rate, flux in work:
                    fused.rate_before(u, rate, flux)

            if overlap:
                self.transport.exchange(currents, interior)
            else:
                self.transport.exchange(currents)
                interior()
            for fused, u, rate, flux in work:
                fused.rate_after(u, rate, flux)
            currents = [steps.update(i, u0, current, out) for steps, (u0, out), current
                        in zip(self.parts, starts, currents, strict=True)]


def _after(stream, earlier) -> None:
    """Make ``stream`` wait for the work queued so far on ``earlier`` (GPU streams; on
    the CPU, whose streams are null contexts, nothing)."""
    if hasattr(stream, "wait_event") and stream is not earlier:
        stream.wait_event(earlier.record())
