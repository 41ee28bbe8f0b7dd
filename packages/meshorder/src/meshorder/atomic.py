"""Write files atomically: a temporary file in the target folder, then a rename."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def check_writable(target: str | Path, *, folder: bool = False) -> None:
    """Raise ``OSError`` naming ``target`` unless it can be written (nothing is created).

    ``target`` is a file to write (``folder=False``: it must not be a folder) or a folder
    to create or write into; the nearest existing parent must be a writable folder.
    """
    target = Path(target)
    if target.exists() and target.is_dir() != folder:
        reason = "is a folder, not a file" if target.is_dir() else "is a file, not a folder"
        raise OSError(errno.EEXIST, reason, str(target))
    existing = target if folder else target.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OSError(errno.ENOTDIR, f"{existing} is a file, not a folder", str(target))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OSError(errno.EACCES, f"{existing} is not writable", str(target))


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Delete the temporary files that killed writers of ``target`` left behind.

    :func:`atomic_path` names its temporary ``.<stem>.<pid>.<random><suffix>`` (another
    dot before it where the target was itself a temporary); one whose process no longer
    runs is stale (``kill -9`` gives a writer no chance to clean up). Returns the removed
    paths.
    """
    removed = []
    for path in target.parent.glob(f".*{target.stem}.*{target.suffix}"):
        # a writer that wrote through a temporary of its own nests a second one:
        # ``..plan.<pid>.<random>.<pid>.<random>.npz``, stale when the outer pid is gone
        name = path.name.lstrip(".")
        if not name.startswith(f"{target.stem}."):
            continue
        pid = name[len(target.stem) + 1:].split(".", 1)[0]
        if pid.isdigit() and not process_running(int(pid)):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (whoever owns it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it over ``target`` on success.

    The temporary file keeps ``target``'s suffix so that writers choosing a format
    by extension still work. On any exception it is removed and ``target`` is left
    as it was; an ``OSError`` of the write (a full disk) or of the rename (``target``
    is a folder) is raised again naming ``target``. The file is flushed to the disk
    (``fsync``) before the rename and its folder after it.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    fd, name = tempfile.mkstemp(prefix=f".{target.stem}.{os.getpid()}.", suffix=target.suffix,
                                dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(name, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
    tmp = Path(name)
    try:
        yield tmp
        _flush_to_disk(tmp)
        os.replace(tmp, target)
        _flush_to_disk(target.parent)  # the rename itself
    except OSError as error:
        if error.filename is not None and Path(error.filename) not in (tmp, target):
            raise
        raise OSError(error.errno, _what_to_do(error), str(target)) from None
    finally:
        tmp.unlink(missing_ok=True)


def _flush_to_disk(path: Path) -> None:
    """``fsync`` of a file or folder: what the rename publishes is on the disk, so that a
    power loss or a node's crash leaves the old file or the new one, never an empty one."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _what_to_do(error: OSError) -> str:
    """A failed write's reason, with the advice a full disk needs; the target named by
    the caller is the user's file, never the temporary one (left as it was)."""
    reason = error.strerror or str(error)
    if error.errno == errno.ENOSPC:
        return f"{reason} while writing it; free space there (the previous file is intact)"
    if isinstance(error, IsADirectoryError):
        return "is a folder, not a file"
    return reason
