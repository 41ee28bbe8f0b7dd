"""The vortex method's Blasius plate by the finite-volume Navier-Stokes solver: a second
opinion on the finite plate's boundary layer.

Usage::

    python scripts/finite_plate_fv.py mesh plate.msh [--wall 0.002] [--layer 0.004] [--mach 0.2]
    gpusolver run plate.toml
    python scripts/finite_plate_fv.py profile plate.msh out/checkpoint.npz [more.npz ...] \\
        [--mach 0.2] [--vortex blasius.csv] [--csv profile.csv] [--png profile.png]

``mesh`` writes the plate of ``scripts/vortex_blasius.py`` (length 1 from x = 0, relative
thickness 2%, semicircular ends) in a circular far field 20 lengths out, triangles of
``--wall`` on the plate growing to ``--layer`` within 0.2 of it, and beside it a case
(``plate.toml``): laminar Navier-Stokes at Re_L = 1000 and Mach 0.2 (``--mach``), second
order without a limiter (the flow is smooth), Newton-Krylov to nine orders down (28 steps
on 127k triangles). ``profile`` reads the converged state (or the mean of several) and
prints, at the
vortex script's stations across the upper boundary layer at x = L/3, ``u/U`` and
``v sqrt(Re_x)/U`` against the Blasius profile, and, given the vortex script's csv, the
vortex method's against this solution: the finite plate at Re_L = 1000 is not the
semi-infinite plate of the similarity solution, so the two measures differ.
"""

import argparse
from pathlib import Path

import numpy as np
from scipy.interpolate import LinearNDInterpolator
from vortex_blasius import STATION, THICKNESS, blasius

from gpusolver.physics.gas import Gas
from meshorder.io.read import read_mesh

REYNOLDS = 1000.0
MACH = 0.2
FAR = 20.0

CASE = """# The Blasius plate of scripts/vortex_blasius.py, by finite volumes (made by
# scripts/finite_plate_fv.py mesh)
[mesh]
file = "{mesh}"

[physics]
equations = "navier-stokes"
mach = {mach}
reynolds = {reynolds}

[boundaries]
plate = "no-slip-adiabatic"
farfield = "farfield"

[scheme]
flux = "roe"
order = 2
limiter = "none"

[run]
time_integrator = "newton-krylov"
cfl = 10
cfl_max = 1e5
iterations = 150
residual_reduction = 1e-9

[output]
directory = "out"
checkpoint_every = 250
"""


def make_mesh(path: Path, wall: float, layer: float) -> int:
    """The plate in its far field as a gmsh 4.1 file (markers ``plate``, ``farfield``);
    returns the number of triangles."""
    import gmsh

    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        g = gmsh.model.geo
        r = THICKNESS / 2
        corners = [g.addPoint(r, -r, 0), g.addPoint(1 - r, -r, 0), g.addPoint(1 - r, r, 0),
                   g.addPoint(r, r, 0)]
        ends = [g.addPoint(1 - r, 0, 0), g.addPoint(r, 0, 0)]
        plate = [g.addLine(corners[0], corners[1]),
                 g.addCircleArc(corners[1], ends[0], corners[2]),
                 g.addLine(corners[2], corners[3]),
                 g.addCircleArc(corners[3], ends[1], corners[0])]
        centre = g.addPoint(0.5, 0, 0)
        ring = [g.addPoint(0.5 + FAR * c, FAR * s, 0)
                for c, s in ((1, 0), (0, 1), (-1, 0), (0, -1))]
        outer = [g.addCircleArc(ring[k], centre, ring[(k + 1) % 4]) for k in range(4)]
        fluid = g.addPlaneSurface([g.addCurveLoop(outer), g.addCurveLoop(plate)])
        g.synchronize()
        gmsh.model.addPhysicalGroup(1, plate, name="plate")
        gmsh.model.addPhysicalGroup(1, outer, name="farfield")
        gmsh.model.addPhysicalGroup(2, [fluid], name="fluid")
        field = gmsh.model.mesh.field
        distance = field.add("Distance")
        field.setNumbers(distance, "CurvesList", plate)
        field.setNumber(distance, "Sampling", 400)
        near = field.add("Threshold")  # wall size at the plate, free beyond 0.05
        for name, value in (("InField", distance), ("SizeMin", wall), ("SizeMax", 100.0),
                            ("DistMin", 0.01), ("DistMax", 0.05)):
            field.setNumber(near, name, value)
        region = field.add("Threshold")  # the layer's size to 0.2, growing to the far field
        for name, value in (("InField", distance), ("SizeMin", layer), ("SizeMax", 1.5),
                            ("DistMin", 0.2), ("DistMax", FAR)):
            field.setNumber(region, name, value)
        smallest = field.add("Min")
        field.setNumbers(smallest, "FieldsList", [near, region])
        field.setAsBackgroundMesh(smallest)
        for name in ("MeshSizeExtendFromBoundary", "MeshSizeFromPoints",
                     "MeshSizeFromCurvature"):
            gmsh.option.setNumber(f"Mesh.{name}", 0)
        gmsh.option.setNumber("Mesh.Algorithm", 6)
        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.write(str(path))
        return sum(len(tags) for tags in gmsh.model.mesh.getElements(2)[1])
    finally:
        gmsh.finalize()


def fv_profile(mesh_path: Path, checkpoints: list[Path], eta: np.ndarray, mach: float):
    """``u/U`` and ``v sqrt(Re_x)/U`` at ``eta`` across the upper layer at x = L/3
    (linear interpolation between cell centres) of the mean of ``checkpoints``' velocities."""
    mesh = read_mesh(mesh_path)
    velocities = []
    for checkpoint in checkpoints:
        with np.load(checkpoint) as data:
            conserved = data["conserved"]
        velocities.append(conserved[1:3] / conserved[0])
    centres = mesh.centroids()[:, :2]
    scale = np.sqrt(STATION / REYNOLDS)
    y = THICKNESS / 2 + eta * scale
    near = ((np.abs(centres[:, 0] - STATION) < 0.05) & (centres[:, 1] > 0)
            & (centres[:, 1] < y[-1] + 0.05))
    speed = Gas(dim=2, mach=mach, reynolds=REYNOLDS).free_stream[1]
    velocity = np.mean(velocities, axis=0)[:, near] / speed
    points = np.column_stack([np.full_like(y, STATION), y])
    u, v = (LinearNDInterpolator(centres[near], component)(points)
            for component in velocity)
    return u, v * np.sqrt(REYNOLDS * STATION)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    mesh = commands.add_parser("mesh", help="the plate's mesh and its case")
    mesh.add_argument("out", type=Path)
    mesh.add_argument("--wall", type=float, default=0.002)
    mesh.add_argument("--layer", type=float, default=0.004)
    mesh.add_argument("--mach", type=float, default=MACH)
    profile = commands.add_parser("profile", help="the converged boundary layer at x = L/3")
    profile.add_argument("mesh", type=Path)
    profile.add_argument("checkpoints", type=Path, nargs="+")
    profile.add_argument("--mach", type=float, default=MACH, help="the case's Mach number")
    profile.add_argument("--vortex", type=Path, help="csv of scripts/vortex_blasius.py")
    profile.add_argument("--csv", type=Path, help="the profiles, one row per station")
    profile.add_argument("--png", type=Path)
    args = parser.parse_args()
    if args.command == "mesh":
        n = make_mesh(args.out, args.wall, args.layer)
        case = args.out.with_suffix(".toml")
        case.write_text(CASE.format(mesh=args.out.name, mach=args.mach, reynolds=REYNOLDS))
        print(f"{args.out}: {n} triangles; case {case}")
        return
    vortex = (np.genfromtxt(args.vortex, delimiter=",", names=True) if args.vortex
              else None)
    eta = vortex["eta"] if vortex is not None else np.linspace(0.25, 8.0, 32)
    u, v = fv_profile(args.mesh, args.checkpoints, eta, args.mach)
    u_exact, v_exact = blasius(eta)
    print(f"finite volumes against Blasius: max |u - f'| {np.abs(u - u_exact).max():.3f}, "
          f"max |v sqrt(Re_x) - (eta f' - f)/2| {np.abs(v - v_exact).max():.3f}; "
          f"u/U at eta = {eta[-1]:g}: {u[-1]:.3f}")
    if vortex is not None:
        print(f"vortex method against finite volumes: max |du| "
              f"{np.abs(vortex['u'] - u).max():.3f}, max |dv| sqrt(Re_x) "
              f"{np.abs(vortex['v_sqrt_re_x'] - v).max():.3f}")
    if args.csv:
        columns = {"eta": eta, "u_fv": u, "v_fv": v, "u_blasius": u_exact,
                   "v_blasius": v_exact}
        if vortex is not None:
            columns |= {"u_vortex": vortex["u"], "v_vortex": vortex["v_sqrt_re_x"]}
        np.savetxt(args.csv, np.column_stack(list(columns.values())), delimiter=",",
                   header=",".join(columns), comments="", fmt="%.6g")
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        figure, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
        for axis, fv, exact, column, label in (
                (axes[0], u, u_exact, "u", "u / U"),
                (axes[1], v, v_exact, "v_sqrt_re_x", "v sqrt(Re_x) / U")):
            axis.plot(exact, eta, "k-", label="Blasius")
            axis.plot(fv, eta, "s", ms=4, mfc="none", label="finite volumes, finite plate")
            if vortex is not None:
                axis.plot(vortex[column], eta, "o", ms=4, label="vortex method")
            axis.set_xlabel(label)
        axes[0].set_ylabel("eta")
        axes[0].legend()
        figure.suptitle("Plate 2%, Re_L 1000, x = L/3")
        figure.tight_layout()
        figure.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
