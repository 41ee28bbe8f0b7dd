"""Time mesh construction, topology and a full plan on a synthetic tetrahedral box.

Usage: python scripts/time_topology.py N  (6*N**3 tetrahedra; N=119 gives about 10.1M)
"""

import resource
import sys
import time

from meshorder.mesh import Mesh
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_cells
from meshorder.topology import Topology


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main(n: int, cells: str) -> None:
    t = time.perf_counter()
    points, block = box_cells(n, n, n, "tetra")
    mesh = Mesh.from_blocks(points, [(block.type, block.nodes, None)], source=f"box{n}")
    print(f"mesh: {mesh.n_cells} tets, {mesh.n_points} points, built+checked in "
          f"{time.perf_counter() - t:.1f}s, peak {peak_gib():.1f} GiB", flush=True)
    t = time.perf_counter()
    topo = Topology(mesh)
    print(f"faces: {topo.n_faces} in {time.perf_counter() - t:.1f}s", flush=True)
    for name in ("cell_graph", "edges", "node_graph", "node_cells"):
        t = time.perf_counter()
        getattr(topo, name)
        print(f"{name}: {time.perf_counter() - t:.1f}s", flush=True)
    print(f"peak after topology {peak_gib():.1f} GiB", flush=True)
    t = time.perf_counter()
    plan = make_plan(mesh, PlanOptions(cells=cells, colour=True, hyperplanes=True), topology=topo)
    print(f"plan ({cells}, colour, hyperplanes): {time.perf_counter() - t:.1f}s "
          f"{plan.metrics['timings']}", flush=True)
    print(f"peak {peak_gib():.1f} GiB", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "rcm")
