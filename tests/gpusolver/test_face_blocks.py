"""Block colouring of faces: invariants (property tests) and an emulated accumulation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.bench.reference import euler_normal_flux, random_state, rusanov_residual
from gpusolver.layout.faces import FaceLayout
from gpusolver.layout.geometry import build_geometry
from meshorder import Topology
from meshorder.blocks import build_face_blocks
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_mesh, grid_mesh


def faces_of(mesh, cells="rcm"):
    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(cells=cells), topology=topology)
    return FaceLayout.from_geometry(build_geometry(mesh, plan)), plan.n_cells


def block_faces(blocks, block, n_faces):
    return np.arange(block * blocks.block_size, min((block + 1) * blocks.block_size, n_faces))


def emulate(blocks, faces, state):
    """What the CUDA block kernel computes, block colour by block colour."""
    ql = state[:, faces.left]
    qr = np.where(faces.right >= 0, state[:, np.maximum(faces.right, 0)], ql)
    fl, sl = euler_normal_flux(ql, faces.normal)
    fr, sr = euler_normal_flux(qr, faces.normal)
    flux = faces.area * 0.5 * (fl + fr - np.maximum(sl, sr) * (qr - ql))
    residual = np.zeros_like(state)
    for first, last in zip(blocks.block_offsets[:-1], blocks.block_offsets[1:], strict=True):
        for block in blocks.block_order[first:last]:
            face_flux = flux[:, block_faces(blocks, block, faces.n_faces)]
            for entry in range(blocks.cell_offsets[block], blocks.cell_offsets[block + 1]):
                sides = blocks.sides[blocks.side_offsets[entry]:blocks.side_offsets[entry + 1]]
                sign = np.where(sides % 2 == 1, 1.0, -1.0)
                residual[:, blocks.cells[entry]] += (face_flux[:, sides // 2] * sign).sum(axis=1)
    return residual


MESHES = st.sampled_from([grid_mesh(7, 5, "triangle"), grid_mesh(6, 6, "quad"),
                          box_mesh(3, 3, 2)])


@settings(max_examples=30, deadline=None)
@given(mesh=MESHES, cells=st.sampled_from(["rcm", "random", "native"]),
       block_size=st.integers(1, 70))
def test_blocks_are_race_free_and_map_back_to_global_cells(mesh, cells, block_size):
    faces, n_cells = faces_of(mesh, cells)
    blocks = build_face_blocks(faces.left, faces.right, n_cells, block_size=block_size)
    assert blocks.n_blocks == -(-faces.n_faces // block_size)
    for block in range(blocks.n_blocks):
        f = block_faces(blocks, block, faces.n_faces)
        cells_of_block = blocks.block_cells(block)
        assert np.all(np.diff(cells_of_block) > 0)
        assert np.array_equal(cells_of_block[blocks.local_left[f]], faces.left[f])
        boundary = faces.right[f] < 0
        assert np.array_equal(blocks.local_right[f] < 0, boundary)
        assert np.array_equal(cells_of_block[blocks.local_right[f][~boundary]],
                              faces.right[f][~boundary])
        first = blocks.cell_offsets[block]
        for local, cell in enumerate(cells_of_block):
            entry = first + local
            sides = blocks.sides[blocks.side_offsets[entry]:blocks.side_offsets[entry + 1]]
            assert np.all(np.diff(sides) > 0)
            expected = [2 * k + is_right for k, face in enumerate(f)
                        for is_right, c in enumerate((faces.left[face], faces.right[face]))
                        if c == cell]
            assert sides.tolist() == expected
    for first, last in zip(blocks.block_offsets[:-1], blocks.block_offsets[1:], strict=True):
        members = np.concatenate([blocks.block_cells(b) for b in blocks.block_order[first:last]])
        assert len(np.unique(members)) == len(members)
    assert sorted(blocks.block_order) == list(range(blocks.n_blocks))


@pytest.mark.parametrize("mesh", [grid_mesh(9, 7, "triangle"), box_mesh(4, 3, 3)],
                         ids=["2d", "3d"])
def test_emulated_block_accumulation_equals_the_reference(mesh):
    faces, n_cells = faces_of(mesh)
    blocks = build_face_blocks(faces.left, faces.right, n_cells, block_size=16)
    state = random_state(n_cells, np.random.default_rng(3))
    expected = rusanov_residual(state, faces)
    assert np.allclose(emulate(blocks, faces, state), expected, rtol=0, atol=1e-13)


def test_local_order_needs_few_block_colours():
    faces, n_cells = faces_of(box_mesh(8, 8, 8))
    blocks = build_face_blocks(faces.left, faces.right, n_cells, block_size=64)
    assert blocks.n_block_colours <= 8
    assert blocks.max_block_cells <= 2 * 64


def test_block_size_is_checked():
    with pytest.raises(ValueError, match="block_size must be in 1..16383"):
        build_face_blocks(np.array([0]), np.array([-1]), 1, block_size=16384)


def test_blocks_colour_past_one_palette_of_64():
    # a star: every face touches cell 0, so every block conflicts with every other
    n = 100
    blocks = build_face_blocks(np.zeros(n, dtype=np.int64), np.arange(1, n + 1), n + 1,
                               block_size=1)
    assert blocks.n_block_colours == n
    assert sorted(blocks.block_order) == list(range(n))
