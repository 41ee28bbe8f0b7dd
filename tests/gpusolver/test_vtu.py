"""The VTU writer: what meshio (as ParaView) reads back, raw and compressed."""

import meshio
import numpy as np
import pytest

from gpusolver.io.vtu import COMPRESSORS, write_vtu


@pytest.mark.parametrize("compression", list(COMPRESSORS))
def test_mixed_cells_with_scalars_and_vectors_read_back_exactly(tmp_path, compression):
    rng = np.random.default_rng(0)
    points = rng.random((70_000, 3))
    triangles = rng.integers(0, len(points), (90_000, 3))  # > 1 MiB: several blocks
    quads = rng.integers(0, len(points), (40_000, 4))
    n = len(triangles) + len(quads)
    cell_data = {"density": rng.random(n), "velocity": rng.random((n, 3))}
    point_data = {"marker": rng.integers(0, 5, len(points))}
    path = tmp_path / "grid.vtu"
    write_vtu(path, points, [("triangle", triangles), ("quad", quads), ("tetra", np.zeros((0, 4)))],
              cell_data=cell_data, point_data=point_data, compression=compression)
    text = path.read_bytes()
    assert (b"compressor" in text[:2000]) == (compression != "none")
    assert b'type="Int32" Name="connectivity"' in text  # node numbers below 2^31
    back = meshio.read(path)
    np.testing.assert_array_equal(back.points, points)
    assert [block.type for block in back.cells] == ["triangle", "quad"]
    np.testing.assert_array_equal(back.cells[0].data, triangles)
    np.testing.assert_array_equal(back.cells[1].data, quads)
    for name, values in cell_data.items():
        np.testing.assert_array_equal(np.concatenate(back.cell_data[name]), values)
    np.testing.assert_array_equal(back.point_data["marker"], point_data["marker"])


def test_a_point_cloud_and_other_number_types(tmp_path):
    points = np.arange(12.0).reshape(4, 3)
    write_vtu(tmp_path / "cloud.vtu", points, [("vertex", np.arange(4).reshape(-1, 1))],
              point_data={"gamma": np.arange(4, dtype=np.float16), "flag": np.ones(4, bool)})
    back = meshio.read(tmp_path / "cloud.vtu")
    np.testing.assert_array_equal(back.point_data["gamma"], [0.0, 1.0, 2.0, 3.0])
    assert back.point_data["gamma"].dtype == np.float64
    np.testing.assert_array_equal(back.point_data["flag"], [1, 1, 1, 1])
