"""Reading ``.npz`` archives (plans) without :mod:`zipfile`'s slow path.

:func:`numpy.load` reads each member of an ``.npz`` through :mod:`zipfile`, chunk by
chunk, holding Python's lock: on the 130 MB plan of a 1.7M-cell mesh about 0.4 s of a
run's set-up (H100 host, 2026-11-28). The arrays of ``np.savez`` archives are stored
uncompressed, one after another, so :class:`NpzArrays` reads each member in one read at
its offset, checks its CRC-32 as zipfile would (4 GB/s), and takes the array as a view
of those bytes; compressed members go through :mod:`zipfile` as before.
"""

from __future__ import annotations

import math
import struct
import zipfile
import zlib
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
        start = self._data_offset(info) if info.compress_type == zipfile.ZIP_STORED else None
        version = None
        if start is not None:
            self._file.seek(start)
            version = np.lib.format.read_magic(self._file)
        if version not in ((1, 0), (2, 0)):  # compressed, or 3.0 (utf-8 field names)
            with self._zip.open(info) as member:
                return np.lib.format.read_array(member, allow_pickle=False)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran_order, dtype = read_header(self._file)
        if dtype.hasobject:
            raise ValueError(f"member {info.filename}: object arrays are not read")
        offset, count = self._file.tell() - start, math.prod(shape)
        if offset + count * dtype.itemsize != info.file_size:
            raise zipfile.BadZipFile(f"member {info.filename}: its size does not fit its shape")
        self._file.seek(start)
        data = np.empty(info.file_size, np.uint8)  # not zeroed first, as a bytearray is
        if self._file.readinto(data) != info.file_size:
            raise zipfile.BadZipFile(f"member {info.filename}: truncated")
        if zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"member {info.filename}: bad CRC-32 (damaged?)")
        array = np.frombuffer(data, dtype, count, offset=offset)
        return array.reshape(shape, order="F" if fortran_order else "C")

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        """Where the stored bytes of member ``info`` start in the file."""
        if info.header_offset < 0:  # a central directory that does not fit the file
            raise zipfile.BadZipFile(f"member {info.filename}: outside the file")
        self._file.seek(info.header_offset)
        local = self._file.read(_LOCAL_HEADER[1])
        if len(local) < _LOCAL_HEADER[1] or local[:4] != _LOCAL_HEADER[0]:
            raise zipfile.BadZipFile(f"member {info.filename}: no local header")
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        return info.header_offset + _LOCAL_HEADER[1] + name_length + extra_length

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
