"""Generate every reference geometry at one size into a cache folder.

Usage: python scripts/make_meshes.py --cells 1000000 [--only wing,box] [--out cache/meshes]
       [--threads 16]
The small meshes committed in data/ were made by `python scripts/make_meshes.py --small`.
"""

import argparse
from pathlib import Path

from meshorder.generate import GEOMETRIES, generate

ROOT = Path(__file__).resolve().parents[1]

#: (geometry, cells, options, file name) of the meshes shipped in data/.
SMALL = [
    *((("couette", n, {"kind": kind}, f"couette_{kind}_{n}.msh"))
      for kind in ("quad", "tri") for n in (50, 200, 800)),
    ("naca0012-ogrid", 5000, {}, "naca0012_ogrid.msh"),
    ("naca0012-tri", 8000, {}, "naca0012_tri.msh"),
    ("cylinder", 5000, {}, "cylinder.msh"),
    ("flap", 5000, {}, "flap.msh"),
    ("box", 20000, {}, "box.msh"),
    ("wing", 20000, {"prism_layers": 0}, "wing.msh"),
    ("wing", 20000, {}, "wing_prisms.msh"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, help="target cells for every geometry")
    parser.add_argument("--only", default=",".join(GEOMETRIES), help="geometries to make")
    parser.add_argument("--out", type=Path, default=ROOT / "cache/meshes")
    parser.add_argument("--threads", type=int, default=1, help="gmsh threads for 3D meshes")
    parser.add_argument("--small", action="store_true", help="remake the meshes in data/")
    args = parser.parse_args()
    if args.small:
        for name, cells, options, filename in SMALL:
            print(generate(name, ROOT / "data" / filename, cells, **options))
        return
    if not args.cells:
        parser.error("--cells is required unless --small")
    for name in args.only.split(","):
        options = {"threads": args.threads} if name in ("box", "wing") else {}
        print(generate(name, args.out / f"{name}_{args.cells}.msh", args.cells, **options))


if __name__ == "__main__":
    main()
