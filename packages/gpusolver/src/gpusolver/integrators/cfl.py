"""CFL control of the implicit steps: the ramp with the residual's fall, the back-off of
a step that went bad, and the watch of a residual whose rise or stall cuts a CFL number's
cap. One of each, shared by every solver on the whole mesh or on parts."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TypeVar

import numpy as np

T = TypeVar("T")

#: The cap of a backed-off CFL number grows by this factor at each new lowest residual,
#: back towards its largest value.
CEILING_GROWTH = 1.05

#: A failed implicit step is retried this many times, the CFL number divided by
#: :data:`CFL_BACKOFF` each time (never below :data:`MIN_CFL`), before the run is
#: declared diverged.
RETRIES = 6
CFL_BACKOFF = 10.0
MIN_CFL = 1e-3

#: A stalled residual flips when at least this fraction of its steps in the stall's
#: window turned it the other way from the step before (up after down, down after up): a
#: period-2 cycle. A residual that wanders at random turns about half as often.
FLIPPING = 0.8


def ramped_cfl(start: float, current: float, fall: float, cfl_max: float) -> float:
    """Switched evolution relaxation: the CFL number ``start / fall`` (``fall``: the density
    residual over the first step's), never below ``current`` while the residual is below
    the first one, and at most ``cfl_max``.

    Examples
    --------
    >>> ramped_cfl(10.0, 10.0, 1e-2, 1e4), ramped_cfl(10.0, 500.0, 0.1, 1e4)
    (1000.0, 500.0)
    """
    ramped = start / max(fall, 1e-300)
    return min(cfl_max, max(current, ramped) if fall < 1 else ramped)


def backing_off(attempt: Callable[[float], tuple[T, bool]], cfl: float,
                retry: bool = True) -> tuple[T, float]:
    """``attempt(cfl) -> (result, failed)`` at ``cfl``, retried at smaller CFL numbers
    while it fails (at most :data:`RETRIES` times; not at all unless ``retry``).

    Returns
    -------
    result, cfl
        The last attempt's result (whose bad cell, if it still failed, the caller names)
        and the CFL number it took.

    Examples
    --------
    >>> backing_off(lambda cfl: (cfl > 1.0, cfl > 1.0), 50.0)
    (False, 0.5)
    """
    for tries in range(RETRIES + 1):
        result, failed = attempt(cfl)
        if not failed or not retry or tries == RETRIES:
            return result, cfl
        cfl = max(cfl / CFL_BACKOFF, MIN_CFL)
    raise AssertionError("unreachable")


class ResidualWatch:
    """The lowest values so far of one or more residuals, and a cap on a CFL number that
    their rise cuts and each new lowest lets grow back by :data:`CEILING_GROWTH`.

    Parameters
    ----------
    rise : float
        A residual this many times above its lowest is a rise.
    cap : float
        The cap to start from.
    stall : int or None
        So many steps without a new lowest are a stall; None: never.

    Examples
    --------
    >>> watch = ResidualWatch(rise=10.0, cap=100.0, stall=2)
    >>> [watch.watch(r, 1000.0) for r in (1.0, 0.5, 0.6, 0.7)], watch.cap
    ([None, None, None, 'stalled'], 110.25)
    >>> watch.restart(0.7); watch.watch(8.0, 1000.0), float(watch.last_ratios[0])
    ('rose', 11.428571428571429)
    """

    def __init__(self, rise: float, cap: float, stall: int | None = None):
        self.rise, self.cap, self.stall = rise, cap, stall
        #: The last residuals watched (the first of each, as many as a stall's window).
        self.recent: deque[float] = deque(maxlen=max(stall or 0, 3))
        #: The lowest value of each residual since the start or the last :meth:`restart`.
        self.lowest: float | np.ndarray = np.inf
        #: Steps since the last new lowest value.
        self.since_lowest = 0
        #: The last watched residuals over their lowest before them (0 where that is 0).
        self.last_ratios = np.zeros(1)

    def _ratios(self, residuals) -> np.ndarray:
        """Each residual over its lowest so far (0 where that is 0)."""
        residuals = np.atleast_1d(np.asarray(residuals, dtype=float))
        lowest = np.broadcast_to(self.lowest, residuals.shape)
        return np.divide(residuals, lowest, out=np.zeros_like(residuals), where=lowest > 0)

    def watch(self, residuals, cap_max: float) -> str | None:
        """Take one step's ``residuals``: ``"rose"`` where any is :attr:`rise` times above
        its lowest, ``"stalled"`` where :attr:`stall` steps found no new lowest, else None;
        where one finds a new lowest (and none rose) the cap grows, up to ``cap_max``."""
        values = np.asarray(residuals, dtype=float)
        self.recent.append(float(np.atleast_1d(values)[0]))
        lowest = np.broadcast_to(self.lowest, values.shape)
        self.last_ratios = self._ratios(values)
        if (self.last_ratios > self.rise).any():
            self.since_lowest += 1
            return "rose"
        if (values < lowest).any():
            self.lowest = np.minimum(lowest, values)
            self.since_lowest = 0
            self.cap = min(cap_max, CEILING_GROWTH * self.cap)
            return None
        self.since_lowest += 1
        return "stalled" if self.stall is not None and self.since_lowest >= self.stall else None

    def flipping(self) -> bool:
        """Whether the first residual's last steps (a stall's window) cycle with period two:
        at least :data:`FLIPPING` of them turned it the other way from the step before.

        Examples
        --------
        >>> watch = ResidualWatch(rise=10.0, cap=100.0, stall=6)
        >>> for r in (1.0, 0.5, 0.6, 0.5, 0.6, 0.5):
        ...     _ = watch.watch(r, 1000.0)
        >>> watch.flipping()
        True
        >>> for r in (0.5, 0.6, 0.7, 0.6, 0.5, 0.6):
        ...     _ = watch.watch(r, 1000.0)
        >>> watch.flipping()
        False
        """
        steps = np.diff(np.asarray(self.recent))
        if len(steps) < 2:
            return False
        turns = steps[1:] * steps[:-1] < 0
        return bool(turns.mean() >= FLIPPING)

    def restart(self, residuals) -> None:
        """Count from ``residuals`` as the lowest (after an action on a rise or stall)."""
        self.lowest = np.array(residuals, dtype=float)
        self.since_lowest = 0
