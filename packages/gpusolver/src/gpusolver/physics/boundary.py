"""Boundary conditions as ghost states, registered by the name used in case files.

A condition maps the interior primitive state at a boundary face ``w`` (``(n_vars,
m)``) and the outward unit normal ``n`` to a ghost state; the face flux is then the
ordinary numerical flux between the two. ``periodic`` is handled by the
discretisation (its ghost is the state at the partner face).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpusolver.backends import array_module
from gpusolver.backends.ids import Condition as KernelCondition
from gpusolver.errors import ConfigError
from gpusolver.physics.gas import Gas, stack
from meshorder.registry import Registry

#: Condition name -> :class:`Condition`.
CONDITIONS: Registry = Registry("boundary condition")


@dataclass(frozen=True)
class Condition:
    """A boundary condition.

    Attributes
    ----------
    name : str
    ghost : callable
        ``ghost(gas, w, normal, params) -> w_ghost``.
    wall : bool
        Forces and Cp are reported on markers with wall conditions.
    viscous_wall : bool
        No-slip: the viscous flux uses the wall distance, not the ghost mirror.
    options : dict of str to str
        Extra keys a case file may give, with their meaning.
    summary : str
        One line for the case-file reference (default: the first line of ``ghost``'s
        docstring).
    """

    name: str
    ghost: Callable
    wall: bool = False
    viscous_wall: bool = False
    options: dict[str, str] = field(default_factory=dict)
    summary: str = ""


def _register(name: str, **kwargs):
    def add(function):
        CONDITIONS[name] = Condition(name, function, **kwargs)
        return function
    return add


def _with_velocity(w, velocity):
    return stack(w, [w[:1], velocity, w[-1:]])


def _mirror(w, normal):
    un = (w[1:-1] * normal).sum(axis=0)
    return _with_velocity(w, w[1:-1] - 2.0 * un * normal)


@_register("slip-wall", wall=True)
def slip_wall(gas: Gas, w, normal, params):
    """Inviscid wall: the normal velocity is mirrored, density and pressure kept."""
    return _mirror(w, normal)


@_register("symmetry")
def symmetry(gas: Gas, w, normal, params):
    """Symmetry plane: a mirror image of the interior."""
    return _mirror(w, normal)


def _wall_velocity(gas: Gas, w, params):
    xp = array_module(w)
    velocity = params.get("velocity", [0.0] * gas.dim)
    return xp.asarray(velocity, dtype=w.dtype)[:, None] + 0.0 * w[1:-1]


_WALL_OPTIONS = {"velocity": "wall velocity vector, default 0"}


@_register("no-slip-adiabatic", wall=True, viscous_wall=True, options=_WALL_OPTIONS)
def no_slip_adiabatic(gas: Gas, w, normal, params):
    """No-slip wall without heat flux: velocity reflected about the wall velocity."""
    return _with_velocity(w, 2.0 * _wall_velocity(gas, w, params) - w[1:-1])


@_register("no-slip-isothermal", wall=True, viscous_wall=True,
           options=_WALL_OPTIONS | {"temperature": "wall temperature / free-stream, default 1"})
def no_slip_isothermal(gas: Gas, w, normal, params):
    """No-slip wall at a fixed temperature (ghost temperature mirrored about it)."""
    xp = array_module(w)
    wall_t = params.get("temperature", 1.0)
    temperature = xp.maximum(2.0 * wall_t - gas.temperature(w), 0.5 * wall_t)
    rho = gas.gamma * w[-1] / temperature
    return stack(w, [rho[None], 2.0 * _wall_velocity(gas, w, params) - w[1:-1], w[-1:]])


def _free_stream_like(gas: Gas, w):
    xp = array_module(w)
    return xp.asarray(gas.free_stream, dtype=w.dtype)[:, None] + 0.0 * w


def characteristic_ghost(gas: Gas, w, normal, outside):
    """Ghost state of a characteristic far field with the outside primitive state ``outside``.

    Linearised about the interior state (Blazek sec. 8.4): the outgoing acoustic
    invariant ``p + rho0 c0 u.n`` comes from the interior and the incoming
    ``p - rho0 c0 u.n`` from outside; entropy and tangential velocity are upwinded
    (outside where the flow enters, interior where it leaves). Supersonic inflow takes
    the outside state, supersonic outflow the interior. Unlike Riemann invariants with
    the local sound speed, an entropy wave leaves without reflecting a pressure wave.
    """
    xp = array_module(w)
    rho0, c0 = w[0], gas.sound_speed(w)
    impedance = rho0 * c0
    un_in = (w[1:-1] * normal).sum(axis=0)
    un_out = (outside[1:-1] * normal).sum(axis=0)
    pressure = 0.5 * (w[-1] + outside[-1] + impedance * (un_in - un_out))
    un = 0.5 * (un_in + un_out) + (w[-1] - outside[-1]) / (2.0 * impedance)
    outflow = un_in > 0
    upstream = xp.where(outflow, w, outside)
    un_up = xp.where(outflow, un_in, un_out)
    subsonic = stack(w, [(upstream[0] + (pressure - upstream[-1]) / (c0 * c0))[None],
                         upstream[1:-1] + (un - un_up) * normal, pressure[None]])
    supersonic = xp.abs(un_in) >= c0
    return xp.where(supersonic, upstream, subsonic)


@_register("farfield", options={
    "vortex": "true: add to the free stream the point vortex of the current lift (2-D, "
              "subsonic), default false",
    "centre": "position of that vortex, default [0.25, 0] (quarter chord)"})
def farfield(gas: Gas, w, normal, params):
    """Characteristic far field about the free stream (:func:`characteristic_ghost`).

    With ``vortex = true`` the discretisation passes the vortex-corrected outside
    state instead (:mod:`gpusolver.physics.vortex_farfield`).
    """
    return characteristic_ghost(gas, w, normal, _free_stream_like(gas, w))


@_register("supersonic-inflow")
def supersonic_inflow(gas: Gas, w, normal, params):
    """Every variable imposed: the free stream."""
    return _free_stream_like(gas, w)


@_register("supersonic-outflow")
def supersonic_outflow(gas: Gas, w, normal, params):
    """Every variable extrapolated from the interior."""
    return w


@_register("pressure-outlet", options={"pressure": "static pressure / free-stream, default 1"})
def pressure_outlet(gas: Gas, w, normal, params):
    """Subsonic outlet: static pressure imposed, the rest extrapolated.

    Where the outflow is supersonic everything is extrapolated.
    """
    xp = array_module(w)
    pressure = params.get("pressure", 1.0) / gas.gamma
    un = (w[1:-1] * normal).sum(axis=0)
    subsonic = un < gas.sound_speed(w)
    return stack(w, [w[:-1], xp.where(subsonic, pressure + 0.0 * w[-1], w[-1])[None]])


@_register("total-pressure-inflow", options={
    "total_pressure": "total pressure / free-stream static pressure, default the free "
                      "stream's",
    "total_temperature": "total temperature / free-stream temperature, default the free "
                         "stream's"})
def total_pressure_inflow(gas: Gas, w, normal, params):
    """Subsonic inflow at given total pressure and temperature along the free stream's
    direction, the static pressure from the interior (NASA TMR's inflow, CFL3D's 2009).
    """
    xp = array_module(w)
    g = gas.gamma
    total_p, total_t = _inflow_totals(gas, params)
    pressure = xp.minimum(w[-1], total_p)
    # (p0 / p)^((g - 1) / g) - 1 without the cancellation near p0 (fp32)
    mach2 = 2.0 / (g - 1.0) * xp.expm1((g - 1.0) / g * xp.log1p((total_p - pressure) / pressure))
    temperature = total_t / (1.0 + 0.5 * (g - 1.0) * mach2)
    speed = (mach2 * temperature) ** 0.5  # c^2 = T in these units
    direction = xp.asarray(gas.flow_direction, dtype=w.dtype)[:, None]
    return stack(w, [(g * pressure / temperature)[None], speed * direction, pressure[None]])


def _inflow_totals(gas: Gas, params) -> tuple[float, float]:
    """A total-pressure inflow's total pressure and temperature (nondimensional: over
    ``gamma`` times the free stream's static pressure, over its temperature)."""
    g = gas.gamma
    stream = 1.0 + 0.5 * (g - 1.0) * gas.mach**2
    return (params.get("total_pressure", stream ** (g / (g - 1.0))) / g,
            params.get("total_temperature", stream))


CONDITIONS["periodic"] = Condition(
    "periodic", supersonic_outflow,
    options={"partner": "marker whose faces are the translated copies of these"},
    summary="Periodic pair: the ghost is the state at the partner marker's matching face.")


#: Condition name -> how the kernels make its ghost state (:class:`gpusolver.backends.ids.
#: Condition`, ``enum Condition`` of the kernels).
CONDITION_CODES = {"slip-wall": KernelCondition.MIRROR, "symmetry": KernelCondition.MIRROR,
                   "no-slip-adiabatic": KernelCondition.NO_SLIP_ADIABATIC,
                   "no-slip-isothermal": KernelCondition.NO_SLIP_ISOTHERMAL,
                   "farfield": KernelCondition.FARFIELD,
                   "supersonic-inflow": KernelCondition.IMPOSED,
                   "supersonic-outflow": KernelCondition.EXTRAPOLATED,
                   "pressure-outlet": KernelCondition.PRESSURE_OUTLET,
                   "total-pressure-inflow": KernelCondition.TOTAL_PRESSURE_INFLOW,
                   "periodic": KernelCondition.PERIODIC}


def kernel_condition(gas: Gas, spec) -> tuple[int, np.ndarray]:
    """What the kernels' ghost states read of a boundary (a ``BoundarySpec``): its
    condition code and values ``(n_vars, 1)`` (broadcast over the boundary's faces): the
    outside state (far field, supersonic inflow), the wall temperature and velocity
    (no-slip), the outlet pressure in the last place (pressure outlet), the total
    temperature, flow direction and total pressure (total-pressure inflow), zeros
    otherwise.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> wall = SimpleNamespace(condition=CONDITIONS["no-slip-isothermal"],
    ...                        params={"temperature": 1.2})
    >>> code, value = kernel_condition(Gas(dim=2, mach=0.5), wall)
    >>> code, value.ravel().tolist()
    (2, [1.2, 0.0, 0.0, 0.0])
    """
    name, params = spec.condition.name, spec.params
    value = np.zeros(gas.n_vars)
    if name in ("farfield", "supersonic-inflow"):
        value[:] = gas.free_stream
    elif name.startswith("no-slip"):
        value[0] = params.get("temperature", 1.0)
        value[1:-1] = params.get("velocity", [0.0] * gas.dim)
    elif name == "pressure-outlet":
        value[-1] = params.get("pressure", 1.0) / gas.gamma
    elif name == "total-pressure-inflow":
        value[-1], value[0] = _inflow_totals(gas, params)
        value[1:-1] = gas.flow_direction
    return int(CONDITION_CODES[name]), value[:, None]


@dataclass(frozen=True)
class BoundarySpec:
    """The condition on one marker, with its options (from the case file)."""

    condition: Condition
    params: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, marker: str, value) -> BoundarySpec:
        """From a case-file value: a condition name or a table with ``type`` and options."""
        table = {"type": value} if isinstance(value, str) else dict(value)
        name = table.pop("type", None)
        if name not in CONDITIONS:
            raise ConfigError(f"boundary {marker!r}: unknown condition {name!r}; valid: "
                              f"{', '.join(CONDITIONS)}")
        condition = CONDITIONS[name]
        unknown = set(table) - set(condition.options)
        if unknown:
            valid = ", ".join(condition.options) or "none"
            raise ConfigError(f"boundary {marker!r} ({name}): unknown option(s) "
                              f"{', '.join(sorted(unknown))}; valid: {valid}")
        return cls(condition, table)


def resolve_markers(markers, boundaries: dict[str, BoundarySpec]) -> dict[str, BoundarySpec]:
    """Each mesh marker's condition: its own entry of ``boundaries``, else the first entry
    (in the case file's order) whose key is a glob pattern that matches it (``*``, ``?``,
    ``[...]`` as :mod:`fnmatch` reads them): gmsh meshes without physical groups name
    each curve or surface apart (``curve_1`` ... ``curve_569``), and
    ``"curve_*" = "slip-wall"`` names them all at once.

    Raises
    ------
    ConfigError
        Naming the markers without a condition and the entries that match no marker.

    Examples
    --------
    >>> specs = {"curve_3": BoundarySpec.parse("curve_3", "farfield"),
    ...          "curve_*": BoundarySpec.parse("curve_*", "slip-wall")}
    >>> {m: s.condition.name for m, s in resolve_markers(["curve_1", "curve_3"], specs).items()}
    {'curve_1': 'slip-wall', 'curve_3': 'farfield'}
    """
    resolved, used = {}, set()
    for marker in markers:
        key = marker if marker in boundaries else next(
            (pattern for pattern in boundaries if fnmatch.fnmatchcase(marker, pattern)), None)
        if key is not None:
            resolved[marker] = boundaries[key]
            used.add(key)
    check_markers(markers, resolved, unused=[key for key in boundaries if key not in used])
    return resolved


def check_markers(markers, boundaries: dict[str, BoundarySpec],
                  unused: list[str] | None = None) -> None:
    """Every mesh marker needs a condition and every condition a marker (``unused``: the
    case's entries that name or match none, when given)."""
    missing = [m for m in markers if m not in boundaries]
    unknown = [m for m in boundaries if m not in markers] if unused is None else unused
    if missing or unknown:
        parts = []
        if unknown:
            parts.append(f"unknown marker(s) {', '.join(unknown)}")
        if missing:
            parts.append(f"no condition for marker(s) {', '.join(missing)}")
        raise ConfigError(f"boundaries: {'; '.join(parts)}; the mesh has markers: "
                          f"{', '.join(markers)}")
