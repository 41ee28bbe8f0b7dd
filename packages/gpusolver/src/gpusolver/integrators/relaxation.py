"""Relaxed implicit updates: no cell's state leaves the physical range in one step.

An implicit step at a large CFL number can ask a cell for a change larger than its
state (a leading edge on a coarse mesh, a prism layer's first cells early in a run),
and one cell gone bad used to end the run. Each cell's change ``du`` is scaled by its
own factor ``alpha`` instead (the update limiting of SU2 and FUN3D):

- ``alpha = min(1, limit |rho| / |d rho|, limit |E| / |d E|)``: density and total energy
  change by at most the fraction ``limit`` (``[run] max_update``, 0.2 by default);
- halved while the new density or pressure is not positive, at most :data:`HALVINGS`
  times, and 0 (the cell keeps its state this step) after that.

Where no cell needs it (``alpha = 1`` everywhere: near convergence always), the step is
the plain one, so a converged answer does not depend on it. A non-finite change stays
non-finite and is reported as a divergence. ``kernels/lusgs.cu`` does the same in the
backward sweep (``kernels/relaxation.cuh``), and multigrid relaxes its coarse levels'
corrections so (``kernels/multigrid.cu``).

Explicit steps to a steady state (local time steps) keep each stage physical the same
way (:func:`positive_stage`, and the stage update of ``kernels/residual.cu``): a stage's
change from the step's start is halved where it would leave a non-positive density or
pressure, with no bound on its size otherwise. Time-accurate steps are not touched.
"""

from __future__ import annotations

import numpy as np

from gpusolver.backends import array_module
from gpusolver.backends.ids import CONSTANTS
from gpusolver.physics.gas import Gas

#: Halvings of a cell's relaxed update whose new density or pressure is not positive,
#: before the cell keeps its state (``RELAX_HALVINGS`` of the kernels).
HALVINGS = CONSTANTS["RELAX_HALVINGS"]

#: ``[run] max_update``: the largest change of a cell's density and total energy in one
#: implicit step, as a fraction of their values.
MAX_UPDATE = 0.2


def relaxed_update(gas: Gas, u, du, limit: float | None = MAX_UPDATE) -> tuple[object, int]:
    """``u + alpha du`` per cell (see the module docstring) and the number of cells with
    ``alpha < 1``; ``limit`` None bounds nothing (positivity only).

    Examples
    --------
    >>> from gpusolver.physics.gas import Gas
    >>> gas = Gas(dim=2, mach=0.5)
    >>> u = gas.to_conserved(np.repeat(gas.free_stream[:, None], 2, axis=1))
    >>> du = np.zeros_like(u)
    >>> du[0, 1] = -0.5 * u[0, 1]          # half the density of cell 1: 20% at most
    >>> new, relaxed = relaxed_update(gas, u, du)
    >>> relaxed, round(float(new[0, 1] / u[0, 1]), 6), bool(np.all(new[:, 0] == u[:, 0]))
    (1, 0.8, True)
    """
    xp = array_module(u)
    alpha = xp.ones(u.shape[1], dtype=u.dtype)
    if limit is not None:
        for row in (0, -1):  # density and total energy
            change, allowed = xp.abs(du[row]), limit * xp.abs(u[row])
            alpha = xp.where(change > allowed, xp.minimum(alpha, allowed / change), alpha)
    new = u + alpha * du
    for halving in range(HALVINGS + 1):
        failing = _not_positive(gas, new)
        if not bool(failing.any()):
            break
        alpha = xp.where(failing, 0.5 * alpha if halving < HALVINGS else 0.0, alpha)
        new = u + alpha * du
    return new, int(xp.count_nonzero(alpha < 1))


def positive_stage(gas: Gas, start, state) -> tuple[object, int]:
    """``state`` (an explicit stage's) with the change from ``start`` of each cell whose
    density or pressure is not positive scaled back as :func:`relaxed_update` does
    (positivity only), and the number of such cells; the other cells keep their state
    bit for bit (a step that needs nothing is the plain one).

    Examples
    --------
    >>> from gpusolver.physics.gas import Gas
    >>> gas = Gas(dim=2, mach=0.5)
    >>> start = gas.to_conserved(np.repeat(gas.free_stream[:, None], 2, axis=1))
    >>> state = start.copy()
    >>> state[0, 1] = -start[0, 1]          # a negative density in cell 1
    >>> new, relaxed = positive_stage(gas, start, state)
    >>> relaxed, float(new[0, 1] / start[0, 1]), bool(np.all(new[:, 0] == state[:, 0]))
    (1, 0.5, True)
    """
    failing = _not_positive(gas, state)
    if not bool(failing.any()):
        return state, 0
    new, _ = relaxed_update(gas, start, state - start, None)
    return array_module(state).where(failing[None], new, state), int(failing.sum())


def _not_positive(gas: Gas, u):
    """Cells of finite state whose density or pressure is not positive."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero density is one of them
        w = gas.to_primitive(u)
    return array_module(u).isfinite(u).all(axis=0) & ((w[0] <= 0) | (w[-1] <= 0))
