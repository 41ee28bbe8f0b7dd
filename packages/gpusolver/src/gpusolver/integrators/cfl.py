"""CFL control of the implicit steps: the ramp with the residual's fall and the back-off of
a step that went bad. One of each, shared by every solver on the whole mesh or on parts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: A failed implicit step is retried this many times, the CFL number divided by
#: :data:`CFL_BACKOFF` each time (never below :data:`MIN_CFL`), before the run is
#: declared diverged.
RETRIES = 6
CFL_BACKOFF = 10.0
MIN_CFL = 1e-3


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
