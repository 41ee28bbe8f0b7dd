"""Case files of the vortex element method (``[solver] method = "vortex"``).

The vortex method needs no mesh, only a body contour, so its case files have their own
sections (:data:`VORTEX_SCHEMA`), checked as strictly as the mesh-based ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from gpusolver.backends import PRECISIONS
from gpusolver.errors import ConfigError
from gpusolver.io.case import LoopSettings
from gpusolver.io.schema import BACKEND, NUMBER, Key, section
from gpusolver.solvers.vortex.biot_savart import METHODS
from gpusolver.solvers.vortex.body import (
    Body,
    body_from_mesh,
    circle,
    naca_airfoil,
    rounded_plate,
)
from gpusolver.solvers.vortex.diffusion import DIFFUSION_SIGNS
from gpusolver.solvers.vortex.restructure import MERGE_SIGNS
from gpusolver.solvers.vortex.solver import VortexSettings

SHAPES = ("circle", "plate", "naca", "mesh")

VORTEX_SCHEMA: dict[str, dict[str, Key]] = {
    "solver": {
        "method": Key(str, ("vortex",), required=True, help="vortex: the vortex element "
                      "method (viscous vortex domains), no mesh"),
    },
    "body": {
        "shape": Key(str, SHAPES, required=True,
                     help="circle, plate (rounded ends), naca (4-digit) or mesh (a marker's "
                          "closed contour)"),
        "panels": Key(int, positive=True, help="panels of a generated shape"),
        "size": Key(NUMBER, default=1.0, positive=True,
                    help="circle: diameter; plate: length; naca: chord"),
        "thickness": Key(NUMBER, default=0.02, positive=True,
                         help="plate: thickness relative to its length"),
        "code": Key(str, default="0012", help="naca: the four digits"),
        "file": Key(str, help="mesh: the mesh file, relative to the case file"),
        "marker": Key(str, help="mesh: the boundary marker of the body"),
    },
    "flow": {
        "reynolds": Key(NUMBER, required=True, positive=True,
                        help="speed x reference length / viscosity"),
        "speed": Key(NUMBER, default=1.0, positive=True, help="free-stream speed"),
        "aoa_deg": Key(NUMBER, default=0.0, help="free-stream angle to the x axis"),
        "reference_length": Key(NUMBER, positive=True,
                                help="length of the Reynolds number and the coefficients "
                                     "(default: the body's extent in x)"),
    },
    "vortex": {
        "dt": Key(NUMBER, required=True, positive=True, help="time step"),
        "per_panel": Key(int, default=1, positive=True, help="new elements per panel and step"),
        "core": Key(NUMBER, positive=True, help="core radius (default: the mean panel length)"),
        "merge_radius": Key(NUMBER, positive=True,
                            help="merging radius near the body (default: 0.3 panel lengths)"),
        "merge_growth": Key(NUMBER, default=1.0,
                            help="growth of the merging radius per reference length from the "
                                 "body"),
        "merge_signs": Key(str, MERGE_SIGNS, "any",
                           help="merge pairs of any sign (any) or of one sign only (same)"),
        "diffusion_signs": Key(str, DIFFUSION_SIGNS, "same",
                               help="the diffusive velocity from the vorticity of the "
                                    "element's sign (same) or of all elements (any)"),
        "radius_floor": Key(NUMBER, positive=True,
                            help="smallest domain radius (default: sqrt(10 nu dt), at most 2 panel "
                                 "lengths)"),
        "far_distance": Key(NUMBER, default=20.0, positive=True,
                            help="elements beyond this many reference lengths go"),
        "velocity": Key(str, METHODS, "direct", help="Biot-Savart sum: direct or tree"),
        "theta": Key(NUMBER, default=0.5, positive=True, below_one=True,
                     help="tree: accuracy parameter"),
    },
    "run": {
        "backend": BACKEND,
        "precision": Key(str, tuple(PRECISIONS), "fp64",
                         help="velocities and diffusion sums (generation and restructuring "
                              "are fp64)"),
        "steps": Key(int, default=1000, positive=True, help="steps of this run"),
        "restart": Key(str, help="checkpoint.npz to continue from (loads are appended)"),
    },
    "output": {
        "directory": Key(str, default="out", help="output folder, relative to the case file"),
        "checkpoint_every": Key(int, default=1000, positive=True,
                                help="steps between checkpoints"),
        "snapshot_every": Key(int, default=1000, positive=True,
                              help="steps between wake snapshots (VTU point clouds)"),
    },
}


@dataclass(frozen=True)
class VortexCase:
    """A validated vortex case: the body, the settings, and what the run writes."""

    path: Path
    body: Body
    settings: VortexSettings
    backend: str
    steps: int
    restart: Path | None
    output_directory: Path
    checkpoint_every: int
    snapshot_every: int
    #: The System that runs it (:data:`gpusolver.systems.SYSTEMS`).
    method: str = "vortex"

    @property
    def loop(self) -> LoopSettings:
        """What the run loop reads of this case (a log row per step, no residuals)."""
        return LoopSettings(self.steps, self.restart, self.output_directory,
                            self.checkpoint_every)


def _body(spec: dict, source: str, base: Path) -> Body:
    shape = spec["shape"]
    where = f"{source}: [body]"
    if shape == "mesh":
        if spec["file"] is None or spec["marker"] is None:
            raise ConfigError(f"{where} shape = 'mesh' needs file and marker")
        from meshorder import read_mesh
        return body_from_mesh(read_mesh(base / spec["file"]), spec["marker"])
    if spec["panels"] is None:
        raise ConfigError(f"{where} shape = {shape!r} needs panels")
    size, panels = float(spec["size"]), spec["panels"]
    if shape == "circle":
        return circle(panels, size / 2)
    if shape == "plate":
        return _scaled(rounded_plate(panels, 1.0, float(spec["thickness"])), size)
    return _scaled(naca_airfoil(spec["code"], panels), size)


def _scaled(body: Body, size: float) -> Body:
    return Body(body.vertices * size)


def parse_vortex_case(data: dict, path: Path) -> VortexCase:
    """Validate a parsed TOML document of a vortex case."""
    source = str(path)
    unknown = sorted(set(data) - set(VORTEX_SCHEMA))
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {', '.join(unknown)} for method "
                          f"'vortex'; valid: {', '.join(VORTEX_SCHEMA)}")
    s = {name: section(data, name, source, VORTEX_SCHEMA) for name in VORTEX_SCHEMA}
    base = path.parent
    flow, vortex, run, output = s["flow"], s["vortex"], s["run"], s["output"]
    angle = math.radians(float(flow["aoa_deg"]))
    speed = float(flow["speed"])

    def optional(value):
        return None if value is None else float(value)

    settings = VortexSettings(
        reynolds=float(flow["reynolds"]), dt=float(vortex["dt"]),
        free_stream=(speed * math.cos(angle), speed * math.sin(angle)),
        reference_length=optional(flow["reference_length"]), core=optional(vortex["core"]),
        merge_radius=optional(vortex["merge_radius"]),
        merge_growth=float(vortex["merge_growth"]), merge_signs=vortex["merge_signs"],
        diffusion_signs=vortex["diffusion_signs"],
        radius_floor=optional(vortex["radius_floor"]),
        far_distance=float(vortex["far_distance"]), per_panel=vortex["per_panel"],
        method=vortex["velocity"], theta=float(vortex["theta"]),
        precision=run["precision"])
    return VortexCase(
        path=path, body=_body(s["body"], source, base), settings=settings,
        backend=run["backend"], steps=run["steps"],
        restart=None if run["restart"] is None else base / run["restart"],
        output_directory=base / output["directory"],
        checkpoint_every=output["checkpoint_every"], snapshot_every=output["snapshot_every"])

