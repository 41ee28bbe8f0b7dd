"""Solver steps recorded once as CUDA graphs and replayed, against launch overhead."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable


def alternate(states: tuple, u) -> tuple:
    """The start and the output buffer of a step from ``u`` that alternates between the
    two buffers ``states``: ``u`` itself if it is one of them (else copied into the
    first), and the other one. Graphs record buffers, so steps keep to these two.

    Examples
    --------
    >>> import numpy as np
    >>> states = (np.zeros(2), np.zeros(2))
    >>> start, out = alternate(states, np.ones(2))
    >>> start is states[0], out is states[1], start.tolist()
    (True, True, [1.0, 1.0])
    >>> alternate(states, states[1])[1] is states[0]
    True
    """
    if not any(u is s for s in states):
        states[0][...] = u
        u = states[0]
    return u, states[1] if u is states[0] else states[0]


class StepGraphs:
    """Run a step's kernel launches directly the first time a step of its kind is
    seen, record them as a CUDA graph the second time, and replay the graph after.

    A kind (``key``) must name everything the launches bake in: buffers and scalar
    arguments; values that change between steps of one kind live in device arrays.

    Parameters
    ----------
    backend : Backend
        Graphs on the cupy backend; the numpy one (host-compiled kernels) launches
        directly.
    enabled : bool
        False launches directly on the GPU too.
    """

    def __init__(self, backend, enabled: bool = True):
        on_gpu = backend.name == "cupy"
        self.enabled = enabled and on_gpu
        #: The stream that steps run on (blocking: the default stream waits for it).
        self.stream = (backend.xp.cuda.Stream(non_blocking=False) if on_gpu
                       else contextlib.nullcontext())
        self._seen: set = set()
        self._recorded: dict = {}

    def run(self, key: Hashable, launches: Callable[[], None]) -> None:
        """Launch ``launches()``'s kernels on :attr:`stream`, through a graph of ``key``."""
        with self.stream:
            if not self.enabled or key not in self._seen:
                self._seen.add(key)
                launches()
                return
            if key not in self._recorded:
                self.stream.begin_capture()
                launches()
                self._recorded[key] = self.stream.end_capture()
            self._recorded[key].launch(self.stream)


def graphs_for_exchanges(backend, transport, recordable: bool = True) -> StepGraphs:
    """New :class:`StepGraphs` for steps that exchange halos through ``transport``: they
    record when the transport is ``capturable`` (:mod:`gpusolver.parallel`: NCCL's) and
    the steps themselves are (``recordable``).

    An owner keeps them in an attribute set *before* its transport, and replaces them
    before replacing the transport: destroying a NCCL communicator waits until every
    graph that recorded its operations is destroyed.
    """
    return StepGraphs(backend, recordable and getattr(transport, "capturable", False))
