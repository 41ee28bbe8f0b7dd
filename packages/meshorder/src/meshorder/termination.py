"""A request to terminate (SIGTERM: ``kill``, a batch scheduler's time limit) handled as
Ctrl-C, so a command stops the way it does on Ctrl-C: a run after the step in progress
with its checkpoint and outputs, any command without half-written files."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
