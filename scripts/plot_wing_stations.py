"""Cp of an ONERA M6 run at the span stations of the experiment, one panel each.

Usage: ``python scripts/plot_wing_stations.py OUTPUT_DIR -o stations.png [--marker wing]
[--measured cases/reference/oneram6_test2308_cp.csv] [--label "this run"]``

OUTPUT_DIR holds the ``cp_<marker>.csv`` that ``gpusolver run`` writes (face centres x,
y, z and Cp). Stations of ``meshorder generate oneram6``'s semi-span: those of the
measured file (Schmitt and Charpin's 20, 44, 65, 80, 90, 96 and 99%), -Cp upwards, upper
surface solid, lower dashed, measured points as dots. Prints a markdown table of the RMS
difference from the measured Cp at each station.
"""

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from gpusolver.monitors.sections import (
    read_measured_sections,
    section_difference,
    span_station,
)
from meshorder.onera_m6 import SEMI_SPAN, planform

MEASURED = Path(__file__).resolve().parents[1] / "cases" / "reference" / "oneram6_test2308_cp.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--marker", default="wing")
    parser.add_argument("--measured", type=Path, default=MEASURED)
    parser.add_argument("--label", default="computed")
    parser.add_argument("--width", type=float, default=0.01,
                        help="band of face centres around each station, in semi-spans")
    args = parser.parse_args()
    data = np.genfromtxt(args.directory / f"cp_{args.marker}.csv", delimiter=",", names=True)
    centres = np.stack([data["x"], data["y"], data["z"]])
    measured = read_measured_sections(args.measured)
    root, tip, tip_leading_edge = planform()
    fig, axes = plt.subplots(2, math.ceil(len(measured) / 2), figsize=(15, 6.5))
    print("| y/b | faces | RMS Cp difference |\n| --- | --- | --- |")
    for ax, (eta, section) in zip(axes.flat, measured.items(), strict=False):
        x, cp, upper = span_station(centres, data["cp"], eta * SEMI_SPAN,
                                    eta * tip_leading_edge, root + eta * (tip - root),
                                    args.width * SEMI_SPAN)
        print(f"| {eta:.2f} | {x.size} | {section_difference(x, cp, upper, section):.3f} |")
        ax.plot(x[upper], -cp[upper], "k-", lw=1, label=f"{args.label}, upper")
        ax.plot(x[~upper], -cp[~upper], "k--", lw=1, label=f"{args.label}, lower")
        for surface, marker in (("upper", "o"), ("lower", "s")):
            x_measured, cp_measured = section[surface]
            ax.plot(x_measured, -cp_measured, "r" + marker, ms=3, mfc="none",
                    label=f"Schmitt and Charpin, {surface}")
        ax.set_title(f"y/b = {eta:.2f}")
        ax.set_xlabel("x/c")
        ax.set_ylabel("-Cp")
    axes.flat[0].legend(fontsize=7)
    for ax in axes.flat[len(measured):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)


if __name__ == "__main__":
    main()
