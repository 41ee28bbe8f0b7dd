"""Bounded exits on several MPI ranks: a rank that fails, dies or hangs stops them all.

Without it, the ranks left of a run wait forever in the next collective (an MPI sum, an
NCCL exchange) for a rank that raised an error, was killed (``kill -9``, the OOM killer)
or hangs (a GPU that does not answer), and on a cluster that burns the allocation.
Launchers often clean up after a rank that dies (mpich's does, unless told
``-disable-auto-cleanup``); :class:`RankWatch` does not rely on it. Each rank runs a
watch thread with its own duplicate of the communicator, so that its messages never
meet the solver's:

- **failure notices**: a rank whose run raises sends its one-line error to every other
  rank (:meth:`RankWatch.failed`). When every rank fails alike (a diverged state, a
  refused output folder) they agree within :data:`AGREE_SECONDS` and exit as one rank
  does; otherwise each rank still working prints one line naming the failed rank and
  exits with code 1;
- **heartbeats**: the ranks and rank 0 exchange a beat every :data:`BEAT_SECONDS`;
  rank 0 calls a rank that stays silent for ``timeout`` seconds gone and tells the
  others, and a rank that hears nothing of rank 0 for as long stops;
- **the same host**: a rank on this host whose process is gone is seen within
  :data:`POLL_SECONDS`;
- **its own loop**: :meth:`RankWatch.pulse` marks each finished interval of steps; a
  rank whose next interval takes ``timeout`` seconds plus twice the longest interval so
  far (the first one, which compiles kernels, ten times ``timeout``) stops and tells
  the others: a collective or the GPU does not answer.

A rank that ends its run normally tells the others (:meth:`RankWatch.close`), which stop
watching it. A rank that stops for a peer leaves by ``os._exit(1)`` (MPI cannot finalize
with a peer gone); files are replaced atomically, so the last checkpoint is whole.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable

from meshorder.atomic import process_running

#: Seconds of silence after which a rank is called gone (``[run] rank_timeout``'s default).
RANK_TIMEOUT = 60.0
#: Seconds between two polls of the watch thread.
POLL_SECONDS = 0.2
#: Seconds between two heartbeats.
BEAT_SECONDS = 1.0
#: Seconds the ranks take to find that every one of them failed alike.
AGREE_SECONDS = 5.0
#: The first interval of steps (kernels compile) may take this many ``timeout``.
FIRST_INTERVAL = 10.0

_BEAT, _FAILED, _DONE = 11, 12, 13  # message tags on the watch's own communicator


class RankWatch:
    """The watch of one rank (see the module docstring); every rank makes one, at the
    same point, and :meth:`close` or :meth:`failed` ends it.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks of the run (duplicated here: the watch's messages stay apart).
    timeout : float
        Seconds of silence after which a rank is called gone or stuck.
    say : callable
        Prints this rank's one-line message (default: standard error).
    stop : callable
        Ends this process with an exit code (default ``os._exit``).
    """

    def __init__(self, comm, timeout: float,
                 say: Callable[[str], None] | None = None,
                 stop: Callable[[int], None] | None = None):
        from mpi4py import MPI

        self._mpi = MPI
        self.comm = comm.Dup()
        self.comm.Set_errhandler(MPI.ERRORS_RETURN)  # a send to a rank gone raises
        self.rank, self.size, self.timeout = comm.rank, comm.size, float(timeout)
        self._say = say or _print_error
        self._stop = stop or _exit
        self.peers = self.comm.allgather((socket.gethostname(), os.getpid()))
        start = time.monotonic()
        self._heard = dict.fromkeys(range(self.size), start)
        #: Ranks still running (a rank that ended its run is no longer watched).
        self._running = set(range(self.size)) - {self.rank}
        self._sent = start - BEAT_SECONDS
        self._sends: list = []
        self._failing = threading.Event()
        self._closing = threading.Event()
        self._interval_start: float | None = None
        self._longest = 0.0
        self._thread = None
        if MPI.Query_thread() >= MPI.THREAD_MULTIPLE:  # else MPI would be called unsafely
            self._thread = threading.Thread(target=self._watch, name="rank-watch",
                                            daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ main thread
    def pulse(self, stepping: bool = True) -> None:
        """An interval of steps (or a checkpoint) has finished and, when ``stepping``,
        the next one starts; ``stepping=False``: the steps are over (the final outputs
        are not timed)."""
        now = time.monotonic()
        if self._interval_start is not None:
            self._longest = max(self._longest, now - self._interval_start)
        self._interval_start = now if stepping else None

    def failed(self, line: str) -> bool:
        """This rank's run failed with ``line`` (its one-line error): tell every other
        rank; True when every rank failed alike (they may then exit as one rank does),
        False when the others were still working (this rank must not wait for them)."""
        self._failing.set()
        self._end_thread()
        self._tell(_FAILED, line)
        return self._agree(AGREE_SECONDS)

    def close(self) -> None:
        """The run ended well on this rank: stop the thread and tell the others."""
        self._end_thread()
        self._tell(_DONE, None)
        self._flush_sends(1.0)

    # ------------------------------------------------------------------ watch thread
    def _watch(self) -> None:
        status = self._mpi.Status()
        while not self._closing.wait(POLL_SECONDS):
            now = time.monotonic()
            while self.comm.iprobe(source=self._mpi.ANY_SOURCE, tag=self._mpi.ANY_TAG,
                                   status=status):
                source, tag = status.Get_source(), status.Get_tag()
                message = self.comm.recv(source=source, tag=tag)
                self._heard[source] = now
                if tag == _DONE:
                    self._running.discard(source)
                elif tag == _FAILED:
                    self._peer_failed(source, message)
                    return
            if now - self._sent >= BEAT_SECONDS:
                self._tell(_BEAT, None, range(1, self.size) if self.rank == 0 else [0])
                self._sent = now
            reason = self._trouble(now)
            if reason is not None:
                self._give_up(reason)
                return

    def _trouble(self, now: float) -> str | None:
        """Why this rank must stop now (None: it need not)."""
        host = socket.gethostname()
        for q in sorted(self._running):
            peer_host, pid = self.peers[q]
            if peer_host == host and not process_running(pid):
                return f"rank {q} (pid {pid}) has died"
        for q in sorted(self._running & ({0} if self.rank else set(range(self.size)))):
            if now - self._heard[q] > self.timeout:
                peer_host, pid = self.peers[q]
                return (f"rank {q} (pid {pid} on {peer_host}) has not answered for "
                        f"{self.timeout:g} s")
        if self._interval_start is not None:
            limit = (FIRST_INTERVAL * self.timeout if self._longest == 0.0
                     else self.timeout + 2.0 * self._longest)
            if now - self._interval_start > limit:
                return (f"no step finished for {limit:.3g} s: a collective or the GPU does "
                        "not answer (set [run] rank_timeout to wait longer)")
        return None

    def _peer_failed(self, source: int, message: str) -> None:
        """Rank ``source`` failed: stop, unless this rank is failing alike."""
        if self._failing.wait(AGREE_SECONDS):
            return  # this rank's own error ends it
        self._say(f"rank {self.rank} of {self.size}: stopping: rank {source} failed: "
                  f"{message}")
        self._leave()

    def _give_up(self, reason: str) -> None:
        """Stop this rank for ``reason`` and tell the others why."""
        if self._failing.is_set():
            return
        self._tell(_FAILED, f"rank {self.rank} stopped: {reason}")
        self._say(f"rank {self.rank} of {self.size}: stopping: {reason}")
        self._leave()

    def _leave(self) -> None:
        self._flush_sends(1.0)  # the notices on their way, if they can be
        self._stop(1)

    # ------------------------------------------------------------------ messages
    def _tell(self, tag: int, message, ranks=None) -> None:
        """Send ``message`` to ``ranks`` (default: every running one), without waiting."""
        for q in self._running if ranks is None else ranks:
            if q in self._running:
                try:
                    self._sends.append(self.comm.isend(message, dest=q, tag=tag))
                except self._mpi.Exception:  # that rank is gone: the checks say so
                    self._running.discard(q)
        self._sends = [request for request in self._sends if not _done(request)]

    def _flush_sends(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self._sends and time.monotonic() < deadline:
            self._sends = [request for request in self._sends if not _done(request)]
            time.sleep(0.01)

    def _end_thread(self) -> None:
        self._closing.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _agree(self, seconds: float) -> bool:
        """A barrier of the watch's communicator, given up after ``seconds``."""
        request = self.comm.Ibarrier()
        deadline = time.monotonic() + seconds
        while not request.Test():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True


def _done(request) -> bool:
    """Whether a send has completed (or cannot: its rank is gone)."""
    from mpi4py import MPI

    try:
        return request.Test()
    except MPI.Exception:  # the receiver is gone
        return True


def _print_error(line: str) -> None:
    print(f"gpusolver: error: {line}", file=sys.stderr, flush=True)


def _exit(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
