"""Cp of an ONERA M6 run at the span stations of the experiment, one panel each.

Usage: ``python scripts/plot_wing_stations.py OUTPUT_DIR -o stations.png [--marker wing]``
(OUTPUT_DIR holds the ``cp_<marker>.csv`` that ``gpusolver run`` writes: face centres x,
y, z and Cp). Stations at 20, 44, 65, 80, 90, 95 and 99% of the semi-span of
``meshorder generate oneram6``; -Cp upwards, upper surface solid, lower dashed.
"""

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from gpusolver.monitors.forces import span_station
from meshorder.onera_m6 import SEMI_SPAN, planform

STATIONS = (0.20, 0.44, 0.65, 0.80, 0.90, 0.95, 0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--marker", default="wing")
    parser.add_argument("--width", type=float, default=0.01,
                        help="band of face centres around each station, in semi-spans")
    args = parser.parse_args()
    data = np.genfromtxt(args.directory / f"cp_{args.marker}.csv", delimiter=",", names=True)
    centres = np.stack([data["x"], data["y"], data["z"]])
    root, tip, tip_leading_edge = planform()
    fig, axes = plt.subplots(2, math.ceil(len(STATIONS) / 2), figsize=(14, 6.5))
    for ax, eta in zip(axes.flat, STATIONS, strict=False):
        x, cp, upper = span_station(centres, data["cp"], eta * SEMI_SPAN,
                                    eta * tip_leading_edge, root + eta * (tip - root),
                                    args.width * SEMI_SPAN)
        ax.plot(x[upper], -cp[upper], "k-", label="upper")
        ax.plot(x[~upper], -cp[~upper], "k--", label="lower")
        ax.set_title(f"y/b = {eta:.2f}")
        ax.set_xlabel("x/c")
        ax.set_ylabel("-Cp")
    axes.flat[0].legend()
    for ax in axes.flat[len(STATIONS):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)


if __name__ == "__main__":
    main()
