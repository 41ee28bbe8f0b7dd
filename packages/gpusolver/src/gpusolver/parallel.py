"""Halo exchange between mesh parts, and the one place global sums happen.

A transport moves the states of halo cells from the parts that own them
(:func:`halo_lists` says which local positions go where), and sums arrays (and takes
their minima) over all parts. A state is any array whose last axis runs over the part's
cells (the finite volumes' ``(n_vars, n_cells)``, DG's ``(n_vars, n_modes,
n_elements)``). The transports of several ranks pack and unpack through one path
(:class:`Packing`: ``state[..., positions]`` into contiguous buffers, on the device where
the state is):

- :class:`Loopback`: every part in this process (tests, and the reference answer);
- :class:`MpiHost`: one part per MPI rank (mpi4py): packed on the GPU, staged through
  pinned host buffers, persistent non-blocking point-to-point requests;
- :class:`Nccl`: one part per rank and GPU: CuPy's NCCL point-to-point on a
  communication stream (the NCCL id broadcast by MPI); no host staging.

``exchange(states, meanwhile)`` overlaps: it starts the exchange, calls ``meanwhile()``
(which queues the work that needs no halo: a part's interior), then finishes it. On
the GPU the exchange runs on its own stream, ordered after the work already queued
and before the work queued after it returns. A transport is ``capturable`` when a CUDA
graph may record its exchange (no host waits, no temporary arrays): NCCL's is, so the
fused solvers record whole steps with their exchanges.
"""

from __future__ import annotations

import atexit
import copy
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpusolver.backends import array_module

#: The MPI tag of halo messages.
HALO_TAG = 7

#: A CUDA stream priority above every device's range (lower numbers come first).
HIGHEST_PRIORITY = -1000


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


def halo_lists(layouts: dict, send: dict[tuple[int, int], np.ndarray]) -> dict[int, Halo]:
    """The :class:`Halo` of each part of ``layouts`` (part -> its layout,
    :mod:`gpusolver.layout.parts`), from the plan's halo lists ``send`` (``(p, q)``: the
    global numbers of the cells of ``p`` in the halo of ``q``, in the order sent).

    Raises
    ------
    ValueError
        If a layout's halo cells are not those the plan's lists send it.
    """
    halos = {}
    for p, layout in layouts.items():
        receive = {q: layout.local_of(cells) for (q, r), cells in send.items() if r == p}
        received = np.sort(np.concatenate([np.zeros(0, np.int64), *receive.values()]))
        if not np.array_equal(received, np.arange(layout.n_own, len(layout.cells))):
            raise ValueError(f"part {p}: its halo is not the plan's (a plan of another "
                             "meshorder version?)")
        halos[p] = Halo(receive, {q: layout.local_of(cells)
                                  for (r, q), cells in send.items() if r == p})
    return halos


def coarse_halo(halo: Halo, own_coarse: np.ndarray, halo_coarse: np.ndarray,
                n_cells: int) -> tuple[np.ndarray, Halo]:
    """A coarse level of a mesh part whose own cells were agglomerated apart from every
    other part's: the coarse cell of each of its ``n_cells`` cells and the level's
    :class:`Halo`.

    ``own_coarse`` numbers the coarse cell of each own cell (the part's first cells);
    ``halo_coarse[k]`` is the owner's number of the coarse cell of halo cell
    ``n_own + k`` (exchanged). The halo's coarse cells are the owners' coarse cells that
    hold a halo cell, numbered after the part's own, neighbour by neighbour and by the
    owner's number; each side lists them in that order, so the owner sends the coarse
    cells of the cells it sends, in its numbers' order.

    Examples
    --------
    A part of three own cells (two coarse cells) holds two cells of part 0 in its halo,
    which lie in part 0's coarse cells 2 and 4; part 0 needs its cells 0 and 1:

    >>> halo = Halo({0: np.array([4, 3])}, {0: np.array([0, 1])})
    >>> cells, coarse = coarse_halo(halo, np.array([0, 0, 1]), np.array([2.0, 4.0]), 5)
    >>> cells.tolist(), coarse.receive[0].tolist(), coarse.send[0].tolist()
    ([0, 0, 1, 2, 3], [2, 3], [0])
    """
    n_own = len(own_coarse)
    owners = np.asarray(halo_coarse).astype(np.int64)
    cells = np.empty(n_cells, dtype=np.int64)
    cells[:n_own] = own_coarse
    first = int(own_coarse.max()) + 1 if n_own else 0
    receive = {}
    for q in sorted(halo.receive):
        positions = halo.receive[q]
        theirs = owners[positions - n_own]
        unique = np.unique(theirs)
        cells[positions] = first + np.searchsorted(unique, theirs)
        receive[q] = first + np.arange(len(unique))
        first += len(unique)
    send = {q: np.unique(own_coarse[positions]) for q, positions in halo.send.items()}
    return cells, Halo(receive, send)


class Packing:
    """One part's send and receive buffers, on the device of its state.

    Parameters
    ----------
    halo : Halo
    like : array
        A state (cells on its last axis): the array module, dtype and leading shape of
        the buffers.
    pinned : bool
        Also keep page-locked host copies of the buffers (staging GPU states for MPI).
    """

    def __init__(self, halo: Halo, like, pinned: bool = False):
        xp = self.xp = array_module(like)
        rows, dtype = like.shape[:-1], like.dtype
        self.dtype = dtype
        self.send_positions = {q: xp.asarray(p) for q, p in halo.send.items()}
        self.receive_positions = {q: xp.asarray(p) for q, p in halo.receive.items()}
        self.send = {q: xp.empty((*rows, len(p)), dtype) for q, p in halo.send.items()}
        self.receive = {q: xp.empty((*rows, len(p)), dtype) for q, p in halo.receive.items()}
        self.host_send, self.host_receive = self.send, self.receive
        if pinned and xp is not np:
            import cupyx

            self.host_send = {q: cupyx.empty_pinned(b.shape, dtype) for q, b in self.send.items()}
            self.host_receive = {q: cupyx.empty_pinned(b.shape, dtype)
                                 for q, b in self.receive.items()}

    def pack(self, state) -> None:
        """Gather the cells every neighbour needs into its send buffer."""
        for q, positions in self.send_positions.items():
            if self.xp is np:
                np.take(state, positions, axis=-1, out=self.send[q])
            else:
                _gather(self.xp)(state, positions, state.shape[-1], len(positions),
                                 self.send[q])

    def unpack(self, state) -> None:
        """Scatter every neighbour's cells from its receive buffer into the halo."""
        for q, positions in self.receive_positions.items():
            if self.xp is np:
                state[..., positions] = self.receive[q]
            else:
                _scatter(self.xp)(self.receive[q], positions, state.shape[-1],
                                  len(positions), state)


@functools.cache
def _gather(cupy):
    """``out[..., k] = state[..., positions[k]]`` on the GPU (C-ordered ``state``), with
    no temporary array: a CUDA graph may record it."""
    return cupy.ElementwiseKernel(
        "raw T state, raw I positions, int64 n_cells, int64 n", "T out",
        "out = state[(i / n) * n_cells + positions[i % n]]", "halo_gather")


@functools.cache
def _scatter(cupy):
    """``state[..., positions[k]] = buffer[..., k]`` on the GPU (C-ordered ``state``), with
    no temporary array."""
    return cupy.ElementwiseKernel(
        "T buffer, raw I positions, int64 n_cells, int64 n", "raw T state",
        "state[(i / n) * n_cells + positions[i % n]] = buffer", "halo_scatter")


class _Streams:
    """A communication stream ordered against the compute stream (GPU); nothing on the CPU.

    The stream has the device's highest priority (CUDA clamps :data:`HIGHEST_PRIORITY`
    into the device's range), so that its short pack and unpack kernels take SMs as soon
    as blocks of the interior's long kernels retire.
    """

    def __init__(self, xp):
        self.xp = xp
        self.stream = (xp.cuda.Stream(non_blocking=True, priority=HIGHEST_PRIORITY)
                       if xp is not np else None)

    def __enter__(self):
        """Run what follows on the communication stream, after the work queued so far."""
        if self.stream is not None:
            self.stream.wait_event(self.xp.cuda.get_current_stream().record())
            self.stream.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)

    def join(self) -> None:
        """Make the compute stream wait for the communication stream's work."""
        if self.stream is not None:
            self.xp.cuda.get_current_stream().wait_event(self.stream.record())

    def synchronize(self) -> None:
        """Wait on the host for the communication stream's work."""
        if self.stream is not None:
            self.stream.synchronize()


def _call(meanwhile: Callable[[], None] | None) -> None:
    if meanwhile is not None:
        meanwhile()


class Loopback:
    """Every part in this process: the halo copied straight from the owner's state."""

    #: The one process writes the outputs.
    is_root = True

    def __init__(self, halos: dict[int, Halo]):
        if sorted(halos) != list(range(len(halos))):
            raise ValueError(f"loopback holds every part, not parts {sorted(halos)}")
        self.halos = halos
        self.n_parts = len(halos)
        #: Its copies make temporary arrays, so a CUDA graph may not record an exchange;
        #: one that copies nothing (a whole mesh: one part, no halo) records nothing.
        self.capturable = not any(halo.receive for halo in halos.values())

    def exchange(self, states: list, meanwhile: Callable[[], None] | None = None) -> None:
        """Fill every part's halo cells from their owners (after ``meanwhile()``)."""
        _call(meanwhile)
        for p, halo in self.halos.items():
            for q, positions in halo.receive.items():
                states[p][..., positions] = states[q][..., self.halos[q].send[p]]

    def sibling(self, halos: dict[int, Halo]) -> Loopback:
        """A transport of the same parts for other halo lists (a coarse level's)."""
        return Loopback(halos)

    def sum(self, array: np.ndarray) -> np.ndarray:
        """The sum over all parts: here, the array itself."""
        return array

    def minimum(self, array: np.ndarray) -> np.ndarray:
        """The minimum over all parts: here, the array itself."""
        return array

    def gather(self, item) -> list:
        """Every process's ``item``, in rank order: here, the one."""
        return [item]

    def gather_cells(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        """``values`` ``(..., m)`` of the file cells ``cells`` ``(m,)`` of every process, in
        the file's cell order ``(..., n_cells)``, on the root: here, this process's."""
        out = np.zeros((*values.shape[:-1], n_cells), values.dtype)
        out[..., cells] = values
        return out

    def everyone(self, item) -> list:
        """Every process's ``item``, in rank order, in every process: here, the one."""
        return [item]


def mpi_world():
    """``MPI.COMM_WORLD`` when this process runs under ``mpiexec`` with several ranks, else
    None (mpi4py is imported only then)."""
    if int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))) <= 1:
        return None
    from mpi4py import MPI

    return MPI.COMM_WORLD


def use_local_gpu(comm) -> int:
    """Make this rank's GPU (its rank among the ranks of its host, modulo the host's GPUs)
    the current CuPy device; returns its number."""
    import cupy
    from mpi4py import MPI

    local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED).rank
    device = local_rank % cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(device).use()
    return device


class _Ranks:
    """What the transports of one part per MPI rank share: the part, root, sums."""

    def __init__(self, comm, halos: dict[int, Halo]):
        if list(halos) != [comm.rank]:
            raise ValueError(f"rank {comm.rank} holds part {comm.rank}, not {list(halos)}")
        self.comm, self.halo = comm, halos[comm.rank]
        self.n_parts = comm.size
        #: Rank 0 writes the outputs.
        self.is_root = comm.rank == 0
        #: Per kind of array exchanged (dtype and leading shape: a state, a turbulence
        #: model's scalars): its buffers, streams and persistent requests.
        self._buffer_sets: dict[tuple, tuple[Packing, _Streams, list]] = {}

    def sibling(self, halos: dict[int, Halo]):
        """A transport of the same kind over the same ranks (and communicator) for other
        halo lists (a coarse level's); its exchanges must not overlap this one's."""
        twin = copy.copy(self)
        twin.halo = halos[self.comm.rank]
        twin._buffer_sets = {}
        return twin

    def everyone(self, item) -> list:
        """Every rank's ``item``, in rank order, on every rank."""
        return self.comm.allgather(item)

    def gather(self, item) -> list | None:
        """Every rank's ``item`` (pickled), in rank order, on the root; None elsewhere."""
        return self.comm.gather(item, root=0)

    def gather_cells(self, cells: np.ndarray, values: np.ndarray,
                     n_cells: int) -> np.ndarray | None:
        """Every rank's ``values`` ``(..., m)`` of its file cells ``cells`` ``(m,)``, in the
        file's cell order ``(..., n_cells)`` on the root (None elsewhere): one ``Gatherv``
        of the cells and one per leading row of values, so that only the root holds the
        whole field and no message counts more than ``n_cells`` items."""
        counts = self.comm.gather(len(cells), root=0)
        root = self.is_root
        every_cell = np.empty(sum(counts), np.int64) if root else None
        self.comm.Gatherv(np.ascontiguousarray(cells, dtype=np.int64),
                          [every_cell, counts] if root else None, root=0)
        rows = values.reshape(int(np.prod(values.shape[:-1])), len(cells))
        out = np.zeros((len(rows), n_cells), values.dtype) if root else None
        column = np.empty(sum(counts), values.dtype) if root else None
        for i, row in enumerate(rows):
            self.comm.Gatherv(np.ascontiguousarray(row), [column, counts] if root else None,
                              root=0)
            if root:
                out[i, every_cell] = column
        return out.reshape(*values.shape[:-1], n_cells) if root else None

    def sum(self, array: np.ndarray) -> np.ndarray:
        """The element-wise sum of ``array`` (on the host) over all ranks."""
        out = np.empty_like(array)
        self.comm.Allreduce(np.ascontiguousarray(array), out)
        return out

    def minimum(self, array: np.ndarray) -> np.ndarray:
        """The element-wise minimum of ``array`` (on the host) over all ranks."""
        from mpi4py import MPI

        out = np.empty_like(array)
        self.comm.Allreduce(np.ascontiguousarray(array), out, op=MPI.MIN)
        return out

    def _buffers(self, state, pinned: bool) -> tuple[Packing, _Streams, list]:
        """The buffers, streams and persistent requests of arrays like ``state``."""
        key = (state.dtype, state.shape[:-1])
        if key not in self._buffer_sets:
            packing = Packing(self.halo, state, pinned)
            self._buffer_sets[key] = (packing, _Streams(packing.xp), self._requests(packing))
        return self._buffer_sets[key]

    def _requests(self, packing: Packing) -> list:
        """What depends on a new set of buffers (persistent requests)."""
        return []


class MpiHost(_Ranks):
    """One part per MPI rank: packed on the device, host buffers (pinned for GPU states),
    persistent non-blocking sends and receives."""

    #: The host waits for the packed buffers: a CUDA graph may not record an exchange.
    capturable = False

    def _requests(self, packing: Packing) -> list:
        receives = [self.comm.Recv_init(buffer, source=q, tag=HALO_TAG)
                    for q, buffer in packing.host_receive.items()]
        sends = [self.comm.Send_init(buffer, dest=q, tag=HALO_TAG)
                 for q, buffer in packing.host_send.items()]
        if not self._buffer_sets:  # before mpi4py finalizes MPI (exit handlers run LIFO)
            atexit.register(self.close)
        return receives + sends

    def close(self) -> None:
        """Free the persistent requests."""
        for _, _, requests in self._buffer_sets.values():
            for request in requests:
                request.Free()
            requests.clear()

    def exchange(self, states: list, meanwhile: Callable[[], None] | None = None) -> None:
        """Fill this rank's halo cells from their owners' ranks, ``meanwhile()`` queued
        while the messages are in flight."""
        from mpi4py import MPI

        (state,) = states
        packing, streams, requests = self._buffers(state, pinned=True)
        gpu = packing.xp is not np
        with streams:
            packing.pack(state)
            if gpu:
                for q, buffer in packing.send.items():
                    buffer.get(out=packing.host_send[q], blocking=False)
        if not gpu:
            MPI.Prequest.Startall(requests)
        _call(meanwhile)
        if gpu:
            streams.synchronize()  # the packed buffers are on the host
            MPI.Prequest.Startall(requests)
        MPI.Request.Waitall(requests)
        with streams:
            if gpu:
                for q, buffer in packing.receive.items():
                    buffer.set(packing.host_receive[q])
            packing.unpack(state)
        streams.join()


class Nccl(_Ranks):
    """One part per rank and GPU: NCCL sends and receives between device buffers on a
    communication stream, with no host staging (the unique id broadcast by MPI)."""

    #: Every operation of an exchange is queued on streams with no host wait (and into
    #: preallocated buffers): a CUDA graph may record it, NCCL's calls included.
    capturable = True

    def __init__(self, comm, halos: dict[int, Halo]):
        super().__init__(comm, halos)
        from cupy.cuda import nccl

        self._nccl = nccl
        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None, root=0)
        self._communicator = nccl.NcclCommunicator(comm.size, uid, comm.rank)

    def exchange(self, states: list, meanwhile: Callable[[], None] | None = None) -> None:
        """Fill this rank's halo cells from their owners' GPUs; ``meanwhile()`` is queued
        on the compute stream while the exchange runs on its own."""
        (state,) = states
        packing, streams, _ = self._buffers(state, pinned=False)
        if packing.xp is np:
            raise ValueError("the nccl transport exchanges GPU states only; use mpi-host")
        nccl, comm = self._nccl, self._communicator
        kind = {4: nccl.NCCL_FLOAT32, 8: nccl.NCCL_FLOAT64}[state.dtype.itemsize]
        with streams:
            packing.pack(state)
            stream = streams.stream.ptr
            nccl.groupStart()
            for q, buffer in packing.receive.items():
                comm.recv(buffer.data.ptr, buffer.size, kind, q, stream)
            for q, buffer in packing.send.items():
                comm.send(buffer.data.ptr, buffer.size, kind, q, stream)
            nccl.groupEnd()
            packing.unpack(state)
        _call(meanwhile)
        streams.join()


#: The transports of several ranks by name (the case file's ``[run] transport``): a new
#: one is a class like :class:`MpiHost` and one line here.
TRANSPORTS: dict[str, type[_Ranks]] = {"mpi-host": MpiHost, "nccl": Nccl}


def make_transport(name: str, comm) -> Callable[[dict[int, Halo]], _Ranks]:
    """The factory (halos -> transport) of the transport ``name`` over ``comm``."""
    return lambda halos: TRANSPORTS[name](comm, halos)
