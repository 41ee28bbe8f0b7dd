"""One run per output folder: a lock file naming the run that owns the folder.

Two runs writing one folder would interleave their logs and overwrite each other's
checkpoints. The first run takes ``<folder>/.gpusolver.lock`` (its pid and host); a
second is refused with one line naming them; a lock whose run is gone (the same host,
no such process: a run killed with ``kill -9`` or by a crash) is taken over. A lock
of another host cannot be checked: remove the file by hand once that run has ended.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpusolver.errors import ConfigError
from meshorder.atomic import process_running

#: The lock file's name in an output folder.
LOCK_NAME = ".gpusolver.lock"


def _owner(path: Path) -> tuple[int, str] | None:
    """The pid and host in the lock at ``path``; None when it holds neither (a lock file
    cut short by a crash)."""
    try:
        pid, host = path.read_text().split()
        return int(pid), host
    except (OSError, ValueError):
        return None


def _take(path: Path) -> bool:
    """Create the lock at ``path`` for this process; False if it exists."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()} {socket.gethostname()}\n")
    return True


@contextmanager
def output_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock for the block (the folder must exist).

    Raises
    ------
    ConfigError
        When another run that is still alive (or of another host) holds it.
    """
    path = folder / LOCK_NAME
    if not _take(path):
        owner, host = _owner(path), socket.gethostname()
        if owner is not None and (owner[1] != host or process_running(owner[0])):
            raise ConfigError(f"output directory {folder} is in use by the run of pid "
                              f"{owner[0]} on {owner[1]} ({path}); wait for it to end or set "
                              "another [output] directory")
        path.unlink(missing_ok=True)  # its run is gone: take it over
        if not _take(path):
            raise ConfigError(f"output directory {folder}: another run took {path} just now")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
