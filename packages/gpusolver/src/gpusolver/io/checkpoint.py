"""Checkpoints: the exact state of a run of any method, to restart it bit for bit.

One format for every :class:`~gpusolver.solvers.base.System`: a ``.npz`` of the System's
named arrays and a JSON ``meta`` with the format version, the System's
:class:`~gpusolver.solvers.base.Identity` (method, mesh or body digest, physics digest)
and its numbers. A restart is refused, naming the file and what differs, when any part
of the identity does not match. Written through a temporary file and a rename, so an
interrupted run never leaves a half-written checkpoint behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gpusolver.errors import ConfigError
from gpusolver.solvers.base import Identity, Snapshot
from meshorder.atomic import atomic_path
from meshorder.plan import DAMAGED_NPZ

if TYPE_CHECKING:
    from gpusolver.solvers.base import System

#: Checkpoint format version (1: finite volume and DG, 2: vortex, before one format).
CHECKPOINT_VERSION = 3


def save_checkpoint(path: Path, identity: Identity, snapshot: Snapshot) -> None:
    """Write ``snapshot`` of the System with ``identity`` to ``path`` atomically."""
    meta = {"version": CHECKPOINT_VERSION, "method": identity.method,
            "mesh_digest": identity.mesh, "physics_digest": identity.physics, **snapshot.meta}
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), **snapshot.arrays)


def load_checkpoint(path: Path, system: System) -> None:
    """Restore the checkpoint at ``path`` into ``system``.

    Raises
    ------
    ConfigError
        If the file is unreadable, of another format version, written for another
        method, mesh, body or physics, or its state does not fit ``system``.
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
    written = Identity(meta.get("method", "fv"), meta.get("mesh_digest"),
                       meta.get("physics_digest"))
    mismatch = system.identity().mismatch(written)
    if mismatch is not None:
        raise ConfigError(f"checkpoint {path}: {mismatch}")
    try:
        system.restore(Snapshot(arrays, meta))
    except (KeyError, ValueError) as error:
        raise ConfigError(f"checkpoint {path}: {error}") from None
