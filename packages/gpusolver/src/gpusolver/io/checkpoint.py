"""Checkpoints: the exact state of a run, to restart it bit for bit.

Written through a temporary file and a rename, so an interrupted run never leaves a
half-written checkpoint behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gpusolver.errors import ConfigError
from meshorder.atomic import atomic_path
from meshorder.plan import DAMAGED_NPZ

if TYPE_CHECKING:
    from gpusolver.solvers.fv.solver import Solver

#: Checkpoint format version.
CHECKPOINT_VERSION = 1


def save_checkpoint(path: Path, solver: Solver) -> None:
    """Exact state (file cell order, precision) and iteration, time, circulation, mesh digest."""
    meta = {"version": CHECKPOINT_VERSION, "iteration": solver.iteration, "time": solver.time,
            "mesh_digest": solver.mesh_digest, "dtype": solver.dtype.name,
            "circulation": solver.circulation, "cfl": solver.cfl,
            "first_residual": solver.first_residual}
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, conserved=solver.conserved(), meta=np.array(json.dumps(meta)))


def load_checkpoint(path: Path, solver: Solver) -> None:
    """Restore a checkpoint written by :func:`save_checkpoint` into ``solver``.

    Raises
    ------
    ConfigError
        If the file is unreadable or belongs to another mesh or precision.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            conserved = data["conserved"]
    except OSError as error:
        raise ConfigError(f"cannot read checkpoint {path}: {error.strerror or error}") from None
    except (KeyError, *DAMAGED_NPZ):
        raise ConfigError(f"checkpoint {path} is not a gpusolver checkpoint (truncated or "
                          "corrupted?)") from None
    if meta.get("version") != CHECKPOINT_VERSION:
        raise ConfigError(f"checkpoint {path}: version {meta.get('version')}, "
                          f"expected {CHECKPOINT_VERSION}")
    if meta["mesh_digest"] != solver.mesh_digest:
        raise ConfigError(f"checkpoint {path} was written for another mesh")
    expected = solver.conserved().shape  # (n_vars, n_cells); DG: (n_vars, n_modes, n_cells)
    if meta["dtype"] != solver.dtype.name or conserved.shape != expected:
        raise ConfigError(f"checkpoint {path}: state is {conserved.dtype} {conserved.shape}, "
                          f"the run needs {solver.dtype.name} {expected}")
    solver.set_conserved(conserved)
    solver.iteration = int(meta["iteration"])
    solver.time = float(meta["time"])
    solver.circulation = float(meta.get("circulation", 0.0))
    solver.cfl = float(meta.get("cfl", solver.cfl))
    solver.first_residual = meta.get("first_residual")
