"""Plot the JSON rows of ``gpusolver bench-parallel`` runs: step speed-up over one GPU and
parallel efficiency against the number of GPUs, one line per mesh and variant.

Usage: ``python scripts/plot_scaling.py OUT.png RUN.json [RUN.json ...]``
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(out: str, runs: list[str]) -> None:
    """Write the figure of the runs' rows to ``out``."""
    figure, (speedup, efficiency) = plt.subplots(1, 2, figsize=(10, 4))
    for path in runs:
        rows = json.load(open(path))
        one = next(r for r in rows if r["ranks"] == 1)
        label_mesh = f"{one['cells'] / 1e6:.1f}M cells"
        for row in rows:
            if row["ranks"] == 1:
                continue
            label = f"{label_mesh}, {row['variant']}"
            speedup.plot([1, row["ranks"]], [1.0, row["speedup_step"]], "o-", label=label)
            efficiency.plot([1, row["ranks"]], [1.0, row["efficiency"]], "o-",
                            label=f"{row['cells_per_gpu'] / 1e6:.1f}M cells/GPU, "
                                  f"{row['variant']}")
    speedup.plot([1, 2], [1, 2], "k:", label="ideal")
    speedup.set(xlabel="GPUs", ylabel="RK4 step speed-up over one GPU",
                title="strong scaling", xticks=[1, 2])
    efficiency.axhline(0.97, color="k", ls=":", label="goal 97% (5M cells/GPU)")
    efficiency.set(xlabel="GPUs", ylabel="time of a part alone / parallel time",
                   title="parallel efficiency", xticks=[1, 2], ylim=(0.6, 1.02))
    for axes in (speedup, efficiency):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
