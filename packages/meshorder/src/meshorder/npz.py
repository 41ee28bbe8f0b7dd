"""Reading ``.npz`` archives (plans) without the CRC pass over their stored arrays.

:func:`numpy.load` reads each member of an ``.npz`` through :mod:`zipfile`, which
checks its CRC-32 as it goes, holding Python's lock: on the 130 MB plan of a 1.7M-cell
mesh about 0.4 s of a run's set-up (H100 host, 2026-11-28). The arrays of ``np.savez``
archives are stored uncompressed, one after another, so :class:`NpzArrays` reads each
with ``numpy.fromfile`` at its offset instead; compressed members go through
:mod:`zipfile` as before. A damaged file still fails: a truncated array cannot take its
shape, and the plan's own checks follow.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np

#: The signature of a zip member's local header, and the header's fixed size.
_LOCAL_HEADER = (b"PK\x03\x04", 30)


class NpzArrays:
    """The arrays of an ``.npz`` file by name, as :func:`numpy.load` gives them (never
    pickled objects), used as a context manager.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     np.savez(f"{folder}/a.npz", x=np.arange(5), y=np.eye(2, order="F"))
    ...     with NpzArrays(f"{folder}/a.npz") as data:
    ...         data.files, data["x"].tolist(), data["y"].flags.f_contiguous
    (['x', 'y'], [0, 1, 2, 3, 4], True)
    """

    def __init__(self, path: str | Path):
        self._file = open(path, "rb")  # closed by close()
        try:
            self._zip = zipfile.ZipFile(self._file)
        except BaseException:
            self._file.close()
            raise
        self._members = {info.filename.removesuffix(".npy"): info
                         for info in self._zip.infolist()}
        #: The arrays' names.
        self.files = list(self._members)

    def __getitem__(self, name: str) -> np.ndarray:
        info = self._members[name]
        if info.compress_type != zipfile.ZIP_STORED:
            with self._zip.open(info) as member:
                return np.lib.format.read_array(member, allow_pickle=False)
        if info.header_offset < 0:  # a central directory that does not fit the file
            raise zipfile.BadZipFile(f"member {info.filename}: outside the file")
        self._file.seek(info.header_offset)
        header = self._file.read(_LOCAL_HEADER[1])
        if len(header) < _LOCAL_HEADER[1] or header[:4] != _LOCAL_HEADER[0]:
            raise zipfile.BadZipFile(f"member {info.filename}: no local header")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        self._file.seek(name_length + extra_length, 1)
        return np.lib.format.read_array(self._file, allow_pickle=False)

    def __contains__(self, name: str) -> bool:
        return name in self._members

    def close(self) -> None:
        """Close the file."""
        self._zip.close()
        self._file.close()

    def __enter__(self) -> NpzArrays:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
