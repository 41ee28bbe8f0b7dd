"""Markdown tables of every ordering's metrics on the shared meshes and the demo mesh.

Usage: python scripts/ordering_tables.py > docs/ordering_tables.md
(runs on the CPU; about a minute on a 2-core machine)
"""

import platform
import sys
import time
import warnings
from pathlib import Path

from meshorder import MeshWarning, Topology, read_mesh
from meshorder.cli.common import table
from meshorder.orderings import ORDERINGS
from meshorder.pipeline import PlanOptions, make_plan

ROOT = Path(__file__).resolve().parents[1]
MESHES = [ROOT / "data/naca0012_tri.msh", *sorted((ROOT.parent / "shared/meshes").glob("*/*.*"))]
COLUMNS = ("bandwidth", "mean_span", "sectors_per_warp_fp32", "sectors_per_warp_fp64",
           "colours", "forward_levels")


def main() -> None:
    warnings.simplefilter("ignore", MeshWarning)
    print(f"Machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; faces greedy, with colouring and hyperplanes.\n")
    for path in MESHES:
        if path.suffix in (".md", ".geo"):
            continue
        start = time.perf_counter()
        mesh = read_mesh(path)
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        topology = Topology(mesh)
        topo_s = time.perf_counter() - start
        rows = []
        for name in ORDERINGS:
            plan = make_plan(mesh, PlanOptions(cells=name, colour=True, hyperplanes=True),
                             topology=topology)
            rows.append([name, plan.metrics["timings"][f"cells:{name}"],
                         *(plan.metrics[c] for c in COLUMNS)])
        print(f"### {path.relative_to(path.parents[1])}: {mesh.n_cells} cells, "
              f"{topology.n_faces} faces (read {read_s:.2f} s, topology {topo_s:.2f} s)\n")
        print(table(["ordering", "order_s", *COLUMNS], rows))
        print()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
