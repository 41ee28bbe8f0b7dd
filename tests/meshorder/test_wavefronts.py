"""Shortening LU-SGS wavefronts by reordering cells inside groups of four."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from meshorder import Topology
from meshorder.hyperplanes import split_by_direction, wavefront_levels
from meshorder.metrics import matrix_metrics, renumber_graph
from meshorder.orderings.rcm import WAVEFRONT_PASSES, reverse_cuthill_mckee
from meshorder.permutation import check_permutation
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_mesh
from meshorder.wavefronts import GROUP, _permute_split, shorten_wavefronts

from .test_colouring_levels import edge_lists, random_graph


def n_levels(graph, order):
    return wavefront_levels(renumber_graph(graph, order)).n_levels


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 30), edges=edge_lists, seed=st.integers(0, 1000),
       passes=st.integers(1, 4))
def test_refined_order_is_a_permutation_with_no_more_levels(n, edges, seed, passes):
    graph = random_graph(n, edges)
    order = np.random.default_rng(seed).permutation(n)
    refined = shorten_wavefronts(graph, order, passes=passes, slack=1.0)
    check_permutation(refined, n)
    assert n_levels(graph, refined) <= n_levels(graph, order)
    # each pass moves a cell within a group of four
    old_rank = np.empty(n, np.int64)
    old_rank[order] = np.arange(n)
    assert np.all(np.abs(old_rank[refined] - np.arange(n)) <= (GROUP - 1) * passes)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), edges=edge_lists, seed=st.integers(0, 1000),
       shift=st.integers(0, GROUP - 1))
def test_split_graph_permuted_inside_groups_matches_a_full_renumbering(n, edges, seed, shift):
    graph = random_graph(n, edges)
    rng = np.random.default_rng(seed)
    local, changed = np.arange(n), []
    for start in range(-shift, n, GROUP):
        group = np.arange(max(start, 0), min(start + GROUP, n))
        if rng.random() < 0.5:
            local[group] = rng.permutation(group)
            changed.append(group)
    rows = np.concatenate(changed) if changed else np.zeros(0, np.int64)
    permuted = _permute_split(*split_by_direction(graph), local, rows)
    expected = split_by_direction(renumber_graph(graph, local))
    for half, reference in zip(permuted, expected, strict=True):
        np.testing.assert_array_equal(half.indptr, reference.indptr)
        for v in range(n):  # the same neighbours, in any order within a row
            got = half.indices[half.indptr[v] : half.indptr[v + 1]]
            want = reference.indices[reference.indptr[v] : reference.indptr[v + 1]]
            assert sorted(got) == sorted(want)


def test_rcm_shortens_wavefronts_only_for_a_plan_with_sweeps():
    mesh = box_mesh(6, 6, 6)
    graph = Topology(mesh).cell_graph
    shortened = reverse_cuthill_mckee(graph, wavefront_passes=WAVEFRONT_PASSES)
    plain = reverse_cuthill_mckee(graph)
    assert shortened.tolist() != plain.tolist()
    for options, expected in ((PlanOptions(hyperplanes=True), shortened),
                              (PlanOptions(sweep_colours=True), shortened),
                              (PlanOptions(), plain), (PlanOptions(colour=True), plain)):
        assert make_plan(mesh, options).cell_order.tolist() == expected.tolist(), options


def test_refinement_cuts_rcm_levels_on_a_tetrahedral_box_and_keeps_bandwidth():
    graph = Topology(box_mesh(8, 8, 8)).cell_graph
    plain = reverse_cuthill_mckee(graph, wavefront_passes=0)
    refined = reverse_cuthill_mckee(graph, wavefront_passes=WAVEFRONT_PASSES)
    assert n_levels(graph, refined) < n_levels(graph, plain)
    bandwidth = matrix_metrics(renumber_graph(graph, refined))["bandwidth"]
    # three passes move each end of an edge by at most nine places (three per pass)
    assert bandwidth <= matrix_metrics(renumber_graph(graph, plain))["bandwidth"] + 18
