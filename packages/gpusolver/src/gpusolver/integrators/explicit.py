"""Explicit Runge-Kutta time integrators, registered by name, as tables of stages.

An integrator advances ``dU/dt = R(U) / V`` by one step with a per-cell time step
``dt`` (a scalar array for global stepping, one value per cell for local stepping).
Each method is a table of :class:`Stage` rows in one low-storage form; the NumPy
loop :func:`runge_kutta` and the fused CUDA update kernel
(``solvers/fv/kernels/residual.cu``) both run the same table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from meshorder.registry import Registry

#: Name -> ``step(u, rate, dt) -> (u_new, rate_of_u)``, ``rate(u) = R(u) / V``.
INTEGRATORS: Registry = Registry("time integrator")


@dataclass(frozen=True)
class Stage:
    """One stage: with ``k = rate(u_i)`` and the running sum ``s`` (0 before the first
    stage), ``s += sum_weight k`` and
    ``u_(i+1) = base u_0 + current u_i + rate dt k + from_sum dt s``; ``u_i`` stands for
    the solution at ``t + time dt`` (where time-dependent boundary data are taken)."""

    base: float
    current: float
    rate: float
    sum_weight: float = 0.0
    from_sum: float = 0.0
    time: float = 0.0


#: Method name -> its stages.
TABLEAUX: dict[str, tuple[Stage, ...]] = {
    # Shu and Osher's three-stage strong-stability-preserving Runge-Kutta
    "ssprk3": (Stage(1.0, 0.0, 1.0), Stage(0.75, 0.25, 0.25, time=1.0),
               Stage(1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0, time=0.5)),
    # classical fourth-order Runge-Kutta: u + dt (k1 + 2 k2 + 2 k3 + k4) / 6
    "rk4": (Stage(1.0, 0.0, 0.5, 1.0), Stage(1.0, 0.0, 0.5, 2.0, time=0.5),
            Stage(1.0, 0.0, 1.0, 2.0, time=0.5), Stage(1.0, 0.0, 0.0, 1.0, 1.0 / 6.0, 1.0)),
}


def runge_kutta(stages: tuple[Stage, ...], u, rate: Callable, dt,
                admissible: Callable | None = None):
    """Advance ``u`` by one step of the method ``stages``; return ``(u_new, rate(u))``.

    ``admissible(u, state)``, when given, replaces each stage's state (a steady step
    keeps its states physical: :func:`~gpusolver.integrators.relaxation.positive_stage`).

    Examples
    --------
    >>> import numpy as np
    >>> u, _ = runge_kutta(TABLEAUX["rk4"], np.array([1.0]), lambda u: -u, 0.1)
    >>> round(float(u[0]), 9), round(float(np.exp(-0.1)), 9)
    (0.9048375, 0.904837418)
    """
    current, total, first = u, None, None
    for stage in stages:
        k = rate(current)
        first = k if first is None else first
        if stage.sum_weight:
            total = stage.sum_weight * k if total is None else total + stage.sum_weight * k
        following = stage.base * u + stage.rate * dt * k
        if stage.current:
            following = following + stage.current * current
        if stage.from_sum:
            following = following + stage.from_sum * dt * total
        current = following if admissible is None else admissible(u, following)
    return current, first


def keeping_first(rate: Callable, keep: Callable[[], object]) -> tuple[Callable, list]:
    """``rate`` that also records ``keep()`` right after its first evaluation, in the list
    returned with it: what a step reports of its first stage (the boundary fluxes that
    the wall forces come from).

    Examples
    --------
    >>> import numpy as np
    >>> calls = []
    >>> rate, first = keeping_first(lambda u: -u, lambda: len(calls))
    >>> _ = runge_kutta(TABLEAUX["rk4"], np.array([1.0]), lambda u: calls.append(1) or rate(u), 0.1)
    >>> first
    [1]
    """
    kept: list = []

    def recording(u):
        r = rate(u)
        if not kept:
            kept.append(keep())
        return r
    return recording, kept


for _name, _stages in TABLEAUX.items():
    INTEGRATORS[_name] = functools.partial(runge_kutta, _stages)
