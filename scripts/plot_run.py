"""Plot a run's convergence (density residual, CL against wall seconds) and its Cp curves.

Usage: ``python scripts/plot_run.py OUTPUT_DIR -o figure.png`` (OUTPUT_DIR holds the
``history.csv`` and ``cp_<wall>.csv`` that ``gpusolver run`` writes).
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    history = np.genfromtxt(args.directory / "history.csv", delimiter=",", names=True)
    fig, (res, cp_axes) = plt.subplots(1, 2, figsize=(11, 4.2))
    res.semilogy(history["wall_s"], history["residual_0"] / history["residual_0"][0], "k-")
    res.set_xlabel("wall time (s)")
    res.set_ylabel("density residual / first")
    lift = res.twinx()
    lift.plot(history["wall_s"], history["cl"], "C0--")
    lift.set_ylabel("CL", color="C0")
    for path in sorted(args.directory.glob("cp_*.csv")):
        cp = np.genfromtxt(path, delimiter=",", names=True)
        cp_axes.plot(cp["x"], -cp["cp"], "-", lw=1, label=path.stem[3:])
    cp_axes.set_xlabel("x")
    cp_axes.set_ylabel("-Cp")
    cp_axes.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)


if __name__ == "__main__":
    main()
