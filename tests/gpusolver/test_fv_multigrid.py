"""Agglomeration multigrid: coarse geometry, FAS corrections, and convergence."""

from __future__ import annotations

import numpy as np
import pytest

from gpusolver.errors import ConfigError
from gpusolver.layout.agglomeration import coarse_geometry
from gpusolver.layout.geometry import build_geometry
from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from gpusolver.solvers.fv.lusgs import OMEGA, LevelKernels
from meshorder import Topology, read_mesh
from meshorder.agglomeration import agglomerate
from meshorder.pipeline import make_plan
from meshorder.testing import box_mesh, grid_mesh
from meshorder.topology import CSR

from .fv_cases import AIRFOIL, DATA, FARFIELD_SQUARE, perturbed_solver, steps_to_fall
from .kernel_backends import BACKENDS, attach_host_kernels


def _closure(g) -> np.ndarray:
    """Sum of the outward area vectors of every cell, ``(dim, n_cells)``."""
    vector = g.normal * g.area
    ni = g.n_interior
    total = np.stack([np.bincount(g.left, v, minlength=g.n_cells) for v in vector])
    total -= np.stack([np.bincount(g.right[:ni], v[:ni], minlength=g.n_cells) for v in vector])
    return total


@pytest.mark.parametrize("mesh", [grid_mesh(9, 7, "triangle"), box_mesh(4, 3, 3)],
                         ids=["triangles", "tetrahedra"])
def test_coarse_cells_are_closed_and_keep_volume_and_boundary_area(mesh):
    fine = build_geometry(mesh, make_plan(mesh))
    coarse = agglomerate(Topology(mesh).cell_graph)[fine.cell_order]  # plan order
    g = coarse_geometry(fine, coarse)
    assert g.n_cells == coarse.max() + 1 and g.n_cells < fine.n_cells / 3
    np.testing.assert_allclose(_closure(g), 0.0, atol=1e-12)
    assert g.volume.sum() == pytest.approx(fine.volume.sum(), rel=1e-13)
    np.testing.assert_allclose(g.centroid @ g.volume, fine.centroid @ fine.volume, rtol=1e-12)
    assert list(g.markers) == list(fine.markers)
    for name, (a, b) in g.markers.items():  # flat sides: the areas add up
        fa, fb = fine.markers[name]
        assert g.area[a:b].sum() == pytest.approx(fine.area[fa:fb].sum(), rel=1e-12)
    assert np.all(g.left[:g.n_interior] < g.right[:g.n_interior])


@pytest.mark.gpu
def test_coarse_geometry_summed_on_the_gpu_equals_numpys():
    from gpusolver.backends import get_backend

    mesh = box_mesh(6, 5, 4)
    fine = build_geometry(mesh, make_plan(mesh))
    coarse = agglomerate(Topology(mesh).cell_graph)[fine.cell_order]
    host = coarse_geometry(fine, coarse)
    on_gpu = coarse_geometry(fine.to(get_backend("cupy"), np.float64), coarse)
    assert hasattr(on_gpu.volume, "__cuda_array_interface__")
    gpu = on_gpu.on_host()
    assert (gpu.n_interior, gpu.markers) == (host.n_interior, host.markers)
    np.testing.assert_array_equal(gpu.left, host.left)
    np.testing.assert_array_equal(gpu.right, host.right)
    for name in ("volume", "centroid", "normal", "area", "face_centre"):  # atomic sums
        np.testing.assert_allclose(getattr(gpu, name), getattr(host, name), rtol=1e-12,
                                   atol=1e-15, err_msg=name)


def _multigrid_solver(levels: int, order: int = 1, **kwargs):
    """LU-SGS with ``levels`` coarse levels on a perturbed flow in a square."""
    stepping = Stepping("lusgs", cfl=20.0, cfl_max=1e4, multigrid=levels,
                        sweeps=kwargs.pop("sweeps", "hyperplanes"))
    return perturbed_solver(grid_mesh(40, 40, "triangle"), gas=Gas(dim=2, mach=0.5),
                            scheme=Scheme(order=order), stepping=stepping, amplitude=0.2,
                            boundaries=FARFIELD_SQUARE, **kwargs)


def test_the_solver_takes_its_levels_from_the_plan():
    from meshorder.pipeline import PlanOptions

    mesh = grid_mesh(40, 40, "triangle")
    plan = make_plan(mesh, PlanOptions(multigrid=2, seed=7))
    solver = perturbed_solver(mesh, plan=plan, stepping=Stepping("lusgs", multigrid=2))
    assert solver.multigrid.n_cells == plan.metrics["multigrid_cells"]
    made = perturbed_solver(mesh, stepping=Stepping("lusgs", multigrid=2))  # plan made here
    assert made.plan.metrics["multigrid_cells"] == made.multigrid.n_cells


def test_coarse_sweep_colours_of_the_plan_are_those_the_solver_would_make():
    """The plan's coarse colours (``meshorder reorder --sweep-colours --multigrid``) are a
    colouring of each coarse level's cells, equal to the one made from the coarse
    geometry: the same sweeps, so the same answer, without colouring at start."""
    from meshorder.hyperplanes import colour_levels
    from meshorder.pipeline import PlanOptions
    from meshorder.topology import CSR

    mesh = grid_mesh(40, 40, "triangle")
    plan = make_plan(mesh, PlanOptions(multigrid=2, sweep_colours=True))
    assert [len(c) for c in plan.coarse_colours()] == plan.metrics["multigrid_cells"]
    stepping = Stepping("lusgs", multigrid=2, sweeps="colours")
    solver = perturbed_solver(mesh, plan=plan, stepping=stepping)
    for level, colour in zip(solver.multigrid.levels, plan.coarse_colours(), strict=True):
        g = level.discretisation.geometry
        left, right = g.left[:g.n_interior], g.right[:g.n_interior]
        assert np.all(colour[left] != colour[right])
        made, _ = colour_levels(CSR.from_pairs(left, right, g.n_cells))
        np.testing.assert_array_equal(made.level, colour)
    bare = perturbed_solver(mesh, plan=plan.replace(coarse_colour=np.zeros(0, np.int64)),
                            stepping=stepping)
    for _ in range(3):
        solver.step(), bare.step()
    np.testing.assert_array_equal(solver.conserved(), bare.conserved())


def _free_stream(solver: Solver):
    """The free stream's conserved state in every cell of ``solver``'s mesh."""
    w = np.repeat(solver.gas.free_stream[:, None], solver.n_cells, axis=1)
    return solver.backend.asarray(solver.gas.to_conserved(w), solver.dtype)


def test_free_stream_is_not_corrected():
    solver = _multigrid_solver(2)
    uniform = _free_stream(solver)
    assert len(solver.multigrid.levels) == 2
    np.testing.assert_allclose(solver.multigrid.correct([uniform], 100.0)[0], uniform,
                               rtol=0, atol=1e-13)


def test_multigrid_converges_an_airfoil_in_half_the_steps():
    """First order, M 0.5, AoA 2 on the 7,960-triangle airfoil: the lift is the slow mode
    that one grid removes slowly (measured: 309 steps to 5 orders with 3 coarse levels,
    more than 600 without)."""

    def solver(levels: int) -> Solver:
        return Solver(read_mesh(DATA / "naca0012_tri.msh"), Gas(dim=2, mach=0.5, aoa_deg=2.0),
                      AIRFOIL, scheme=Scheme(order=1), backend="numpy",
                      stepping=Stepping("lusgs", cfl=20.0, cfl_max=1e4, multigrid=levels,
                                        sweeps="colours"))

    multigrid = steps_to_fall(solver(3), 1e-4, 300)
    assert multigrid is not None
    assert steps_to_fall(solver(0), 1e-4, 2 * multigrid) is None


def test_a_coarse_step_stays_valid_by_relaxation_and_a_non_finite_one_is_dropped():
    solver = _multigrid_solver(1)
    level = solver.multigrid.levels[0]
    gas = level.discretisation.gas
    u = level.discretisation.backend.xp.asarray(_free_stream(solver)[:, :1])
    start = np.repeat(u, level.host.n_cells, axis=1)
    forcing = np.zeros_like(start)
    forcing[-1, 0] = -1e9  # would drive the energy of one cell negative
    new = solver.multigrid._smooth(level, start, forcing, 10.0)
    assert not gas.invalid(new).any()
    changed = np.abs(new - start).max(axis=0) > 0
    assert changed.any()  # the step was taken, its large changes scaled back per cell
    np.testing.assert_array_less(np.abs(new[-1] - start[-1]), 0.2 * start[-1] * (1 + 1e-12))
    forcing[-1, 0] = np.nan  # a non-finite step is dropped
    np.testing.assert_array_equal(solver.multigrid._smooth(level, start, forcing, 10.0), start)


def test_multigrid_refuses_what_it_cannot_run():
    with pytest.raises(ConfigError, match="multigrid corrects LU-SGS"):
        perturbed_solver(grid_mesh(6, 6), stepping=Stepping("rk4", multigrid=2))
    with pytest.raises(ConfigError, match="multigrid corrects LU-SGS"):
        perturbed_solver(grid_mesh(6, 6), stepping=Stepping("lusgs", multigrid=2,
                                                            local_time_step=False))
    with pytest.raises(ConfigError, match="number of coarse levels"):
        perturbed_solver(grid_mesh(6, 6), stepping=Stepping("lusgs", multigrid=-1))
    with pytest.raises(ConfigError, match="unknown multigrid cycle"):
        perturbed_solver(grid_mesh(6, 6), stepping=Stepping("lusgs", multigrid=2,
                                                            multigrid_cycle="f"))
    periodic = {"left": {"type": "periodic", "partner": "right"},
                "right": {"type": "periodic", "partner": "left"},
                "bottom": "farfield", "top": "farfield"}
    with pytest.raises(ConfigError, match="Euler equations and RANS so far"):
        perturbed_solver(grid_mesh(6, 6), gas=Gas(dim=2, mach=0.3, reynolds=100.0),
                         stepping=Stepping("lusgs", multigrid=1))
    with pytest.raises(ConfigError, match="periodic"):
        perturbed_solver(grid_mesh(6, 6), boundaries=periodic,
                         stepping=Stepping("lusgs", multigrid=1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_coarse_corrections_are_relaxed_as_lusgs_updates(backend):
    """A coarse correction of +-50% of the fine states (random per coarse cell) changes no
    cell's density or total energy by more than max_update (20%), keeps every state
    physical, and is the same in the prolongation kernel (compiled for the CPU, or on the
    GPU) as in array code; a non-finite correction leaves its cells as they were."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    solver = perturbed_solver(grid_mesh(24, 20, "triangle"), gas=Gas(dim=2, mach=0.5),
                              stepping=Stepping("lusgs", multigrid=1), boundaries=FARFIELD_SQUARE,
                              backend="cupy" if backend == "cupy" else "numpy")
    if backend == "host":
        attach_host_kernels(solver)
    mg = solver.multigrid
    level = mg.levels[0]
    backend, host = solver.backend, solver.backend.to_host
    u = solver.u
    start = backend.asarray(np.ones((4, level.host.n_cells)) * host(u).mean(axis=1)[:, None])
    state = start * (1 + backend.asarray(rng.uniform(-0.5, 0.5, start.shape)))
    state[:, 0] = np.nan
    expected = host(mg._prolong(level, u, state - start))
    got = backend.xp.empty_like(u)
    buffers = {"start": start, "coarse": backend.asarray(host(level.coarse), np.int32)}
    mg.kernels._transfer(mg.kernels.prolong, u.shape[1], buffers, u, state, start, got)
    np.testing.assert_allclose(host(got), expected, rtol=1e-13, atol=1e-15)
    halved = host(mg._prolong(level, u, 0.5 * (state - start)))  # a damped correction
    mg.kernels._transfer(mg.kernels.prolong, u.shape[1], buffers, u, state, start, got,
                         weight=0.5)
    np.testing.assert_allclose(host(got), halved, rtol=1e-13, atol=1e-15)
    assert not np.allclose(halved, expected)  # the weight acted
    fine = host(u)
    change = np.abs(expected - fine)[[0, -1]] / np.abs(fine)[[0, -1]]
    assert change.max() <= 0.2 * (1 + 1e-12)
    assert not solver.gas.invalid(expected).any()
    nan_cells = host(level.coarse) == 0
    np.testing.assert_array_equal(expected[:, nan_cells], fine[:, nan_cells])
    assert change[:, ~nan_cells].max() > 0.19  # some cells were relaxed


def test_a_correction_of_weight_zero_leaves_the_fine_state_as_it_was():
    solver = perturbed_solver(grid_mesh(24, 20, "triangle"), gas=Gas(dim=2, mach=0.5),
                              stepping=Stepping("lusgs", multigrid=1),
                              boundaries=FARFIELD_SQUARE)
    mg, u = solver.multigrid, solver.u
    assert not np.allclose(mg.correct([u], 20.0)[0], u)
    mg.weight = 0.0
    np.testing.assert_array_equal(mg.correct([u], 20.0)[0], u)


@pytest.mark.gpu
@pytest.mark.parametrize("warp_cells, lanes", [(0, 8), (10**6, 32)])
def test_sweeps_that_share_a_cell_among_threads_match_numpy(warp_cells, lanes, monkeypatch):
    """Cells of more slots than ``LANE_SLOTS`` (here 2: every level's) are swept by
    ``lanes`` threads each on the GPU (8 on levels of more than ``WARP_CELLS`` cells,
    here every one; a warp on smaller ones), their sums added by shuffles: the steps and
    cycles are the array code's to round-off."""
    pytest.importorskip("cupy")
    monkeypatch.setattr(LevelKernels, "LANE_SLOTS", 2)
    monkeypatch.setattr(LevelKernels, "WARP_CELLS", warp_cells)
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    reference, device = (
        perturbed_solver(grid_mesh(40, 36, "triangle"), gas=Gas(dim=2, mach=0.5),
                         stepping=Stepping("lusgs", cfl=20.0, cfl_max=1e3, multigrid=2),
                         seed=seed, boundaries=FARFIELD_SQUARE, backend=kind)
        for kind in ("numpy", "cupy"))
    sweeps = [device.fused_implicit[0].kernels,
              *(level.lusgs.kernels for level in device.multigrid.levels)]
    assert [kernels.lanes for kernels in sweeps] == [lanes] * 3
    for _ in range(4):
        np.testing.assert_allclose(device.step(), reference.step(), rtol=1e-10)
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cycle, sweeps, flux, damped", [("v", "hyperplanes", "roe", False),
                                                         ("w", "hyperplanes", "roe", False),
                                                         ("auto", "hyperplanes", "roe", False),
                                                         ("v", "colours", "jst", False),
                                                         ("v", "hyperplanes", "roe", True)])
def test_fused_multigrid_cycles_match_numpy(backend, cycle, sweeps, flux, damped):
    """Roe, and the M6 case's JST with colour sweeps (the coarse levels sweep the same
    levels in kernels as in array code); ``auto`` turned W after two steps (the kernels'
    cycle recorded again); ``damped``: the coarse correction's weight halved after two
    steps (recorded again)."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    solvers = []
    for kind in ("numpy", backend):
        stepping = Stepping("lusgs", cfl=20.0, cfl_max=1e3, multigrid=2, multigrid_cycle=cycle,
                            sweeps=sweeps)
        solver = perturbed_solver(grid_mesh(40, 36, "triangle"), gas=Gas(dim=2, mach=0.5),
                                  stepping=stepping, seed=seed, boundaries=FARFIELD_SQUARE,
                                  backend="cupy" if kind == "cupy" else "numpy",
                                  scheme=Scheme(flux))
        if kind == "host":
            attach_host_kernels(solver)
        solvers.append(solver)
    reference, device = solvers
    assert device.multigrid.kernels is not None and reference.multigrid.kernels is None
    assert len(reference.multigrid.levels) == 2
    for step in range(4):
        if step == 2:
            assert [s.multigrid.deepen() for s in solvers] == [cycle == "auto"] * 2
            if damped:
                assert [s.multigrid.damp() for s in solvers] == [0.5, 0.5]
        norms = [s.step() for s in solvers]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-10)
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)


def _airfoil_parts(n_parts: int, levels: int, order: int = 1, backend: str = "numpy",
                   cfl_max: float = 1e4) -> Solver:
    """LU-SGS colour sweeps with ``levels`` coarse levels on the airfoil, M 0.5, AoA 2
    (first order unless ``order``), on ``n_parts`` parts in this process (1: the mesh)."""
    from meshorder.pipeline import PlanOptions

    mesh = read_mesh(DATA / "naca0012_tri.msh")
    stepping = Stepping("lusgs", cfl=20.0, cfl_max=cfl_max, multigrid=levels,
                        sweeps="colours")
    gas, scheme = Gas(dim=2, mach=0.5, aoa_deg=2.0), Scheme(order=order)
    if n_parts == 1:
        return Solver(mesh, gas, AIRFOIL, scheme=scheme, backend=backend, stepping=stepping)
    plan = make_plan(mesh, PlanOptions(partitions=n_parts))
    return Solver([plan.part(p) for p in range(n_parts)], gas, AIRFOIL, scheme=scheme,
                  backend=backend, stepping=stepping)


@pytest.mark.parametrize("n_parts", [3, 4])
def test_multigrid_on_parts_converges_as_on_the_whole_mesh(n_parts):
    """Each part agglomerates its own cells and exchanges every coarse level's halo: the
    parts converge in about the whole mesh's steps (measured: 182 steps to 4 orders on
    the mesh, 187 on 3 parts, 198 on 4; more than 700 on 3 parts without multigrid)."""
    one = steps_to_fall(_airfoil_parts(1, 3), 1e-4, 300)
    parts = _airfoil_parts(n_parts, 3)
    assert len(parts.multigrid.levels) == 2  # the coarse level of 64 cells is never made
    on_parts = steps_to_fall(parts, 1e-4, 300)
    print(one, on_parts)
    assert one is not None and on_parts is not None and on_parts <= 1.15 * one


def test_a_coarse_levels_halo_holds_its_neighbours_coarse_cells():
    """The parts' coarse levels: every halo coarse cell, restricted and exchanged, holds
    its owner's own coarse state, and the parts' own coarse cells cover each fine
    part's volume once."""
    solver = _airfoil_parts(3, 2)
    mg = solver.multigrid
    rng = np.random.default_rng(3)
    states = [rng.uniform(1, 2, u.shape) for u in solver.states]
    solver.transport.exchange(states)  # the fine halos hold their owners' states
    for k in range(len(mg.levels)):
        levels = [mine[k] for mine in mg.parts]
        states = [mg._restrict(level, u * level.finer_volume) / level.host.volume
                  for level, u in zip(levels, states, strict=True)]
        before = [u.copy() for u in states]
        mg._exchange(k, states)
        for level, u, old in zip(levels, states, before, strict=True):
            np.testing.assert_array_equal(u[:, :level.n_own], old[:, :level.n_own])
            assert not np.array_equal(u[:, level.n_own:], old[:, level.n_own:])
        halo = mg.transports[k].halos
        for p in range(len(levels)):
            for q, positions in halo[p].receive.items():
                np.testing.assert_array_equal(states[p][:, positions],
                                              states[q][:, halo[q].send[p]])
    volumes = sum(mine[0].host.volume[:mine[0].n_own].sum() for mine in mg.parts)
    assert volumes == pytest.approx(sum(layout.geometry.volume[:layout.n_own].sum()
                                        for layout in solver.layouts), rel=1e-13)


def test_free_stream_is_not_corrected_on_parts():
    from meshorder.pipeline import PlanOptions

    plan = make_plan(grid_mesh(40, 40, "triangle"), PlanOptions(partitions=3))
    solver = Solver([plan.part(p) for p in range(3)], Gas(dim=2, mach=0.5), FARFIELD_SQUARE,
                    scheme=Scheme(order=1), backend="numpy",
                    stepping=Stepping("lusgs", cfl=20.0, multigrid=2))
    assert len(solver.multigrid.levels) == 2
    states = [u.copy() for u in solver.states]
    with np.errstate(divide="ignore"):  # as in a step: no change, no relaxation
        corrected = solver.multigrid.correct(solver.states, 100.0)
    for new, old in zip(corrected, states, strict=True):
        np.testing.assert_allclose(new, old, rtol=0, atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_multigrid_on_parts_matches_numpy(backend):
    """Second order, the parts' cycles in kernels (each level's exchanges between the
    kernels) against their array code."""
    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    solvers = [_airfoil_parts(3, 2, order=2, cfl_max=1e3),
               _airfoil_parts(3, 2, order=2, cfl_max=1e3,
                              backend="cupy" if backend == "cupy" else "numpy")]
    if backend == "host":
        attach_host_kernels(solvers[1])
    reference, device = solvers
    assert device.multigrid.kernels is not None and reference.multigrid.kernels is None
    u = reference.conserved() * (1 + 0.05 * np.random.default_rng(seed).uniform(-1, 1, (4, 1)))
    for solver in solvers:
        solver.set_conserved(u)
    for _ in range(4):
        norms = [s.step() for s in solvers]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-10)
    np.testing.assert_allclose(device.conserved(), reference.conserved(), rtol=1e-11,
                               atol=1e-13)


def test_multigrid_on_parts_frees_its_recorded_cycles_before_its_transports():
    """Its coarse levels' transports share the parts' NCCL communicator, which is
    destroyed only after every CUDA graph that recorded its operations: the recorded
    cycle goes first (attributes go in the order set), and a new transport rebuilds the
    levels on it."""
    from gpusolver.parallel import Loopback

    solver = _airfoil_parts(2, 2)
    names = list(vars(solver.multigrid))
    assert names.index("kernels") < names.index("transports")
    old = solver.multigrid
    solver.use_transport(Loopback)
    assert solver.multigrid is not old
    assert all(transport is not None and transport is not before for transport, before
               in zip(solver.multigrid.transports, old.transports, strict=True))


def test_the_coarse_levels_take_the_lusgs_over_relaxation():
    solver = _multigrid_solver(2, sweeps="colours")
    assert [level.lusgs.omega for level in solver.multigrid.levels] == [OMEGA, OMEGA]
    stepping = Stepping("lusgs", cfl=20.0, multigrid=2, lusgs_omega=3.0)
    solver = perturbed_solver(grid_mesh(40, 40, "triangle"), stepping=stepping)
    assert solver.lusgs.omega == 3.0
    assert [level.lusgs.omega for level in solver.multigrid.levels] == [3.0, 3.0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_levels_graph_from_the_fine_faces_is_the_agglomerated_chains(seed):
    """The graph multigrid agglomerates below a refinement's generations, made in one
    pass from the fine faces through each fine cell's cell on the level, is the graph the
    chain of coarse graphs gives, level by level."""
    from gpusolver.solvers.fv.multigrid import _level_graph
    from meshorder.agglomeration import coarse_graph

    topology = Topology(box_mesh(5, 4, 3))
    inner = topology.face_cells[topology.interior]
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    n = int(inner.max()) + 1
    first = rng.permutation(np.arange(n) // 3)  # any map onto every coarse cell
    second = rng.permutation(np.arange(first.max() + 1) // 2)
    graph = CSR.from_pairs(inner[:, 0], inner[:, 1], n)
    chain = coarse_graph(coarse_graph(graph, first), second)
    direct = _level_graph(inner[:, 0], inner[:, 1], second[first])
    np.testing.assert_array_equal(direct.indptr, chain.indptr)
    np.testing.assert_array_equal(direct.indices, chain.indices)
