"""THE run loop: any :class:`~gpusolver.solvers.base.System` from its case to its outputs.

Steps with progress, the per-step log, checkpoints, the convergence stop, Ctrl-C and
SIGTERM, and the stop of every MPI rank at the same step are the same for every method.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from gpusolver.errors import ConfigError
from gpusolver.io.checkpoint import load_checkpoint, save_checkpoint
from gpusolver.io.lock import output_lock
from gpusolver.monitors.history import CsvLog
from gpusolver.parallel import mpi_world
from gpusolver.solvers.base import StepReport, System
from gpusolver.systems import SYSTEMS
from meshorder.atomic import check_writable
from meshorder.termination import StopRequests


@dataclass(frozen=True)
class RunResult:
    """What a finished run produced.

    Attributes
    ----------
    system : System
        In its final state.
    files : list of pathlib.Path
        Every file this process wrote.
    report : StepReport or None
        Of the last steps (None when none was taken).
    converged : bool or None
        Whether the residual fell by the case's ``residual_reduction`` (None when the
        case sets none).
    interrupted : bool
        The run was stopped by Ctrl-C or SIGTERM (outputs and checkpoint are those of the
        last finished step).
    seconds : float
        Wall time from the start of the set-up to the last output.
    """

    system: System
    files: list[Path]
    report: StepReport | None = None
    converged: bool | None = None
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def solver(self) -> Any:
        """The System's solver (its state, loads and settings)."""
        return self.system.solver


def build_system(case: Any, notify: Callable[[str], None] = lambda line: None) -> System:
    """The System of ``case``'s method, restored from the case's restart file if it has one
    (``notify`` gets a line for each key of the case that does nothing in it, and for
    each setting that replaces the checkpoint's).

    Raises
    ------
    ConfigError
        When the restart file cannot be read, belongs to another case or does not fit.
    """
    system = SYSTEMS.lookup(case.method).from_case(case)
    for line in system.case_notes():
        notify(line)
    restart = case.loop.restart
    if restart is not None:
        snapshot = load_checkpoint(restart, system.identity())
        try:
            notes = system.restore(snapshot)
        except (KeyError, ValueError) as error:
            raise ConfigError(f"checkpoint {restart}: {error}") from None
        for line in notes:
            notify(line)
    return system


def run_case(case: Any, progress: bool = True,
             notify: Callable[[str], None] = lambda line: None,
             pulse: Callable[[bool], None] = lambda stepping: None) -> RunResult:
    """Run ``case`` (of any method): up to its ``iterations`` steps from the free stream,
    or from rest, or from its restart file.

    Writes the System's log (``history.csv``, ``loads.csv``; appended to on restart
    without the rows past the checkpoint), ``checkpoint.npz`` every ``checkpoint_every``
    steps and at the end, the System's periodic outputs, and its outputs at the end.
    Stops early once the first residual has fallen by ``residual_reduction`` from that
    of the first step (of the first run, across restarts). Ctrl-C or SIGTERM ends the
    run after the steps in progress (on every rank at the same step) with the same
    outputs, so a restart continues the log without repeating or dropping rows; a
    second Ctrl-C stops at once, without them.

    ``notify`` gets a line for each key of the case that does nothing in it, each
    setting that replaces the checkpoint's, and each action the steps took to keep going
    (:attr:`~gpusolver.solvers.base.StepReport.notes`). One run at a time owns the output folder
    (:func:`gpusolver.io.lock.output_lock`, taken by the root rank).

    ``pulse(True)`` marks the start of the steps and the end of each interval of them
    (a log row, a checkpoint), ``pulse(False)`` their end: the watch of several ranks
    (:class:`gpusolver.rank_watch.RankWatch`) times the intervals.

    Raises
    ------
    ConfigError
        When the output folder cannot be written or another run owns it.
    SolverDivergedError
        At the first non-finite or non-physical state; the last checkpoint stays.
    """
    start = time.perf_counter()
    out = case.loop.output_directory
    try:
        check_writable(out, folder=True)
    except OSError as error:
        raise ConfigError(f"output directory {out}: {error.strerror}") from None
    comm = mpi_world()
    with contextlib.ExitStack() as owning:
        refused = None
        if comm is None or comm.rank == 0:
            if not out.exists():  # a run refused before its first output leaves none
                out.mkdir(parents=True)
                owning.callback(_remove_if_empty, out)
            try:
                owning.enter_context(output_lock(out))
            except ConfigError as error:
                refused = str(error)
        if comm is not None:  # every rank stops alike
            refused = comm.bcast(refused, root=0)
        if refused is not None:
            raise ConfigError(refused)
        return _run(case, progress, notify, pulse, start)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty: the run wrote into it
        folder.rmdir()


def _run(case: Any, progress: bool, notify: Callable[[str], None],
         pulse: Callable[[bool], None], start: float) -> RunResult:
    """:func:`run_case` once the output folder is this run's."""
    loop = case.loop
    out = loop.output_directory
    system = build_system(case, notify)
    root = system.is_root  # under MPI the root rank alone writes
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.npz"
    columns = system.log_columns()
    log = (CsvLog(out / system.log_name, columns,
                  restart_at=system.log_position if loop.restart is not None else None)
           if root else None)
    wall_column = columns.index("wall_s")
    files = {out / system.log_name, checkpoint}
    target = loop.residual_reduction
    converged = None if target is None else False
    interrupted, report = False, None
    bar = tqdm(total=loop.iterations, desc=system.progress_label(), unit="it",
               disable=not (progress and root))
    looping = time.perf_counter()
    pulse(True)

    def write_checkpoint(beside: ThreadPoolExecutor | None = None) -> Future | None:
        """Save the state (with ``beside``: on its thread, returning the future)."""
        snapshot = system.snapshot()  # every rank: a global gather under MPI
        if not root:
            return None
        if beside is not None:
            return beside.submit(save_checkpoint, checkpoint, system.identity(), snapshot)
        save_checkpoint(checkpoint, system.identity(), snapshot)
        return None

    with StopRequests() as stop:
        try:
            left = loop.iterations
            while left > 0:
                steps = min(loop.history_every, left)
                report = system.advance(steps)
                pulse(True)
                left -= steps
                for line in report.notes if root else []:
                    notify(line)
                bar.update(steps)
                if log is not None:
                    row = report.row
                    log.write([*row[:wall_column], f"{time.perf_counter() - looping:.4f}",
                               *row[wall_column:]])
                bar.set_postfix(system.progress_values(report), refresh=False)
                files.update(system.periodic_outputs(out) if root else [])
                if target is not None and report.fall <= target:
                    converged = True
                    break
                if system.any_rank(stop.requested):  # every rank stops at this step
                    interrupted = True
                    break
                if system.iteration // loop.checkpoint_every > (
                        system.iteration - steps) // loop.checkpoint_every:
                    if log is not None:  # the log covers the checkpoint, even after kill -9
                        log.flush()
                    write_checkpoint()
                    pulse(True)
        finally:
            if log is not None:
                log.close()
            bar.close()
            pulse(False)
        # the last checkpoint and the outputs as one set that matches the log: a first
        # Ctrl-C or SIGTERM now waits for them (a second stops at once, without them)
        with ThreadPoolExecutor(max_workers=1) as beside:  # the file written beside the rest
            saving = write_checkpoint(beside)
            if converged is False and not interrupted:
                note = system.diagnose()  # every rank: a global gather under MPI
                if note is not None and root:
                    notify(note)
            files.update(system.write_outputs(out))
            if saving is not None:
                saving.result()
    written = sorted(files) if root else []
    return RunResult(system, written, report, converged, interrupted,
                     time.perf_counter() - start)
