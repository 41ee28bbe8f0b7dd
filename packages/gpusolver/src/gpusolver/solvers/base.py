"""The one interface every solution method offers the run loop: :class:`System`.

A System holds one case's state (on the whole mesh or on this process's parts of it) and
advances it; :func:`gpusolver.run.run_case` drives any System the same way: the per-step
log, checkpoints, outputs, the convergence stop, Ctrl-C and SIGTERM, and the stop of
every MPI rank at the same step. The methods are registered by name in
:data:`gpusolver.systems.SYSTEMS` (``[solver] method`` picks one).

What a System reports of its steps is a :class:`StepReport`, never attributes left on
the solver; what it checkpoints is a :class:`~gpusolver.io.checkpoint.Snapshot` of named
arrays and numbers, which :mod:`gpusolver.io.checkpoint` writes in the one checkpoint
format with the System's :class:`~gpusolver.io.checkpoint.Identity` (digests of its mesh
or body and of its case's physics), so a restart of any method is refused by the same
check when it belongs to another case.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gpusolver.io.checkpoint import Identity, Snapshot


@dataclass(frozen=True)
class StepReport:
    """What the last of a batch of steps gave.

    Attributes
    ----------
    iteration : int
        Steps taken since the first run (across restarts).
    time : float
        Physical time (0 for local time steps).
    residuals : numpy.ndarray
        RMS of ``dU/dt`` per equation in the last step; empty where the method has none.
    fall : float or None
        The first residual over the first step's (of the first run); None without residuals.
    loads : dict of str to float
        Named coefficients of the last step (``cl``, ``cd``; the vortex method's ``cx`` ...).
    row : list
        The step's row of the System's log (:meth:`System.log_columns` without ``wall_s``,
        which the run loop fills in).
    notes : list of str
        Lines for the log: what the steps did to keep going (a CFL number backed off, a
        limiter frozen).
    """

    iteration: int
    time: float
    residuals: np.ndarray
    fall: float | None
    loads: dict[str, float]
    row: list = field(default_factory=list)
    notes: list = field(default_factory=list)


class System(ABC):
    """One solution method on one case, as :func:`gpusolver.run.run_case` drives it.

    Implementations: :class:`gpusolver.solvers.fv.system.FVSystem`,
    :class:`gpusolver.solvers.dg.system.DGSystem`,
    :class:`gpusolver.solvers.vortex.system.VortexSystem`. Under MPI every rank holds
    one; every method is called on every rank unless it says otherwise.

    Attributes
    ----------
    method : str
        The name of ``[solver] method`` it is registered under.
    solver : object
        The method's solver: its state, loads and settings, for scripts and tests.
    schema : dict
        Its case file's sections (``docs/case_format.md`` is made from them).
    log_name : str
        The per-step log in the output folder.
    """

    method: ClassVar[str]
    #: The case file's sections: section -> key -> :class:`gpusolver.io.schema.Key`.
    schema: ClassVar[dict]
    log_name: ClassVar[str] = "history.csv"

    # ---------------------------------------------------------------- the case
    @classmethod
    @abstractmethod
    def parse_case(cls, data: dict, path: Path) -> Any:
        """The validated case of this method from a parsed TOML document (its ``loop``
        attribute: :class:`gpusolver.io.case.LoopSettings`)."""

    @classmethod
    @abstractmethod
    def from_case(cls, case: Any) -> System:
        """Set up the case's state from the free stream (or from rest)."""

    def case_notes(self) -> list[str]:
        """A line for each key the case file sets that does nothing in this case (the run
        loop passes them on before the first step)."""
        return []

    @abstractmethod
    def identity(self) -> Identity:
        """What a checkpoint of this case carries and a restart must match."""

    # ---------------------------------------------------------------- stepping
    @property
    @abstractmethod
    def iteration(self) -> int:
        """Steps taken (across restarts)."""

    @abstractmethod
    def advance(self, steps: int) -> StepReport:
        """Take ``steps`` steps; the report of the last (``SolverDivergedError`` on a bad
        state)."""

    def progress_label(self) -> str:
        """The progress bar's description."""
        return self.method

    def progress_values(self, report: StepReport) -> dict[str, str]:
        """The progress bar's values after ``report``."""
        return {name: f"{value:.4f}" for name, value in report.loads.items()}

    def summary(self, report: StepReport | None) -> str:
        """One line on where the run ended (the CLI prints it)."""
        return f"{self.iteration} steps"

    def diagnose(self) -> str | None:
        """One line on where the residual of a run that did not converge sits (the run
        loop passes it on, before the outputs, which may show it; None: nothing to
        say)."""
        return None

    # ---------------------------------------------------------------- several ranks
    @property
    def is_root(self) -> bool:
        """True in the one process that writes the log, the checkpoint and the outputs."""
        return True

    def any_rank(self, flag: bool) -> bool:
        """Whether ``flag`` is set on any rank (every rank must call it)."""
        return flag

    # ---------------------------------------------------------------- log
    @abstractmethod
    def log_columns(self) -> list[str]:
        """The header of :attr:`log_name`, with ``wall_s`` (the loop's seconds) where the
        run loop puts it."""

    @property
    @abstractmethod
    def log_position(self) -> float:
        """The first column of the log at the current state (a restart drops the rows
        past it)."""

    # ---------------------------------------------------------------- checkpoints
    @abstractmethod
    def snapshot(self) -> Snapshot:
        """The exact state for a checkpoint (gathered to the root under MPI)."""

    @abstractmethod
    def restore(self, snapshot: Snapshot) -> list[str]:
        """Continue from ``snapshot``; ``ValueError`` naming what does not fit. Returns a
        line for each setting of the case that replaces the checkpoint's (the run loop
        passes them on to the user)."""

    # ---------------------------------------------------------------- outputs
    def periodic_outputs(self, out: Path) -> list[Path]:
        """Files written after each batch of steps (snapshots of the vortex wake)."""
        return []

    @abstractmethod
    def write_outputs(self, out: Path) -> list[Path]:
        """The final outputs in folder ``out``; the files this process wrote."""
