"""``[run] strategy = "auto"`` with a plan whose layout meshorder predicted (no GPU where
the plan was made): the run re-checks the layout on the GPU once.

The candidates the plan records within :data:`meshorder.tune.PRUNE_FACTOR` of its best
prediction (at least two) are planned again with the plan's own options (coarse levels,
sweep levels), each solver built with the case's settings and its fused residual timed;
the fastest solver runs the case, and the log says what was measured and how to make that
plan for later runs.
"""

from __future__ import annotations

from collections.abc import Callable

from meshorder import Mesh, Topology
from meshorder.orderings import OrderingInput
from meshorder.pipeline import PlanOptions, make_plan, run_ordering
from meshorder.plan import Plan
from meshorder.tune import PRUNE_FACTOR, Layout

#: Timed residuals per candidate (the median is compared).
REPEATS = 10
#: Another layout replaces the plan's only when it is faster by more than this fraction.
MARGIN = 0.03


def predicted_layout(plan: Plan) -> bool:
    """Whether ``plan``'s layout was chosen by meshorder's cost model, not measured."""
    return plan.metrics.get("tune", {}).get("source") == "predicted"


def layouts_to_check(plan: Plan) -> list[Layout]:
    """The plan's recorded candidates predicted within :data:`PRUNE_FACTOR` of the best
    (at least two), best first, with the plan's own sweep levels."""
    record = plan.metrics["tune"]
    ranked = sorted(record["candidates"], key=lambda c: c["predicted_ms"])
    best = ranked[0]["predicted_ms"]
    chosen = [c for k, c in enumerate(ranked)
              if k < 2 or c["predicted_ms"] <= PRUNE_FACTOR * best]
    sweeps = own_layout(plan).sweeps
    return list(dict.fromkeys(Layout(*c["layout"].split("+")[:2], sweeps) for c in chosen))


def own_layout(plan: Plan) -> Layout:
    """The layout ``plan`` has."""
    return Layout.of(PlanOptions.from_dict(plan.parameters))


def recheck_layout(mesh: Mesh, plan: Plan, solver, make: Callable[[Plan], object]):
    """The fastest of ``solver`` (on ``plan``) and solvers made by ``make`` on the plans of
    :func:`layouts_to_check`, by their fused residual of the free stream; it carries a
    note for the log."""
    def residual_seconds(candidate) -> float:
        d = candidate.discretisations[0]
        state = candidate.states[0]
        return candidate.backend.median_seconds(lambda: d.residual(state), REPEATS, warmup=1)

    options, own = PlanOptions.from_dict(plan.parameters), own_layout(plan)
    times = {own: residual_seconds(solver)}
    best, best_solver = own, solver
    topology = Topology(mesh)
    data = OrderingInput(topology.cell_graph, mesh.centroids(), topology.boundary_cells())
    for layout in layouts_to_check(plan):
        if layout in times:
            continue
        order = run_ordering(layout.cells, data, options)
        candidate = make(make_plan(mesh, layout.options(options), topology=topology,
                                   cell_order=order))
        times[layout] = residual_seconds(candidate)
        if times[layout] < times[best] * (1 - MARGIN if best == own else 1):
            best, best_solver = layout, candidate
        candidate = None  # its device memory goes before the next one's
    measured = ", ".join(f"{layout.name} {t * 1e3:.4g} ms" for layout, t in times.items())
    if best == own:
        note = (f"layout re-checked on the GPU (the plan's was predicted): {measured} per "
                f"residual; the plan's {own.name} kept")
    else:
        note = (f"layout re-checked on the GPU (the plan's was predicted): {measured} per "
                f"residual; {best.name} runs this case (`meshorder reorder --cells "
                f"{best.cells} --faces {best.faces}` makes its plan)")
    best_solver.notes.append(note)
    return best_solver
