"""The solution methods by name, and case files read by the method they name.

Adding a method is one :class:`~gpusolver.solvers.base.System` subclass and one line of
:data:`SYSTEMS`; ``gpusolver run`` drives it through :func:`gpusolver.run.run_case`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusolver.errors import ConfigError
from gpusolver.io.schema import read_toml
from gpusolver.solvers.base import System
from gpusolver.solvers.dg.system import DGSystem
from gpusolver.solvers.fv.system import FVSystem
from gpusolver.solvers.vortex.system import VortexSystem
from meshorder.registry import Registry

#: ``[solver] method`` -> its System.
SYSTEMS: Registry[type[System]] = Registry("solver method")
SYSTEMS["fv"] = FVSystem
SYSTEMS["dg"] = DGSystem
SYSTEMS["vortex"] = VortexSystem

#: The method of a case file without ``[solver] method``.
DEFAULT_METHOD = "fv"


def system_of(data: dict, path: Path) -> type[System]:
    """The System a parsed case file names (``[solver] method``, default ``fv``)."""
    solver = data.get("solver", {})
    method = solver.get("method", DEFAULT_METHOD) if isinstance(solver, dict) else None
    if method not in SYSTEMS:
        raise ConfigError(f"{path}: [solver] method: unknown value {method!r}; valid: "
                          f"{', '.join(SYSTEMS)}")
    return SYSTEMS[method]


def load_case(path: str | Path) -> Any:
    """Read and validate the case file at ``path`` by its method's schema: a
    :class:`~gpusolver.io.case.Case` (``fv``, ``dg``) or a
    :class:`~gpusolver.solvers.vortex.case.VortexCase`.

    Raises
    ------
    ConfigError
        Naming the file and the offending section, key or value.
    """
    path = Path(path)
    data = read_toml(path)
    return system_of(data, path).parse_case(data, path)
