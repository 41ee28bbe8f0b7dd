"""Halo exchange between mesh parts, and the one place global sums happen.

A transport moves the states of halo cells from the parts that own them
(:func:`halo_lists` says which local positions go where) and sums arrays over all
parts. Both share one pack/unpack path (``state[:, positions]``):

- :class:`Loopback`: every part in this process (tests, and the reference answer);
- :class:`MpiHost`: one part per MPI rank (mpi4py), non-blocking point-to-point
  messages of host buffers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Halo:
    """One part's exchange lists, by neighbouring part.

    Attributes
    ----------
    receive : dict of int to numpy.ndarray
        Neighbour -> local positions of the halo cells it owns, in the order it sends.
    send : dict of int to numpy.ndarray
        Neighbour -> local positions of this part's own cells that it needs.
    """

    receive: dict[int, np.ndarray]
    send: dict[int, np.ndarray]


def halo_lists(layouts, offsets: np.ndarray) -> list[Halo]:
    """The :class:`Halo` of every part, from the parts' layouts (:mod:`gpusolver.layout.parts`)
    and the plan's part offsets (own cells of part ``p``: global ``[offsets[p], offsets[p+1])``,
    local ``0..``)."""
    owner_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    receive: list[dict] = [{} for _ in layouts]
    send: list[dict] = [{} for _ in layouts]
    for p, layout in enumerate(layouts):
        halo = layout.cells[layout.n_own:]
        owners = owner_of[halo]
        for q in np.unique(owners):
            members = np.flatnonzero(owners == q)  # increasing global number: the order
            receive[p][int(q)] = layout.n_own + members
            send[int(q)][p] = halo[members] - offsets[q]
    return [Halo(r, s) for r, s in zip(receive, send, strict=True)]


class Loopback:
    """Every part in this process: the halo copied straight from the owner's state."""

    #: The one process writes the outputs.
    is_root = True

    def __init__(self, halos: list[Halo]):
        self.halos = halos
        self.n_parts = len(halos)

    def local_parts(self, n_parts: int) -> list[int]:
        """The parts this process computes: all of them."""
        return list(range(n_parts))

    def exchange(self, states: list) -> None:
        """Fill every part's halo cells from their owners."""
        for p, halo in enumerate(self.halos):
            for q, positions in halo.receive.items():
                states[p][:, positions] = states[q][:, self.halos[q].send[p]]

    def sum(self, array: np.ndarray) -> np.ndarray:
        """The sum over all parts: here, the array itself."""
        return array


def mpi_world():
    """``MPI.COMM_WORLD`` when this process runs under ``mpiexec`` with several ranks, else
    None (mpi4py is imported only then)."""
    if int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))) <= 1:
        return None
    from mpi4py import MPI

    return MPI.COMM_WORLD


class MpiHost:
    """One part per MPI rank: packed host buffers, non-blocking sends and receives."""

    def __init__(self, comm, halos: list[Halo]):
        if comm.size != len(halos):
            raise ValueError(f"{comm.size} ranks for {len(halos)} parts")
        self.comm, self.halo = comm, halos[comm.rank]
        self.n_parts = comm.size
        #: Rank 0 writes the outputs.
        self.is_root = comm.rank == 0

    def local_parts(self, n_parts: int) -> list[int]:
        """This rank's part."""
        return [self.comm.rank]

    def exchange(self, states: list) -> None:
        """Fill this rank's halo cells from their owners' ranks."""
        from mpi4py import MPI

        (state,) = states
        host = np.asarray(state)  # the numpy backend; a device state would be staged here
        received = {q: np.empty((host.shape[0], len(positions)), dtype=host.dtype)
                    for q, positions in self.halo.receive.items()}
        requests = [self.comm.Irecv(buffer, source=q, tag=7) for q, buffer in received.items()]
        packed = {q: np.ascontiguousarray(host[:, positions])
                  for q, positions in self.halo.send.items()}
        requests += [self.comm.Isend(buffer, dest=q, tag=7) for q, buffer in packed.items()]
        MPI.Request.Waitall(requests)
        for q, buffer in received.items():
            state[:, self.halo.receive[q]] = buffer

    def sum(self, array: np.ndarray) -> np.ndarray:
        """The element-wise sum of ``array`` over all ranks."""
        out = np.empty_like(array)
        self.comm.Allreduce(np.ascontiguousarray(array), out)
        return out
