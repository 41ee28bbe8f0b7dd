"""Fit meshorder's layout cost model to ``gpusolver bench-layout --trials-json`` rows.

For each integrator and precision, a non-negative least-squares fit of the measured
seconds to :func:`meshorder.tune.features` (relative error: each row divided by its
time), then a check of what the model would choose: for every mesh, the model fitted
without that mesh (leave one mesh out) picks a layout, and its measured time is compared
with the best candidate's. Prints the coefficients as :data:`meshorder.tune.COST_MODEL`
takes them and the check as a markdown table.

    python scripts/fit_layout_model.py docs/results/layout/trials_*.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np
from scipy.optimize import nnls

from meshorder.tune import COST_MODEL

FEATURES = tuple(COST_MODEL["rk4"]["fp64"])


def fit(rows: list[dict]) -> dict[str, float]:
    """Non-negative coefficients of :data:`FEATURES` minimising the relative error."""
    a = np.array([[row[k] for k in FEATURES] for row in rows], dtype=np.float64)
    t = np.array([row["measured_ms"] * 1e-3 for row in rows])
    scale = a.max(axis=0)
    scale[scale == 0] = 1.0
    coefficients, _ = nnls(a / scale / t[:, None], np.ones(len(t)))
    return {k: float(f"{c / s:.4g}") for k, c, s in zip(FEATURES, coefficients, scale,
                                                       strict=True)}


def predict(model: dict[str, float], row: dict) -> float:
    """Predicted seconds of ``row``."""
    return sum(model[k] * row[k] for k in FEATURES)


def candidate_table(rows: list[dict], integrator: str, precision: str) -> str:
    """Per mesh: every candidate's measured ms, the best, and the default's ratio to it."""
    layouts = list(dict.fromkeys(row["layout"] for row in rows))
    default = "rcm+greedy" + ("+colours" if integrator == "lusgs" else "")
    lines = [f"\n{integrator} {precision}, ms per evaluation (- : not timed)\n",
             "| mesh | cells | " + " | ".join(layouts) + " | best | default / best |",
             "|---|---|" + "---|" * (len(layouts) + 2)]
    for mesh in sorted({row["mesh"] for row in rows}):
        mine = {row["layout"]: row for row in rows if row["mesh"] == mesh}
        timed = {k: r["measured_ms"] for k, r in mine.items() if r["measured_ms"] is not None}
        best = min(timed, key=timed.get)
        cells = " | ".join(f"{timed[k]:.4f}" if k in timed else "-" for k in layouts)
        lines.append(f"| {mesh} | {int(next(iter(mine.values()))['n_cells'])} | {cells} "
                     f"| {best} | {timed[default] / timed[best]:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trials", nargs="+", help="bench-layout --trials-json files")
    args = parser.parse_args()
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in args.trials:
        for row in json.load(open(path)):
            if row["measured_ms"] is None:  # not timed: predicted far too slow
                continue
            groups[(row["integrator"], row["precision"])].append(row)
    models: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    checks = []
    for (integrator, precision), rows in sorted(groups.items()):
        models[integrator][precision] = fit(rows)
        meshes = sorted({row["mesh"] for row in rows})
        for mesh in meshes:
            mine = [row for row in rows if row["mesh"] == mesh]
            model = fit([row for row in rows if row["mesh"] != mesh])
            chosen = min(mine, key=lambda row: predict(model, row))
            best = min(mine, key=lambda row: row["measured_ms"])
            error = np.median([abs(predict(model, r) * 1e3 / r["measured_ms"] - 1) for r in mine])
            checks.append((mesh, integrator, precision, best["layout"], chosen["layout"],
                           chosen["measured_ms"] / best["measured_ms"], error))
    print("COST_MODEL = " + json.dumps(models, indent=4))
    print("\n| mesh | integrator | precision | best | predicted choice (mesh left out) "
          "| its time / best | median prediction error |")
    print("|---|---|---|---|---|---|---|")
    for mesh, integrator, precision, best, chosen, ratio, error in checks:
        print(f"| {mesh} | {integrator} | {precision} | {best} | {chosen} | {ratio:.3f} "
              f"| {error:.0%} |")
    for integrator, precision in sorted(groups):
        print(candidate_table(groups[(integrator, precision)], integrator, precision))
    for key in sorted({(c[1], c[2]) for c in checks}):
        mine = [c for c in checks if (c[1], c[2]) == key]
        within = sum(c[5] <= 1.05 for c in mine)
        print(f"{key[0]} {key[1]}: within 5% of the best on {within} of {len(mine)} meshes")


if __name__ == "__main__":
    main()
