"""Time the exact wall distance of a mesh's cell centres: the GPU kernel on every cell,
the host search on a sample of them, and their largest difference there.

Usage: ``python scripts/time_wall_distance.py MESH --wall wing [--refine 1]
[--sample 20000]``: ``--refine K`` times the mesh refined 0..K times
(:mod:`meshorder.refine`). Needs CuPy and a GPU. Prints one line per size, as in
docs/benchmarks.md's wall distance table.
"""

import argparse
import time

import numpy as np

from gpusolver.backends import get_backend
from gpusolver.layout.wall_distance import wall_distance
from meshorder import Topology, read_mesh
from meshorder.geometry import corner_mean
from meshorder.refine import refine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mesh")
    parser.add_argument("--wall", required=True, help="the wall marker")
    parser.add_argument("--refine", type=int, default=0, help="most refinements")
    parser.add_argument("--sample", type=int, default=20000, help="cells the host searches")
    args = parser.parse_args()
    mesh, gpu = read_mesh(args.mesh), get_backend("cupy")
    for level in range(args.refine + 1):
        fine = refine(mesh, level)
        topology = Topology(fine)
        code = next(k for k, v in fine.marker_names.items() if v == args.wall)
        faces = fine.points[topology.face_nodes[topology.face_marker == code][:, :3]]
        centres = np.concatenate([corner_mean(fine.points[b.nodes]) for b in fine.cells])
        wall_distance(centres[:1000], faces, gpu)  # the kernel's compilation
        start = time.perf_counter()
        distance = wall_distance(centres, faces, gpu)
        gpu_s = time.perf_counter() - start
        check = np.random.default_rng(0).choice(len(centres), min(args.sample, len(centres)),
                                                replace=False)
        start = time.perf_counter()
        host = wall_distance(centres[check], faces)
        host_s = time.perf_counter() - start
        print(f"{fine.n_cells} cells, {len(faces)} wall faces: GPU {gpu_s:.2f} s; host "
              f"search of {len(check)} cells {host_s:.2f} s (all: about "
              f"{host_s * len(centres) / len(check):.0f} s); largest difference "
              f"{np.abs(distance[check] - host).max():.2e}", flush=True)


if __name__ == "__main__":
    main()
