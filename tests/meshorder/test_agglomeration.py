"""Agglomeration of the cell graph into coarse cells (multigrid levels)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder.agglomeration import MIN_COARSE_CELLS, agglomerate, coarse_graph, hierarchy
from meshorder.testing import box_mesh, grid_mesh
from meshorder.topology import CSR, Topology


def _connected(graph: CSR, members: np.ndarray) -> bool:
    """Whether ``members`` induce a connected subgraph."""
    inside = set(members.tolist())
    seen, stack = {int(members[0])}, [int(members[0])]
    while stack:
        v = stack.pop()
        for w in graph.indices[graph.indptr[v]:graph.indptr[v + 1]].tolist():
            if w in inside and w not in seen:
                seen.add(w)
                stack.append(w)
    return len(seen) == len(members)


@settings(max_examples=25, deadline=None)
@given(nx=st.integers(2, 14), ny=st.integers(2, 14), kind=st.sampled_from(["quad", "triangle"]),
       seed=st.integers(0, 2**16))
def test_coarse_cells_cover_the_mesh_and_are_connected(nx, ny, kind, seed):
    graph = Topology(grid_mesh(nx, ny, kind)).cell_graph
    coarse = agglomerate(graph, seed)
    n_coarse = int(coarse.max()) + 1
    assert coarse.min() == 0 and np.bincount(coarse).min() >= 1  # every id used
    assert n_coarse < graph.n
    order = np.argsort(coarse, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(coarse))])
    for a, b in itertools.pairwise(offsets):
        assert _connected(graph, order[a:b])


def test_seeds_are_three_steps_apart_so_coarse_cells_are_large():
    graph = Topology(box_mesh(8, 8, 8)).cell_graph
    sizes = np.bincount(agglomerate(graph))
    # a tetrahedron's seed gathers its 4 neighbours, then cells two steps away
    assert 6.0 < sizes.mean() < 12.0
    assert sizes.max() <= 40


@settings(max_examples=20, deadline=None)
@given(nx=st.integers(2, 9), ny=st.integers(2, 9), nz=st.integers(1, 6), seed=st.integers(0, 99))
def test_the_seeds_are_those_of_rounds_over_every_cell(nx, ny, nz, seed):
    """The rounds that look at the undecided cells and their neighbours only pick the
    seeds that rounds over every cell (the algorithm as published) pick."""
    from meshorder.agglomeration import _neighbourhood_max, _seeds

    graph = Topology(box_mesh(nx, ny, nz)).cell_graph
    n = graph.n
    priority = np.random.default_rng(seed).permutation(n).astype(np.int64)
    state = np.zeros(n, dtype=np.int64)
    while (undecided := state == 0).any():
        key = (state + 1) * n + priority
        best = _neighbourhood_max(graph, _neighbourhood_max(graph, key))
        state[undecided & (best >= 2 * n)] = -1
        state[undecided & (best == key)] = 1
    np.testing.assert_array_equal(_seeds(graph, seed), np.flatnonzero(state == 1))


def test_coarse_graph_joins_coarse_cells_with_neighbouring_members():
    path = CSR.from_pairs(np.arange(5), np.arange(1, 6), 6)
    coarse = np.array([0, 0, 1, 1, 2, 2])
    joined = coarse_graph(path, coarse)
    assert joined.indptr.tolist() == [0, 1, 3, 4]
    assert joined.indices.tolist() == [1, 0, 2, 1]


def test_hierarchy_stops_before_a_level_gets_too_small():
    graph = Topology(grid_mesh(40, 40, "triangle")).cell_graph
    maps = hierarchy(graph, levels=10)
    sizes = [graph.n] + [int(m.max()) + 1 for m in maps]
    assert all(a > 2 * b for a, b in itertools.pairwise(sizes))
    assert sizes[-1] >= MIN_COARSE_CELLS
    assert len(hierarchy(graph, levels=1)) == 1


@pytest.mark.parametrize("seed", [0, 1])
def test_agglomeration_is_deterministic_for_a_seed(seed):
    graph = Topology(grid_mesh(9, 7, "triangle")).cell_graph
    np.testing.assert_array_equal(agglomerate(graph, seed), agglomerate(graph, seed))
