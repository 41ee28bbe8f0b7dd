"""The vortex method's cylinder by the finite-volume Navier-Stokes solver: a second opinion
on the shedding cylinder's drag, split into its pressure and friction parts.

Usage::

    python scripts/cylinder_fv.py mesh cylinder.msh [--around 320] [--wall 0.002]
    python scripts/cylinder_fv.py run cylinder.msh --reynolds 200 [--until 150] \\
        [--csv loads.csv] [--since 50] [--budget 500]

``mesh`` writes a structured O-grid of quadrilaterals (gmsh, transfinite) around the
cylinder of diameter 1 at the origin: ``--around`` cells along the wall, the first
cell ``--wall`` diameters thick, growing geometrically to the circular far field
``--far`` diameters out (markers ``cylinder``, ``farfield``). ``run`` solves the laminar
compressible Navier-Stokes equations at Mach ``--mach`` (0.2: density varies by 2%),
constant viscosity, second order without limiter (the flow is smooth), explicit RK4 at
one fixed time step (``--cfl`` at the start; near the wall the flow is up to twice as
fast, so the CFL number there grows by about a fifth), from the free stream with the
wake kicked sideways once. Every ``--every`` steps it records, in convective time
t U / D, the drag and lift coefficients and the drag's pressure part (the wall faces'
pressure; the rest is friction), and at the end prints the means and the Strouhal number
(from the lift's zero crossings) from ``--since`` on. The compressible solver at Mach 0.2
stands in for incompressible flow: compressibility raises a cylinder's drag by about 2%
there (Prandtl-Glauert).
"""

import argparse
import csv
import time
from pathlib import Path

import numpy as np
from vortex_cylinder import strouhal

from gpusolver.run import build_system
from gpusolver.systems import load_case

#: The radial cells' growth from the wall out (about; fitted to fill the far field).
GROWTH = 1.05

CASE = """# A circular cylinder at Re {reynolds:g}, time-accurate (made by scripts/cylinder_fv.py)
[mesh]
file = "{mesh}"

[physics]
equations = "navier-stokes"
mach = {mach}
reynolds = {reynolds}
viscosity_law = "constant"

[boundaries]
cylinder = "no-slip-adiabatic"
farfield = "farfield"

[scheme]
flux = "roe"
order = 2
limiter = "none"

[run]
backend = "{backend}"
precision = "fp64"
time_integrator = "rk4"
local_time_step = false
cfl = {cfl}
"""


def radial_cells(first: float, span: float, target: float) -> tuple[int, float]:
    """The number of cells ``n`` and the growth ``g`` (near ``target``) whose geometric
    series from a first cell ``first`` fills ``span``: ``first (g^n - 1) / (g - 1)``."""
    n = int(np.ceil(np.log(1 + span * (target - 1) / first) / np.log(target)))
    low, high = 1.0 + 1e-12, target
    for _ in range(100):  # bisection: the series grows with g
        growth = 0.5 * (low + high)
        low, high = ((growth, high) if first * (growth**n - 1) / (growth - 1) < span
                     else (low, growth))
    return n, growth


def make_mesh(path: Path, around: int, wall: float, far: float) -> int:
    """The O-grid (module docstring) as a gmsh 4.1 file; returns its number of cells."""
    import gmsh

    n, growth = radial_cells(wall, far - 0.5, GROWTH)
    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        g = gmsh.model.geo
        centre = g.addPoint(0, 0, 0)
        angles = np.pi / 4 + np.pi / 2 * np.arange(4)
        inner = [g.addPoint(0.5 * np.cos(a), 0.5 * np.sin(a), 0) for a in angles]
        outer = [g.addPoint(far * np.cos(a), far * np.sin(a), 0) for a in angles]
        wall_arcs = [g.addCircleArc(inner[k], centre, inner[(k + 1) % 4]) for k in range(4)]
        far_arcs = [g.addCircleArc(outer[k], centre, outer[(k + 1) % 4]) for k in range(4)]
        rays = [g.addLine(inner[k], outer[k]) for k in range(4)]
        surfaces = []
        for k in range(4):
            loop = g.addCurveLoop([wall_arcs[k], rays[(k + 1) % 4], -far_arcs[k], -rays[k]])
            surfaces.append(g.addPlaneSurface([loop]))
        for curve in wall_arcs + far_arcs:
            g.mesh.setTransfiniteCurve(curve, around // 4 + 1)
        for ray in rays:
            g.mesh.setTransfiniteCurve(ray, n + 1, "Progression", growth)
        for surface in surfaces:
            g.mesh.setTransfiniteSurface(surface)
            g.mesh.setRecombine(2, surface)
        g.synchronize()
        gmsh.model.addPhysicalGroup(1, wall_arcs, name="cylinder")
        gmsh.model.addPhysicalGroup(1, far_arcs, name="farfield")
        gmsh.model.addPhysicalGroup(2, surfaces, name="fluid")
        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.write(str(path))
        return sum(len(tags) for tags in gmsh.model.mesh.getElements(2)[1])
    finally:
        gmsh.finalize()


def kick(solver, strength: float) -> None:
    """Push the near wake sideways once (a bump of cross-stream momentum behind the
    cylinder, ``strength`` times the free-stream speed at its centre) so that the
    symmetric start sheds at once instead of after round-off grows."""
    host = solver.host
    centroid = np.empty_like(host.centroid[:2])  # in the file's cell order, as conserved()
    centroid[:, host.cell_order] = host.centroid[:2]
    x, y = centroid
    u = solver.conserved()
    u[2] += u[0] * strength * solver.gas.free_stream[1] * np.exp(-((x - 1.5)**2 + y**2) / 0.5)
    solver.set_conserved(u)


def pressure_drag(solver, marker: str) -> float:
    """The wall's pressure drag coefficient (on diameter 1) at the last step: each face's
    pressure coefficient times its area along its normal (which points into the body),
    on the flow direction. The rest of the drag is friction."""
    _, cp = solver.surface_pressure(marker)
    host = solver.host
    first, end = host.markers[marker]
    normal_area = host.normal[:2, first:end] * host.area[first:end]
    return float((cp * normal_area).sum(axis=1) @ solver.gas.flow_direction)


def run(mesh: Path, args) -> None:
    case_path = mesh.with_name(f"{mesh.stem}_re{args.reynolds:g}.toml")
    case_path.write_text(CASE.format(mesh=mesh.name, mach=args.mach, reynolds=args.reynolds,
                                     backend=args.backend, cfl=args.cfl))
    solver = build_system(load_case(case_path)).solver
    kick(solver, args.kick)
    # one fixed step, at the CFL number of the (kicked) start: the solver's own global step
    # would take the spectral radius's array code every step
    dt = float(solver.time_step(solver.u))
    gas = solver.gas
    speed = gas.free_stream[1]
    rows, start = [], time.perf_counter()
    convective = 0.0
    while convective < args.until and time.perf_counter() - start < args.budget:
        for _ in range(args.every):
            solver.step(dt)
        convective = solver.time * speed
        total = solver.wall_forces()["total"]
        pressure = pressure_drag(solver, "cylinder")
        rows.append((convective, total.drag, pressure, total.lift))
        if len(rows) % 500 == 0:
            print(f"t {convective:.1f} cd {total.drag:.3f} (pressure {pressure:.3f}) "
                  f"cl {total.lift:+.3f} {time.perf_counter() - start:.0f} s", flush=True)
    history = np.array(rows)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["time", "cd", "cd_pressure", "cl"])
            writer.writerows(history)
    t, cd, cdp, cl = history.T
    late = t >= args.since
    summary = (f"Re {args.reynolds:g}: {len(solver.host.volume)} cells, t {t[-1]:.1f}, "
               f"{solver.iteration} steps, {time.perf_counter() - start:.0f} s")
    if late.sum() < 3:
        print(f"{summary}; too short for means from t {args.since:g}")
        return
    st, spread = strouhal(t[late], cl[late])
    print(f"{summary}; from t {args.since:g}: mean CD {cd[late].mean():.3f} (pressure "
          f"{cdp[late].mean():.3f}, friction {(cd - cdp)[late].mean():.3f}), CL amplitude "
          f"{0.5 * np.ptp(cl[late]):.3f}, St {st:.4f} (+- {spread:.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    mesh = commands.add_parser("mesh", help="the O-grid")
    mesh.add_argument("out", type=Path)
    mesh.add_argument("--around", type=int, default=320, help="cells along the wall")
    mesh.add_argument("--wall", type=float, default=0.002, help="first cell, diameters")
    mesh.add_argument("--far", type=float, default=30.0, help="far field, diameters")
    solve = commands.add_parser("run", help="time-accurate run, loads recorded")
    solve.add_argument("mesh", type=Path)
    solve.add_argument("--reynolds", type=float, required=True)
    solve.add_argument("--mach", type=float, default=0.2)
    solve.add_argument("--cfl", type=float, default=1.5)
    solve.add_argument("--backend", default="auto")
    solve.add_argument("--kick", type=float, default=0.3,
                       help="the wake's sideways push at the start, over the free stream")
    solve.add_argument("--until", type=float, default=150.0, help="t U / D")
    solve.add_argument("--since", type=float, default=50.0, help="means from this t U / D")
    solve.add_argument("--every", type=int, default=20, help="steps between records")
    solve.add_argument("--budget", type=float, default=np.inf, help="wall seconds")
    solve.add_argument("--csv", type=Path)
    args = parser.parse_args()
    if args.command == "mesh":
        if args.around % 4:
            parser.error("--around must be a multiple of 4")
        n = make_mesh(args.out, args.around, args.wall, args.far)
        print(f"{args.out}: {n} quadrilaterals")
        return
    run(args.mesh, args)


if __name__ == "__main__":
    main()
