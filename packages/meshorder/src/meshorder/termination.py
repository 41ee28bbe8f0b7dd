"""Interruptions. A request to terminate (SIGTERM: ``kill``, a batch scheduler's time
limit) is handled as Ctrl-C, so that a command stops without half-written files; a loop of
steps holds both back until its step in progress ends (:class:`StopRequests`), so that a
run stops at a step with its checkpoint and outputs."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

#: The signals that stop a command (Ctrl-C, a scheduler's SIGTERM).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: How often a process waiting for its child looks at the signals it was sent (seconds).
POLL_SECONDS = 0.1

T = TypeVar("T")


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises ``KeyboardInterrupt`` in the main thread.

    The previous handler comes back on leaving. Outside the main thread, where Python
    cannot set a handler, nothing changes.

    Examples
    --------
    >>> import os
    >>> try:
    ...     with terminate_as_interrupt():
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ...         signal.sigtimedwait([], 0.1)  # let the handler run
    ... except KeyboardInterrupt:
    ...     print("interrupted")
    interrupted
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class StopRequests:
    """Ctrl-C and SIGTERM held back until the work in progress can stop cleanly.

    Within ``with StopRequests() as stop:`` the first SIGINT or SIGTERM only sets
    ``stop.requested``, which a loop reads between its steps; a second one raises
    ``KeyboardInterrupt`` at once (the user insists). The previous handlers come back
    on leaving. Outside the main thread nothing is held back.

    Examples
    --------
    >>> import os
    >>> with StopRequests() as stop:
    ...     os.kill(os.getpid(), signal.SIGTERM)
    ...     _ = signal.sigtimedwait([], 0.1)  # let the handler run
    ...     print(stop.requested)
    True
    """

    SIGNALS = STOP_SIGNALS

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._request) for s in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _request(self, number, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


def interrupt_handled() -> None:
    """Tell CPython that the ``KeyboardInterrupt`` just caught was handled.

    CPython remembers an interrupt raised inside a string run by ``exec`` (SciPy's imports
    run one) as unhandled even when a caller catches it, and at the exit of ``python -m``
    kills the process with SIGINT instead of returning the command's exit code (130).
    Each ``exec`` of a string starts by forgetting that, so an empty one does. Call it
    where an interrupt is caught for good.

    Examples
    --------
    >>> try:
    ...     exec("raise KeyboardInterrupt")
    ... except KeyboardInterrupt:
    ...     interrupt_handled()
    """
    exec("pass")  # a constant string: only its start matters


def command_process(program: str, load: Callable[[], Callable[[], int]]) -> NoReturn:
    """Exit with the exit code of the command that ``load`` imports and returns (a
    ``python -m`` entry point). A stop request (Ctrl-C, SIGTERM) while the command's
    modules load (a second or more on a busy machine) ends it as one during its work
    does: one line naming ``program``, exit code 130."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        command = load()
    except KeyboardInterrupt:
        interrupt_handled()
        print(f"{program}: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(command())


def reader_left() -> None:
    """The reader of standard output left (``command | head``): what is still to be printed
    goes to the null device, so that the exit prints no error of a broken pipe."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def in_child_process(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)`` run in a child process that Ctrl-C or SIGTERM (as
    ``KeyboardInterrupt`` here) stops at once: for a long call into a library that holds
    signals back until it returns (gmsh's mesher). Returns its result or raises its
    exception (both pickled); the child ignores SIGINT, so that Ctrl-C in a terminal,
    which reaches both processes, is answered here alone.

    Examples
    --------
    >>> in_child_process(divmod, 7, 2)
    (3, 1)
    """
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_call_and_send, args=(send, function, args, kwargs),
                            daemon=True)
    # a signal while the child starts would leave it running unknown to the handler
    # below (and holding this process's output open): they wait until it is known, and
    # one that came meanwhile is raised inside the block that stops the child
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        child.start()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    send.close()
    try:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            # wait in short polls: the kernel may hand a signal to another thread of this
            # process (a progress bar's), which does not end a blocking wait here; its
            # handler runs between the polls
            while not receive.poll(POLL_SECONDS):
                pass
            failed, value = receive.recv()
        except EOFError:  # it died without an answer (killed, out of memory)
            child.join()
            raise RuntimeError(f"{getattr(function, '__name__', function)} ended without an "
                               f"answer (exit code {child.exitcode})") from None
        child.join()
    except BaseException:  # Ctrl-C or SIGTERM: the child stops now, not when it returns
        child.kill()
        child.join()
        raise
    finally:
        receive.close()
    if failed:
        raise value
    return value


def _call_and_send(send, function: Callable, args: tuple, kwargs: dict) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # held while it started
    try:
        answer = (False, function(*args, **kwargs))
    except Exception as error:  # handed to the parent, which raises it
        answer = (True, error)
    send.send(answer)
    send.close()
