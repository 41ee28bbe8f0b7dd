"""The NACA 0012 RANS runs against NASA TMR's data: Cp and Cf along the upper surface, and
CL, CD against CFL3D's on TMR's 897x257 grid.

Usage: ``python scripts/plot_naca0012_rans.py 0:out/sa0 10:out/sa10 15:out/sa15
[--model sa] [-o naca0012_rans.png]``: each ``ALPHA:FOLDER`` is a finished ``gpusolver
run`` of ``cases/naca0012_sa.toml`` (or ``_sst``) at that angle (its ``cp_*.csv``,
``cf_*.csv`` and ``forces.csv``). CFL3D's curves and coefficients are TMR's
(``../shared/meshes/tmr/naca0012/validation/n0012c[pf]_cfl3d_*.dat``, with the point
vortex far field); the measured Cp is Gregory and O'Reilly's (upper surface, Re 2.88
million). Prints one row per angle.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

VALIDATION = (Path(__file__).resolve().parents[2] / "shared" / "meshes" / "tmr" / "naca0012"
              / "validation")
#: CFL3D on 897x257 (TMR's NACA 0012 validation page): alpha -> (CL, CD).
CFL3D = {"sa": {0: (0.0, 0.00819), 10: (1.0909, 0.01231), 15: (1.5461, 0.02124)},
         "sst": {0: (0.0, 0.00828), 10: (1.0778, 0.01245), 15: (1.5060, 0.02224)}}
#: TMR's file name of each model's CFL3D data (our SST is TMR's SST-V).
FILES = {"sa": "sa", "sst": "sstv"}


def tecplot_zones(path: Path) -> dict[str, np.ndarray]:
    """The zones of a TMR (Tecplot-style) data file by title: ``(n, 2)`` each."""
    zones, title, rows = {}, None, []
    for line in path.read_text().splitlines():
        text = line.strip()
        if text.lower().startswith("zone"):
            if title is not None:
                zones[title] = np.array(rows)
            title, rows = text.split('"')[1], []
        elif text and text[0] not in "#v" and title is not None:
            rows.append([float(v) for v in text.split()[:2]])
    if title is not None:
        zones[title] = np.array(rows)
    return zones


def wall_rows(folder: Path, prefix: str) -> dict[str, np.ndarray]:
    """The columns of a run's ``<prefix>_<wall>.csv``."""
    (path,) = sorted(folder.glob(f"{prefix}_*.csv"))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="ALPHA:FOLDER of each run")
    parser.add_argument("--model", choices=sorted(CFL3D), default="sa")
    parser.add_argument("-o", "--output", type=Path, default=Path("naca0012_rans.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted((int(a), Path(folder)) for a, folder in (r.split(":") for r in args.runs))
    cp_ref = tecplot_zones(VALIDATION / f"n0012cp_cfl3d_{FILES[args.model]}.dat")
    cf_ref = tecplot_zones(VALIDATION / f"n0012cf_cfl3d_{FILES[args.model]}.dat")
    measured = tecplot_zones(VALIDATION / "CP_Gregory_expdata.dat")
    figure, axes = plt.subplots(2, len(runs), figsize=(4.5 * len(runs), 7), squeeze=False)
    print("| alpha | CL | CFL3D CL (897x257) | CD | CFL3D CD (897x257) |")
    print("| --- | --- | --- | --- | --- |")
    for k, (alpha, folder) in enumerate(runs):
        with open(folder / "forces.csv", newline="") as f:
            total = next(r for r in csv.DictReader(f) if r["marker"] == "total")
        cl, cd = float(total["cl"]), float(total["cd"])
        ref_cl, ref_cd = CFL3D[args.model][alpha]
        print(f"| {alpha} | {cl:.4f} | {ref_cl:.4f} | {cd:.5f} | {ref_cd:.5f} "
              f"({100 * (cd / ref_cd - 1):+.1f}%) |")
        cp, cf = wall_rows(folder, "cp"), wall_rows(folder, "cf")
        name = f"alpha={alpha}"
        ax = axes[0, k]  # both surfaces, in the file's order along the wall
        ax.plot(cp["x"], cp["cp"], "-", label="gpusolver 225x65")
        ax.plot(*cp_ref[name].T, "--", label="CFL3D 897x257")
        if name in measured:
            ax.plot(*measured[name].T, "o", ms=3, label="Gregory & O'Reilly")
        ax.invert_yaxis()
        ax.set(title=f"{args.model.upper()}, alpha {alpha}", xlabel="x/c", ylabel="Cp")
        ax.legend(fontsize=7)
        ax = axes[1, k]  # the upper surface (the airfoil lies along x; the flow turns)
        top = cf["y"] >= 0
        order = np.argsort(cf["x"][top])
        ax.plot(cf["x"][top][order], cf["cf"][top][order], "-", label="gpusolver 225x65")
        ax.plot(*cf_ref[f"{name}, upper surface"].T, "--", label="CFL3D 897x257")
        ax.set(xlabel="x/c", ylabel="Cf", ylim=(-0.005, 0.03))
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
