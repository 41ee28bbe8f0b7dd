"""Progress for long jobs: a bar over named steps, kept ticking while a step runs.

Nothing is drawn for work that finishes within a second.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

REFRESH_SECONDS = 0.5


@contextmanager
def _ticking(bar: tqdm) -> Iterator[None]:
    """Redraw ``bar`` in the background so its clock moves during one long call."""
    done = threading.Event()

    def tick() -> None:
        while not done.wait(REFRESH_SECONDS):
            if time.time() - bar.start_t >= bar.delay:
                bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


class Steps:
    """A tqdm bar over pipeline steps that also records each step's wall time.

    Parameters
    ----------
    total : int
        Number of steps expected.
    show : bool
        Draw the bar on stderr (after one second) when true; otherwise only time.
    """

    def __init__(self, total: int, show: bool = False):
        self.timings: dict[str, float] = {}
        self._bar = tqdm(total=total, delay=1.0, disable=not show, unit="step",
                         file=sys.stderr, leave=False)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the enclosed block under ``name`` and advance the bar."""
        self._bar.set_description(name, refresh=False)
        start = time.perf_counter()
        with _ticking(self._bar) if not self._bar.disable else _nothing():
            yield
        self.timings[name] = round(time.perf_counter() - start, 4)
        self._bar.update()

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextmanager
def activity(label: str, show: bool = True) -> Iterator[None]:
    """Show ``label`` with a running clock while one opaque call (a file read) works."""
    steps = Steps(total=1, show=show)
    try:
        with steps.step(label):
            yield
    finally:
        steps.close()
