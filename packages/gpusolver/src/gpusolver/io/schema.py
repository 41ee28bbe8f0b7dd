"""Case-file schemas: typed keys, strict sections, and their markdown tables.

Each solution method declares its sections as ``section -> key ->`` :class:`Key` (the
mesh-based methods through :func:`gpusolver.io.case.mesh_schema`, the vortex method in
:mod:`gpusolver.solvers.vortex.case`) and reads them with :func:`section`: an unknown key
or a bad value stops the run before any work, naming what is valid.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusolver.backends import BACKENDS
from gpusolver.errors import ConfigError


@dataclass(frozen=True)
class Key:
    """One allowed key: its type, allowed values, default, whether required, and its meaning."""

    kind: type | tuple[type, ...]
    choices: tuple | None = None
    default: Any = None
    required: bool = False
    positive: bool = False
    below_one: bool = False
    help: str = ""


NUMBER = (int, float)

#: ``[run] backend`` of every method.
BACKEND = Key(str, BACKENDS, "auto", help="auto: cupy where a GPU is usable")


def _check_value(where: str, key: Key, value: Any) -> Any:
    kinds = key.kind if isinstance(key.kind, tuple) else (key.kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{where}: expected {names}, found {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, found {value!r}")
    if key.choices is not None and value not in key.choices:
        raise ConfigError(f"{where}: unknown value {value!r}; valid: "
                          f"{', '.join(map(str, key.choices))}")
    if key.positive and value <= 0:
        raise ConfigError(f"{where}: must be positive, found {value!r}")
    if key.below_one and value >= 1:
        raise ConfigError(f"{where}: must be below 1, found {value!r} ({key.help})")
    return value


def section(data: dict, name: str, source: str, schemas: dict) -> dict:
    """Section ``name`` of ``data`` checked against ``schemas`` (section -> key ->
    :class:`Key`): every key known and valid, defaults filled in."""
    given = data.get(name, {})
    if not isinstance(given, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    schema = schemas[name]
    unknown = sorted(set(given) - set(schema))
    if unknown:
        raise ConfigError(f"{source}: [{name}] unknown key(s) {', '.join(unknown)}; valid: "
                          f"{', '.join(schema)}")
    values = {}
    for key, spec in schema.items():
        if key in given:
            values[key] = _check_value(f"{source}: [{name}] {key}", spec, given[key])
        elif spec.required:
            raise ConfigError(f"{source}: [{name}] {key} is required")
        else:
            values[key] = spec.default
    return values


def read_toml(path: Path) -> dict:
    """The parsed TOML document at ``path``.

    Raises
    ------
    ConfigError
        Naming the file when it cannot be read or is not TOML.
    """
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as error:
        raise ConfigError(f"cannot read case file {path}: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a TOML case file (binary data); see "
                          "docs/case_format.md") from None


def _type_name(key: Key) -> str:
    kinds = key.kind if isinstance(key.kind, tuple) else (key.kind,)
    return "number" if float in kinds else {str: "string", int: "integer",
                                               bool: "true/false"}[kinds[0]]


def _allowed(key: Key) -> str:
    if key.choices is not None:
        return ", ".join(f"`{c}`" for c in key.choices)
    if key.below_one:
        return "0 < value < 1"
    return "> 0" if key.positive else ""


def schema_tables(schema: dict, level: str = "##") -> list[str]:
    """A markdown table per section of ``schema``."""
    lines = []
    for section_name, keys in schema.items():
        lines += [f"{level} [{section_name}]", "", "| key | type | default | allowed | meaning |",
                  "| --- | --- | --- | --- | --- |"]
        for name, key in keys.items():
            default = "required" if key.required else ("" if key.default is None
                                                       else f"`{key.default}`")
            lines.append(f"| `{name}` | {_type_name(key)} | {default} | {_allowed(key)} | "
                         f"{key.help} |")
        lines.append("")
    return lines
