"""Drag histories of impulsively started cylinders against Koumoutsakos & Leonard (1995).

Usage: ``python scripts/compare_impulsive_starts.py REFERENCE.csv LOADS.csv[=LABEL] ...
[--smooth 0.1] [--from 0.5] [--png out.png]``.

``REFERENCE.csv``: their drag coefficient against ``t U / R`` (R the radius; as
``docs/results/vortex/kl95/``). ``LOADS.csv``: a run of ``scripts/vortex_cylinder.py``
(diameter 1, speed 1: its ``time`` is ``t U / D``, its ``cx`` the drag coefficient on
the diameter). Each run's drag, averaged over windows of ``--smooth`` time units of ``t U /
R`` (single steps' loads are noisy), is read at the reference's times from ``--from`` on.
Prints a markdown table of the largest and the mean absolute difference, and the
difference at the drag's extremes. ``--png`` plots the histories.
"""

import argparse
import csv

import numpy as np


def read_reference(path: str) -> tuple[np.ndarray, np.ndarray]:
    """``t U / R`` and the drag coefficient of a reference file (``#`` comments)."""
    with open(path) as f:
        rows = [row for row in csv.reader(line for line in f if not line.startswith("#"))]
    data = np.array(rows[1:], dtype=float)
    return data[:, 0], data[:, 1]


def read_run(path: str) -> tuple[np.ndarray, np.ndarray]:
    """``t U / R`` and the drag coefficient of every step of a run's loads."""
    with open(path) as f:
        reader = csv.DictReader(f)
        rows = [(float(row["time"]), float(row["cx"])) for row in reader]
    data = np.array(rows)
    return 2.0 * data[:, 0], data[:, 1]


def smoothed(t: np.ndarray, cd: np.ndarray, window: float) -> tuple[np.ndarray, np.ndarray]:
    """Means of ``cd`` over consecutive windows of ``window`` in ``t``, at their centres."""
    edges = np.arange(t[0], t[-1] + window, window)
    which = np.digitize(t, edges) - 1
    counts = np.bincount(which, minlength=len(edges))
    sums = np.bincount(which, cd, minlength=len(edges))
    centres = np.bincount(which, t, minlength=len(edges))
    full = counts > 0
    return centres[full] / counts[full], sums[full] / counts[full]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("runs", nargs="+", help="LOADS.csv or LOADS.csv=LABEL")
    parser.add_argument("--smooth", type=float, default=0.1,
                        help="averaging window in t U / R")
    parser.add_argument("--from", dest="start", type=float, default=0.5,
                        help="compare from this t U / R on (the start's singular drag "
                             "before)")
    parser.add_argument("--png", default=None)
    args = parser.parse_args()
    t_ref, cd_ref = read_reference(args.reference)
    compared = t_ref >= args.start
    print("| run | t U/R compared | max abs difference | mean abs difference | "
          "reference max (t U/R) | run there |")
    print("| --- | --- | --- | --- | --- | --- |")
    curves = []
    for item in args.runs:
        path, _, label = item.partition("=")
        t, cd = smoothed(*read_run(path), args.smooth)
        inside = compared & (t_ref <= t[-1])
        at = np.interp(t_ref[inside], t, cd)
        difference = np.abs(at - cd_ref[inside])
        peak = int(np.argmax(np.where(inside, cd_ref, -np.inf)))
        print(f"| {label or path} | {t_ref[inside][0]:.2f}-{t_ref[inside][-1]:.2f} | "
              f"{difference.max():.3f} | {difference.mean():.3f} | "
              f"{cd_ref[peak]:.3f} ({t_ref[peak]:.2f}) | {np.interp(t_ref[peak], t, cd):.3f} |")
        curves.append((label or path, t, cd))
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot

        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        axes.plot(t_ref, cd_ref, "ko", ms=4, label="Koumoutsakos & Leonard (1995)")
        for label, t, cd in curves:
            axes.plot(t, cd, lw=1.5, label=label)
        axes.set(xlabel="t U / R", ylabel="drag coefficient", xlim=(0, t_ref[-1] + 0.5),
                 ylim=(0, max(2.0, 1.2 * cd_ref.max())))
        axes.legend()
        figure.tight_layout()
        figure.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
