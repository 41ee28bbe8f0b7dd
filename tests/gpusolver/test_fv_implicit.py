"""LU-SGS implicit stepping and the characteristic far field."""

from __future__ import annotations

import numpy as np
import pytest

from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from gpusolver.solvers.fv.lusgs import LUSGS, cell_slots, line_sweeps
from meshorder.testing import grid_mesh

from .fv_cases import FARFIELD_SQUARE, perturbed_solver, stretched_grid


def sequential_lusgs(lusgs: LUSGS, u, residual, dt, order=None):
    """The LU-SGS sweeps cell by cell, from the face list (linearised coupling: the flux
    Jacobian of the upstream cell times its change): forward in ``order`` (default: plan
    order), backward in reverse."""
    d = lusgs.discretisation
    g, gas = d.geometry, d.gas
    ni, n = g.n_interior, g.n_cells
    lam = d.face_spectral_radius(u, lusgs.omega)
    diagonal = g.volume / dt + 0.5 * d.accumulator.combine(lam * g.area, lam * g.area)
    neighbours = [[] for _ in range(n)]
    for f in range(ni):
        left, right = g.left[f], g.right[f]
        neighbours[left].append((right, g.normal[:, f], f))
        neighbours[right].append((left, -g.normal[:, f], f))

    def coupling(i, du, upstream):
        total = np.zeros(u.shape[0])
        for j, normal, f in neighbours[i]:
            if upstream(j):
                change = gas.euler_flux_jvp(gas.to_primitive(u[:, j:j + 1]), du[:, j:j + 1],
                                            normal[:, None])
                total += 0.5 * g.area[f] * (change[:, 0] - lam[f] * du[:, j])
        return total

    order = np.arange(n) if order is None else order
    position = np.argsort(order)
    du_star = np.zeros_like(u)
    for i in order:
        du_star[:, i] = (residual[:, i] - coupling(
            i, du_star, lambda j, i=i: position[j] < position[i])) / diagonal[i]
    du = du_star.copy()
    for i in order[::-1]:
        du[:, i] = du_star[:, i] - coupling(
            i, du, lambda j, i=i: position[j] > position[i]) / diagonal[i]
    return du


@pytest.mark.parametrize("kind", ["quad", "triangle"])
def test_level_sweeps_equal_the_sequential_sweeps(kind):
    solver = perturbed_solver(grid_mesh(6, 5, kind), stepping=Stepping("lusgs", cfl=20.0),
                              scheme=Scheme(order=1))
    u = solver.u
    residual = solver.discretisation.residual(u)
    dt = solver.time_step(u)
    expected = sequential_lusgs(solver.lusgs, u, residual, dt)
    np.testing.assert_allclose(solver.lusgs(u, residual, dt), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["quad", "triangle"])
def test_colour_sweeps_equal_the_sequential_sweeps_in_colour_order(kind):
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = grid_mesh(6, 5, kind)
    plan = make_plan(mesh, PlanOptions(sweep_colours=True))
    solver = perturbed_solver(mesh, plan=plan, scheme=Scheme(order=1),
                              stepping=Stepping("lusgs", cfl=20.0, sweeps="colours"))
    assert solver.lusgs.n_levels[0] <= 5  # quads: 2 colours, triangles: at most 4
    u = solver.u
    residual = solver.discretisation.residual(u)
    dt = solver.time_step(u)
    expected = sequential_lusgs(solver.lusgs, u, residual, dt, order=plan.forward_order)
    np.testing.assert_allclose(solver.lusgs(u, residual, dt), expected, rtol=1e-12, atol=1e-14)


def test_line_sweeps_solve_the_line_factorisation_exactly():
    """``(T + L) T^-1 (T + U) dU = R`` with the matrices written out: ``T`` the diagonal
    and the blocks between neighbours along a line, ``L`` and ``U`` the other blocks
    from earlier and later levels of lines."""
    solver = perturbed_solver(stretched_grid(6, 5), stepping=Stepping("lusgs", cfl=20.0),
                              scheme=Scheme(order=1))
    d, host = solver.discretisation, solver.host
    lines = line_sweeps(host)
    forward = lines[0]
    starts = forward.line_offsets
    assert sorted(np.diff(starts).tolist()) == [1] * 6 + [4] * 6  # columns up from the wall
    lusgs = LUSGS(d, host, lines=lines, kernels=False)
    for level, twin in zip(lusgs.backward, lusgs.forward[::-1], strict=True):
        np.testing.assert_array_equal(level.cells, twin.cells)  # so one factorisation
        assert level.lines is twin.lines                         # serves both sweeps
    u, residual, dt = solver.u, d.residual(solver.u), solver.time_step(solver.u)
    du = lusgs(u, residual, dt)

    g, n, n_vars = d.geometry, solver.n_cells, u.shape[0]
    lam = d.face_spectral_radius(u, lusgs.omega)
    diagonal = g.volume / dt + 0.5 * d.accumulator.combine(lam * g.area, lam * g.area)
    line = np.repeat(np.arange(len(starts) - 1), np.diff(starts))[np.argsort(forward.order)]
    matrices = {name: np.zeros((n_vars * n, n_vars * n)) for name in "TLU"}
    matrices["T"][np.diag_indices(n_vars * n)] = np.tile(diagonal, n_vars)
    w = d.gas.to_primitive(u)
    for f in range(g.n_interior):
        for i, j, normal in ((g.left[f], g.right[f], g.normal[:, f]),
                             (g.right[f], g.left[f], -g.normal[:, f])):
            block = 0.5 * g.area[f] * (d.gas.euler_flux_jvp(
                np.repeat(w[:, j:j + 1], n_vars, 1), np.eye(n_vars), normal[:, None])
                - lam[f] * np.eye(n_vars))
            name = ("T" if line[i] == line[j] else
                    "L" if forward.level[j] < forward.level[i] else "U")
            matrices[name][np.ix_(np.arange(n_vars) * n + i, np.arange(n_vars) * n + j)] += block
    t, lower, upper = matrices["T"], matrices["L"], matrices["U"]
    applied = (t + lower) @ np.linalg.solve(t, (t + upper) @ du.ravel())
    np.testing.assert_allclose(applied, residual.ravel(), rtol=0, atol=1e-13)


@pytest.mark.gpu
def test_line_sweeps_in_array_code_on_cupy_are_numpys():
    """The array code's line sweeps (each line's block LU once per operator) on CuPy
    against NumPy: four steps from a perturbed state, fp64 (checked on an H200: 2e-13)."""
    pytest.importorskip("cupy")
    from .fv_cases import marker_names

    mesh = stretched_grid(12, 16)
    stepping = Stepping("lusgs", cfl=20.0, cfl_max=200.0, sweeps="colours",
                        line_implicit=True)
    runs = []
    for backend in ("numpy", "cupy"):
        solver = Solver(mesh, Gas(dim=2, mach=0.6, aoa_deg=2.0),
                        {m: "farfield" for m in marker_names(mesh)}, scheme=Scheme("roe", 2),
                        stepping=stepping, backend=backend, kernels="arrays")
        u = solver.conserved() * (1 + 0.05 * np.random.default_rng(3).uniform(-1, 1, (4, 1)))
        solver.set_conserved(u)
        runs.append(([solver.step() for _ in range(4)], solver.conserved()))
    (norms, state), (device_norms, device_state) = runs
    np.testing.assert_allclose(device_norms, norms, rtol=1e-11)
    np.testing.assert_allclose(device_state, state, rtol=1e-12, atol=1e-14)


def test_lines_cross_no_face_far_off_the_line_between_its_centroids():
    """Thin cells sheared so that each layer's centroids sit far to the side of the one
    below (84 degrees off the faces' normals): no lines at the default 45-degree limit,
    columns at 90."""
    mesh = grid_mesh(4, 6)
    mesh.points[:, 1] *= 0.01
    mesh.points[:, 0] += 10.0 * mesh.points[:, 1]  # ten cell heights a row
    solver = perturbed_solver(mesh, stepping=Stepping("lusgs", cfl=20.0))
    limited, unlimited = (line_sweeps(solver.host, max_angle=angle)[0] for angle in (45, 90))
    assert max(np.diff(limited.line_offsets)) == 1
    assert sorted(np.diff(unlimited.line_offsets).tolist()) == [6] * 4


def test_colour_sweeps_without_a_plan_make_one_with_colour_levels():
    solver = perturbed_solver(grid_mesh(6, 5, "triangle"),
                              stepping=Stepping("lusgs", sweeps="colours"))
    assert solver.plan.parameters["sweep_colours"]
    assert solver.lusgs.n_levels[0] <= 4


@pytest.mark.parametrize("sweeps, flag", [("colours", "--sweep-colours"),
                                          ("hyperplanes", "--hyperplanes")])
def test_a_plan_with_the_other_kind_of_sweep_levels_is_refused(sweeps, flag):
    from gpusolver.errors import ConfigError
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = grid_mesh(5, 4, "triangle")
    plan = make_plan(mesh, PlanOptions(hyperplanes=True, sweep_colours=sweeps != "colours"))
    with pytest.raises(ConfigError, match=f"meshorder reorder {flag}"):
        perturbed_solver(mesh, plan=plan, stepping=Stepping("lusgs", sweeps=sweeps))


def test_an_unknown_kind_of_sweeps_is_refused():
    from gpusolver.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown sweeps 'diagonal'; valid: hyperplanes"):
        perturbed_solver(grid_mesh(3, 3), stepping=Stepping("lusgs", sweeps="diagonal"))


def test_level_kernels_need_the_fused_residual():
    solver = perturbed_solver(grid_mesh(3, 3))  # numpy backend: no fused residual
    with pytest.raises(ValueError, match="need the fused residual"):
        LUSGS(solver.discretisation, solver.host, kernels=True)


def test_cell_slots_hold_each_interior_face_twice_with_outward_normals():
    solver = perturbed_solver(grid_mesh(4, 3, "triangle"))
    host = solver.host
    slots = cell_slots(host)
    used = slots.area > 0
    assert used.sum() == 2 * host.n_interior
    cells = np.repeat(np.arange(host.n_cells)[:, None], slots.area.shape[1], axis=1)
    outward = host.centroid[:, slots.neighbour] - host.centroid[:, cells]
    assert ((outward * slots.normal).sum(axis=0)[used] > 0).all()


def test_a_small_implicit_step_is_the_explicit_euler_step():
    solver = perturbed_solver(grid_mesh(5, 5), stepping=Stepping("lusgs"))
    u = solver.u
    residual = solver.discretisation.residual(u)
    explicit = residual / solver.discretisation.geometry.volume
    for dt in (1e-4, 1e-5):
        implicit = solver.lusgs(u, residual, dt) / dt
        error = np.abs(implicit - explicit).max() / np.abs(explicit).max()
        assert error < 1e3 * dt


def test_implicit_steps_return_to_the_free_stream_faster_than_explicit_ones():
    mesh = grid_mesh(12, 12, "triangle")

    def run(stepping):
        solver = perturbed_solver(mesh, stepping=stepping, scheme=Scheme(order=1), seed=3)
        history = [solver.step().max() for _ in range(200)]
        return solver, history

    implicit, implicit_history = run(Stepping("lusgs", cfl=1e3))
    _, explicit_history = run(Stepping("rk4", cfl=1.5))
    assert implicit_history[-1] < 1e-6 * implicit_history[0]
    assert implicit_history[-1] < 1e-3 * explicit_history[-1]
    free_stream = np.repeat(implicit.gas.free_stream[:, None], mesh.n_cells, axis=1)
    np.testing.assert_allclose(implicit.primitive(), free_stream, atol=1e-6)


def test_an_entropy_wave_leaves_through_the_far_field_without_pressure_waves():
    solver = Solver(grid_mesh(30, 10), Gas(dim=2, mach=0.5), FARFIELD_SQUARE,
                    scheme=Scheme(order=1), stepping=Stepping("rk4", cfl=1.5),
                    backend="numpy")
    x, y = solver.centroids()
    w = solver.primitive()
    w[0] *= 1.0 + 0.2 * np.exp(-((x - 0.6) ** 2 + (y - 0.5) ** 2) / 0.02)
    solver.set_primitive(w)
    mass = solver.primitive()[0].sum()
    for _ in range(300):
        solver.step()
    w = solver.primitive()
    assert w[0].sum() < mass - 0.5 * (mass - w.shape[1])  # most of the bump has left
    np.testing.assert_allclose(w[1:], np.repeat(solver.gas.free_stream[1:, None],
                                                w.shape[1], axis=1), atol=1e-12)


def test_the_sweeps_use_the_plans_hyperplanes():
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = grid_mesh(7, 5, "triangle")
    plan = make_plan(mesh, PlanOptions(hyperplanes=True))
    with_plan = perturbed_solver(mesh, plan=plan, stepping=Stepping("lusgs"))
    own = perturbed_solver(mesh, plan=make_plan(mesh, cell_order=plan.cell_order),
                           stepping=Stepping("lusgs"))  # its own hyperplanes, same cells
    assert plan.forward_order.size
    for a, b in zip(with_plan.lusgs.forward, own.lusgs.forward, strict=True):
        np.testing.assert_array_equal(np.sort(a.cells), np.sort(b.cells))
    u, dt = with_plan.u, with_plan.time_step(with_plan.u)
    residual = with_plan.discretisation.residual(u)
    np.testing.assert_allclose(with_plan.lusgs(u, residual, dt), own.lusgs(u, residual, dt),
                               rtol=1e-13, atol=1e-15)


def test_the_cfl_number_stays_below_cfl_frozen_once_the_limiter_is_frozen():
    stepping = Stepping("lusgs", cfl=10.0, cfl_max=1e4, freeze_limiter=0.5, cfl_frozen=100.0)
    solver = perturbed_solver(grid_mesh(6, 5, "triangle"), stepping=stepping)
    solver.step()
    solver._adapt(1e-3 * solver.first_residual)  # three orders down: the ramp asks for 1e4
    assert solver.cfl == 1e4
    solver.discretisation.limiter_ceiling = solver.discretisation.limiter_values
    solver._adapt(1e-4 * solver.first_residual)
    assert solver.cfl == 100.0
