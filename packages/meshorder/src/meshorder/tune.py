"""Choose a mesh's layout (cell order, face order, LU-SGS sweep levels) by what it costs.

``meshorder reorder --cells auto`` (and ``--faces auto``, ``--sweeps auto``) makes a plan
for each candidate layout and keeps the fastest:

- **measured** where a *layout timer* is installed and finds a GPU: a plug-in that runs
  the solver's own kernels on the candidate plan (gpusolver registers one under the
  entry-point group :data:`TIMER_GROUP`; meshorder itself never imports a GPU library).
  It times the fused residual for explicit runs and a whole LU-SGS step when the plan has
  sweep levels. Candidates are timed in the order the cost model ranks them until the
  budget (``--tune-seconds``) is spent; those left keep their predicted times;
- **predicted** otherwise, by :data:`COST_MODEL`: a linear model of the plan's own metrics
  (32-byte sectors a warp of faces gathers, repeated atomic adds, cells, faces, sweep
  levels) whose coefficients were fitted to H100 measurements
  (``scripts/fit_layout_model.py``; the fit and its check are in docs/benchmarks.md).

The plan records every candidate, its seconds, whether they were measured or predicted,
and the choice (``plan.metrics["tune"]``; ``meshorder info plan.npz`` prints them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from typing import Protocol

import numpy as np

from .errors import UsageError
from .mesh import Mesh
from .metrics import layout_metrics
from .orderings import OrderingInput
from .pipeline import PlanOptions, make_plan, run_ordering, with_sweeps
from .plan import Plan
from .report import table
from .topology import Topology

#: The option value that asks for tuning.
AUTO = "auto"
#: Candidate cell orderings (``random`` is never a candidate: it is the worst by design).
TUNE_CELLS = ("native", "rcm", "metis", "hilbert", "layers")
#: Candidate face orders.
TUNE_FACES = ("greedy", "strided")
#: Candidate LU-SGS sweep levels.
TUNE_SWEEPS = ("hyperplanes", "colours")
#: The precisions a layout may be tuned for.
PRECISIONS = ("fp64", "fp32")
#: Entry-point group of layout timers (a zero-argument factory returning a
#: :class:`LayoutTimer`, or None where it cannot time: no GPU).
TIMER_GROUP = "meshorder.layout_timers"
#: Default time budget of the measurements, seconds.
DEFAULT_TUNE_SECONDS = 30.0
#: Candidates predicted slower than this factor times the best prediction are not timed
#: (on the nine meshes of docs/benchmarks.md the fastest was predicted within 1.122 of
#: the best prediction).
PRUNE_FACTOR = 1.2

#: Per integrator and precision, seconds per unit of each :func:`features` entry: fitted
#: by ``scripts/fit_layout_model.py`` to ``gpusolver bench-layout`` rows of nine meshes
#: on an H100 (2026-11-28; docs/results/layout/). The residual is mostly the face loop's
#: gathered sectors; an LU-SGS step, its sweep levels (13.6 us each) and the sectors its
#: cell loops gather.
COST_MODEL: dict[str, dict[str, dict[str, float]]] = {
    "rk4": {
        "fp64": {"launch": 4.005e-05, "cells": 0.0, "faces": 6.554e-11, "sectors": 4.126e-10,
                 "cell_sectors": 0.0, "repeated_adds": 1.286e-10, "levels": 0.0},
        "fp32": {"launch": 3.441e-05, "cells": 0.0, "faces": 3.425e-11, "sectors": 3.176e-10,
                 "cell_sectors": 0.0, "repeated_adds": 6.258e-11, "levels": 0.0},
    },
    "lusgs": {
        "fp64": {"launch": 5.895e-05, "cells": 0.0, "faces": 3.23e-10, "sectors": 0.0,
                 "cell_sectors": 3.376e-10, "repeated_adds": 8.731e-11, "levels": 1.358e-05},
    },
}


@dataclass(frozen=True)
class Layout:
    """One candidate: a cell ordering, a face order and (for LU-SGS) the sweep levels."""

    cells: str
    faces: str
    sweeps: str | None = None

    @property
    def name(self) -> str:
        """``cells+faces[+sweeps]``, e.g. ``rcm+greedy+colours``."""
        return "+".join(part for part in (self.cells, self.faces, self.sweeps) if part)

    @classmethod
    def of(cls, options: PlanOptions) -> Layout:
        """The layout that ``options`` (or a plan's, :meth:`PlanOptions.from_dict`) make."""
        return cls(options.cells, options.faces, "hyperplanes" if options.hyperplanes
                   else "colours" if options.sweep_colours else None)

    @property
    def integrator(self) -> str:
        """What a step of this layout runs: ``lusgs`` with sweep levels, else ``rk4``."""
        return "rk4" if self.sweeps is None else "lusgs"

    def options(self, base: PlanOptions) -> PlanOptions:
        """``base`` with this layout's orderings and sweep levels."""
        return replace(base, cells=self.cells, faces=self.faces,
                       hyperplanes=self.sweeps == "hyperplanes",
                       sweep_colours=self.sweeps == "colours")


class LayoutTimer(Protocol):
    """Times a plan's step on a device (what a :data:`TIMER_GROUP` factory returns)."""

    #: The device's name, recorded in the plan.
    device: str

    def __call__(self, mesh: Mesh, topology: Topology, plan: Plan, precision: str,
                 integrator: str) -> float:
        """Seconds of one evaluation: the residual (``rk4``) or one LU-SGS step
        (``lusgs``, sweeping the plan's levels)."""


def find_timer() -> LayoutTimer | None:
    """The first installed layout timer that can time here (None: predict instead)."""
    for point in entry_points(group=TIMER_GROUP):
        timer = point.load()()
        if timer is not None:
            return timer
    return None


def candidates(cells: str, faces: str, sweeps: str | None) -> list[Layout]:
    """Every layout the options allow: each of ``cells``, ``faces`` and ``sweeps`` is a
    name, :data:`AUTO` (every candidate of its kind) or, for ``sweeps``, None (no levels).

    Examples
    --------
    >>> [c.name for c in candidates("rcm", AUTO, "colours")]
    ['rcm+greedy+colours', 'rcm+strided+colours']
    """
    return [Layout(c, f, s)
            for c in (TUNE_CELLS if cells == AUTO else (cells,))
            for f in (TUNE_FACES if faces == AUTO else (faces,))
            for s in (TUNE_SWEEPS if sweeps == AUTO else (sweeps,))]


def features(plan: Plan, precision: str) -> dict[str, float]:
    """What :data:`COST_MODEL` weighs, from ``plan``'s metrics: ``sectors`` (32-byte sectors
    the face loop gathers: warps times sectors per warp), ``cell_sectors`` (those a loop
    over cells gathers from their neighbours), ``repeated_adds`` (serialised atomic
    adds), ``cells``, ``faces``, ``levels`` (forward plus backward sweep levels) and
    ``launch`` (1)."""
    m = plan.metrics
    warps = -(-plan.n_faces // 32)
    return {"launch": 1.0, "cells": float(plan.n_cells), "faces": float(plan.n_faces),
            "sectors": warps * m[f"sectors_per_warp_{precision}"],
            "cell_sectors": (-(-plan.n_cells // 32)
                             * m[f"neighbour_sectors_per_warp_{precision}"]),
            "repeated_adds": warps * m["repeated_adds_per_warp"],
            "levels": float(m.get("forward_levels", 0) + m.get("backward_levels", 0))}


def predict(plan: Plan, precision: str, integrator: str) -> float:
    """Seconds of one evaluation of ``plan``'s layout by :data:`COST_MODEL` (LU-SGS steps
    were fitted in fp64; fp32 ones take those weights with fp32's sectors)."""
    weights = COST_MODEL[integrator].get(precision, COST_MODEL[integrator]["fp64"])
    return float(sum(weights[k] * v for k, v in features(plan, precision).items()))


@dataclass
class Trial:
    """A candidate's plan, its cell order and its seconds (``measured``: by the timer;
    :func:`choose` fills both)."""

    layout: Layout
    plan: Plan
    cell_order: np.ndarray
    predicted: float = float("nan")
    measured: float | None = None

    @property
    def seconds(self) -> float:
        """The measured time where there is one, else the predicted."""
        return self.predicted if self.measured is None else self.measured


@dataclass
class Tuning:
    """The outcome of :func:`tune_layout`."""

    choice: Layout
    cell_order: np.ndarray
    trials: list[Trial]
    source: str
    device: str
    precision: str
    seconds: float

    def record(self) -> dict:
        """JSON-ready: the candidates' times, the choice, how its times were had."""
        return {"choice": self.choice.name, "source": self.source, "device": self.device,
                "precision": self.precision, "integrator": self.choice.integrator,
                "tune_s": round(self.seconds, 3),
                "candidates": [{"layout": t.layout.name,
                                "predicted_ms": round(t.predicted * 1e3, 5),
                                "measured_ms": (None if t.measured is None
                                                else round(t.measured * 1e3, 5))}
                               for t in self.trials]}


def candidate_plans(mesh: Mesh, options: PlanOptions, layouts: Iterable[Layout], *,
                    topology: Topology | None = None) -> list[Trial]:
    """A plan of every layout in ``layouts`` (each cell ordering computed once), its time
    not yet known. The plans keep only what a step's time depends on: ``options`` without
    partitions, coarse levels, colours or blocks.

    Raises
    ------
    UsageError
        If ``layouts`` is empty.
    """
    layouts = list(layouts)
    if not layouts:
        raise UsageError("no candidate layouts to tune")
    topology = topology or Topology(mesh)
    data = OrderingInput(topology.cell_graph, mesh.centroids(), topology.boundary_cells())
    orders = {name: run_ordering(name, data, replace(options, cells=name))
              for name in dict.fromkeys(layout.cells for layout in layouts)}
    base = replace(options, colour=False, blocks=0, partitions=1, weights=None, multigrid=0,
                   renumber_by_level=False)
    native = layout_metrics(topology.cell_graph, topology.face_cells)
    made: dict[tuple[str, str], Plan] = {}  # by cells and faces: the sweeps alone differ
    trials = []
    for layout in layouts:
        first = made.get((layout.cells, layout.faces))
        plan = (with_sweeps(first, topology, layout.options(base)) if first is not None
                else make_plan(mesh, layout.options(base), topology=topology,
                               cell_order=orders[layout.cells], native=native))
        made.setdefault((layout.cells, layout.faces), plan)
        trials.append(Trial(layout, plan, orders[layout.cells]))
    return trials


def choose(mesh: Mesh, trials: list[Trial], *, topology: Topology | None = None,
           timer: LayoutTimer | None = None, precision: str = "fp64",
           budget_s: float = DEFAULT_TUNE_SECONDS,
           log: Callable[[str], None] = lambda line: None) -> Tuning:
    """The fastest of ``trials`` (:func:`candidate_plans`) in ``precision``: each predicted,
    then, with a timer, timed best-predicted first until ``budget_s`` is spent or the
    predictions pass :data:`PRUNE_FACTOR` times the best one (at least two are timed); the
    rest keep their predictions and only a measured time can win.

    Raises
    ------
    UsageError
        If ``precision`` is not one of :data:`PRECISIONS`.
    """
    check_precision(precision)
    started = time.perf_counter()
    for trial in trials:
        trial.predicted = predict(trial.plan, precision, trial.layout.integrator)
        trial.measured = None
    if timer is not None:
        topology = topology or Topology(mesh)
        for k, trial in enumerate(worth_timing(trials)):
            if k >= 2 and time.perf_counter() - started > budget_s:
                break
            trial.measured = timer(mesh, topology, trial.plan, precision,
                                   trial.layout.integrator)
            log(f"tune: {trial.layout.name} {trial.measured * 1e3:.4f} ms measured "
                f"({trial.predicted * 1e3:.4f} predicted)")
    timed = [t for t in trials if t.measured is not None]
    best = min(timed or trials, key=lambda t: t.seconds)
    source = ("predicted" if not timed else "measured" if len(timed) == len(trials)
              else f"measured {len(timed)} of {len(trials)}")
    return Tuning(best.layout, best.cell_order, list(trials), source,
                  timer.device if timed else "cost model (H100)", precision,
                  time.perf_counter() - started)


def check_precision(precision: str) -> None:
    """Raise :class:`UsageError` unless ``precision`` is one of :data:`PRECISIONS`."""
    if precision not in PRECISIONS:
        raise UsageError(f"tune precision {precision!r}: choose from {', '.join(PRECISIONS)}")


def worth_timing(trials: list[Trial]) -> list[Trial]:
    """The trials :func:`choose` times, best predicted first: those predicted within
    :data:`PRUNE_FACTOR` of the best, and at least two."""
    ranked = sorted(trials, key=lambda t: t.predicted)
    return [t for k, t in enumerate(ranked)
            if k < 2 or t.predicted <= PRUNE_FACTOR * ranked[0].predicted]


def tune_layout(mesh: Mesh, options: PlanOptions, layouts: Iterable[Layout], *,
                topology: Topology | None = None, timer: LayoutTimer | None = None,
                precision: str = "fp64", budget_s: float = DEFAULT_TUNE_SECONDS,
                log: Callable[[str], None] = lambda line: None) -> Tuning:
    """:func:`candidate_plans` then :func:`choose`; the tuning's seconds count both."""
    check_precision(precision)
    started = time.perf_counter()
    topology = topology or Topology(mesh)
    trials = candidate_plans(mesh, options, layouts, topology=topology)
    tuning = choose(mesh, trials, topology=topology, timer=timer, precision=precision,
                    budget_s=budget_s, log=log)
    tuning.seconds = time.perf_counter() - started
    return tuning


def tune_table(record: dict) -> str:
    """A plan's tuning record (:meth:`Tuning.record`) as a text table and its verdict.

    Examples
    --------
    >>> print(tune_table({"choice": "rcm+greedy", "source": "predicted", "tune_s": 0.5,
    ...     "device": "cost model (H100)", "precision": "fp64", "integrator": "rk4",
    ...     "candidates": [{"layout": "rcm+greedy", "predicted_ms": 1.0, "measured_ms": None}]}))
    | layout     | predicted ms | measured ms |
    |------------|--------------|-------------|
    | rcm+greedy | 1            | -           |
    layout: rcm+greedy, predicted by the cost model (H100) for fp64 rk4, in 0.5 s of tuning
    """
    rows = [(c["layout"], c["predicted_ms"], "-" if c["measured_ms"] is None
             else c["measured_ms"]) for c in record["candidates"]]
    how = ("predicted by the " if record["source"] == "predicted"
           else f"{record['source']} on the ")
    return (table(["layout", "predicted ms", "measured ms"], rows) + "\n"
            + f"layout: {record['choice']}, {how}{record['device']} for "
            f"{record['precision']} {record['integrator']}, in {record['tune_s']} s of tuning")
