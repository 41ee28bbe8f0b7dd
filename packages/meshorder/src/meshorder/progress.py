"""Progress over the named steps of a long job, shown only when it takes a while."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm


class Steps:
    """A tqdm bar over pipeline steps that also records each step's wall time.

    Parameters
    ----------
    total : int
        Number of steps expected.
    show : bool
        Draw the bar (on stderr, after one second) when true; otherwise only time.
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
        yield
        self.timings[name] = round(time.perf_counter() - start, 4)
        self._bar.update()

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()
