"""Checkpoints: the exact state of a run of any method, to restart it bit for bit.

One format for every :class:`~gpusolver.solvers.base.System`: a ``.npz`` of the System's
named arrays and a JSON ``meta`` with the format version, the System's
:class:`~gpusolver.solvers.base.Identity` (method, mesh or body digest, physics digest)
and its numbers. A restart is refused, naming the file and what differs, when any part
of the identity does not match. Written through a temporary file and a rename, so an
interrupted run never leaves a half-written checkpoint behind.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusolver.errors import ConfigError
from meshorder.atomic import atomic_path
from meshorder.plan import DAMAGED_NPZ


@dataclass(frozen=True)
class Snapshot:
    """A System's checkpoint payload: arrays (the exact state, in the file's order) and
    JSON numbers (iteration, time and whatever else restores it bit for bit)."""

    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]


@dataclass(frozen=True)
class Identity:
    """What a checkpoint must match to restart a run: the method, a content digest of the
    mesh (or body) and one of the case's physics (:func:`digest_of`)."""

    method: str
    mesh: str
    physics: str

    def mismatch(self, other: Identity) -> str | None:
        """What differs from ``other`` (the checkpoint's), in words; None if nothing."""
        if other.method != self.method:
            return f"written by method {other.method!r}, the case runs {self.method!r}"
        if other.mesh != self.mesh:
            return "written for another mesh or body"
        if other.physics != self.physics:
            return "written for other physics (flow conditions or boundaries)"
        return None


def digest_of(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys): the digest of a case's physics.

    Examples
    --------
    >>> digest_of({"mach": 0.8, "aoa": 1.25}) == digest_of({"aoa": 1.25, "mach": 0.8})
    True
    """
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


#: Checkpoint format version (1: finite volume and DG, 2: vortex, before one format).
CHECKPOINT_VERSION = 3


def save_checkpoint(path: Path, identity: Identity, snapshot: Snapshot) -> None:
    """Write ``snapshot`` of the System with ``identity`` to ``path`` atomically."""
    meta = {"version": CHECKPOINT_VERSION, "method": identity.method,
            "mesh_digest": identity.mesh, "physics_digest": identity.physics, **snapshot.meta}
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), **snapshot.arrays)


def load_checkpoint(path: Path, expected: Identity) -> Snapshot:
    """The snapshot in the checkpoint at ``path``, written by a System with the
    ``expected`` identity.

    Raises
    ------
    ConfigError
        If the file is unreadable, of another format version, or written for another
        method, mesh, body or physics.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            arrays = {name: data[name] for name in data.files if name != "meta"}
    except OSError as error:
        raise ConfigError(f"cannot read checkpoint {path}: {error.strerror or error}") from None
    except (KeyError, AttributeError, *DAMAGED_NPZ):
        raise ConfigError(f"checkpoint {path} is not a gpusolver checkpoint (truncated or "
                          "corrupted?)") from None
    version = meta.get("version") if isinstance(meta, dict) else None
    if version != CHECKPOINT_VERSION:
        raise ConfigError(f"checkpoint {path}: format version {version}, this gpusolver "
                          f"reads version {CHECKPOINT_VERSION}; start from the free stream")
    written = Identity(meta.get("method"), meta.get("mesh_digest"), meta.get("physics_digest"))
    mismatch = expected.mismatch(written)
    if mismatch is not None:
        raise ConfigError(f"checkpoint {path}: {mismatch}")
    return Snapshot(arrays, meta)
