"""Write files atomically: a temporary file in the target folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it over ``target`` on success.

    The temporary file keeps ``target``'s suffix so that writers choosing a format
    by extension still work. On any exception it is removed and ``target`` is left
    as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix,
                                dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(name, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
