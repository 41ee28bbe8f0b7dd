"""Time the block face-flux kernels per ordering and faces per block (on the device).

Usage: ``python3 scripts/block_kernel_sweep.py CELLS OUT.json ORDERING[,ORDERING...]``.
Meshes the swept wing with HXT (16 threads) into ``cache/`` once, then for each
ordering and precision times the atomic kernel, ``block-atomic`` and ``block-colour`` at
256 and 512 faces per block, each checked against the atomic result, and writes the
rows to ``OUT.json`` as they come.
"""

import json
import sys
import time
from pathlib import Path

import cupy
import numpy as np

from gpusolver.backends import get_backend
from gpusolver.bench.flux import time_kernel
from gpusolver.bench.reference import GAMMA, random_state
from gpusolver.layout.faces import FaceLayout
from gpusolver.layout.geometry import build_geometry
from gpusolver.solvers.fv import face_kernels as kernels
from meshorder import Topology, read_mesh
from meshorder.generate import generate
from meshorder.pipeline import PlanOptions, make_plan

BLOCK_SIZES = (256, 512)


def main(cells: int, out: Path, orderings: list[str]) -> None:
    path = Path(f"cache/wing_{cells}.msh")
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        generate("wing", path, cells, threads=16)
    mesh = read_mesh(path)
    topology = Topology(mesh)
    copy = get_backend("cupy").copy_bandwidth()
    print(f"{path}: {mesh.n_cells} cells; copy bandwidth {copy:.0f} GB/s", flush=True)
    rows = []
    for ordering in orderings:
        plan = make_plan(mesh, PlanOptions(cells=ordering), topology=topology)
        tables = {}
        for precision, dtype in (("fp64", np.float64), ("fp32", np.float32)):
            faces = FaceLayout.from_geometry(build_geometry(mesh, plan), dtype)
            state64 = random_state(mesh.n_cells, np.random.default_rng(0))
            state = cupy.asarray(state64.astype(dtype))
            reference = cupy.zeros_like(state)
            kernels.FaceFlux(faces, mesh.n_cells, "atomic")(state, reference, GAMMA)
            runs = [("atomic", 256)] + [(s, b) for b in BLOCK_SIZES
                                        for s in ("block-atomic", "block-colour")]
            for strategy, block in runs:
                runner = kernels.FaceFlux(faces, mesh.n_cells, strategy, block=block, tables=tables)
                residual = cupy.zeros_like(state)
                runner(state, residual, GAMMA)
                error = float(cupy.abs(residual - reference).max() / cupy.abs(reference).max())
                seconds = time_kernel(lambda r=runner, s=state, o=residual: r(s, o, GAMMA), 10)
                row = {"ordering": ordering, "precision": precision, "strategy": strategy,
                       "faces_per_block": block, "ms": seconds * 1e3, "error": error,
                       "ratio_to_copy": faces.minimum_bytes(mesh.n_cells) / seconds / 1e9 / copy}
                if strategy != "atomic":
                    blocks = runner.blocks
                    row["cells_per_face"] = len(blocks.cells) / faces.n_faces
                    row["block_colours"] = blocks.n_block_colours
                rows.append(row)
                print(row, flush=True)
                out.write_text(json.dumps(rows, indent=1))
    print(f"{time.process_time():.0f} s CPU")


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(","))
