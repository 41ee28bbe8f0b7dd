"""meshorder.npz: .npz arrays read at their offsets, as numpy.load reads them."""

import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from meshorder.npz import NpzArrays

ARRAYS = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_.]{0,12}", fullmatch=True).filter(lambda name: name != "file"),
    hnp.arrays(st.sampled_from([np.int8, np.int32, np.int64, np.float64, np.bool_]),
               hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
    max_size=5)


@settings(max_examples=40, deadline=None)
@given(arrays=ARRAYS, compressed=st.booleans(), fortran=st.booleans())
def test_the_arrays_are_numpy_loads(tmp_path_factory, arrays, compressed, fortran):
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    arrays = {name: np.asfortranarray(a) if fortran else a for name, a in arrays.items()}
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    with np.load(path) as expected, NpzArrays(path) as got:
        assert got.files == expected.files
        for name in expected.files:
            assert name in got
            np.testing.assert_array_equal(got[name], expected[name])
            assert got[name].dtype == expected[name].dtype
            assert got[name].flags.f_contiguous == expected[name].flags.f_contiguous


def test_a_cut_file_is_a_bad_zip_file_not_garbage(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(100_000), y=np.ones(100_000))
    data = path.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[:len(data) // 2] + data[-200:])  # the directory kept, data lost
    with pytest.raises((zipfile.BadZipFile, ValueError)), NpzArrays(cut) as arrays:
        for name in arrays.files:
            arrays[name]


def test_a_flipped_byte_in_an_array_fails_its_crc(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(1000, dtype=np.int64))
    data = bytearray(path.read_bytes())
    data[data.index(np.int64(500).tobytes())] ^= 1  # inside x's values
    path.write_bytes(bytes(data))
    with pytest.raises(zipfile.BadZipFile, match="CRC"), NpzArrays(path) as arrays:
        arrays["x"]


def test_an_object_array_is_refused_not_unpickled(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.array([{"a": 1}, None], dtype=object))
    with pytest.raises(ValueError, match="object arrays"), NpzArrays(path) as arrays:
        arrays["x"]


def test_a_member_without_its_local_header_is_a_bad_zip_file(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(10))
    data = bytearray(path.read_bytes())
    data[:4] = b"XXXX"  # the first member's local header signature
    path.write_bytes(bytes(data))
    with pytest.raises(zipfile.BadZipFile, match="no local header"), NpzArrays(path) as arrays:
        arrays["x"]


def test_an_array_whose_header_does_not_fit_its_bytes_is_a_bad_zip_file(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(10))
    data = path.read_bytes().replace(b"'shape': (10,)", b"'shape': (11,)")
    path.write_bytes(data)
    with pytest.raises(zipfile.BadZipFile, match="does not fit"), NpzArrays(path) as arrays:
        arrays["x"]
