"""The vortex method's restructuring, time loop and case files."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.backends import get_backend
from gpusolver.backends.host import compiler
from gpusolver.cli import main
from gpusolver.errors import ConfigError
from gpusolver.run import run_case
from gpusolver.solvers.vortex import device, restructure
from gpusolver.solvers.vortex import solver as solver_module
from gpusolver.solvers.vortex.body import circle, rounded_plate
from gpusolver.solvers.vortex.case import VortexCase
from gpusolver.solvers.vortex.sheet import VortexSheet, mean_tangential
from gpusolver.solvers.vortex.solver import VortexSettings, VortexSolver
from gpusolver.solvers.vortex.surface import front_panel, surface_forces
from gpusolver.systems import load_case

needs_compiler = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")


def test_moves_into_or_through_the_body_are_absorbed_and_others_not():
    plate = rounded_plate(200, 1.0, 0.02)
    start = np.array([[0.5, 0.1], [0.5, 0.1], [0.5, 0.1], [0.5, 0.1], [2.0, 2.0]])
    end = np.array([[0.5, -0.1],   # through the thin plate in one move
                    [0.5, 0.0],    # ends inside
                    [0.6, 0.05],   # stays above
                    [0.5, 0.0101],  # just above the surface
                    [2.0, -2.0]])  # passes far beyond its tip
    assert restructure.absorbed(start, end, plate).tolist() == [True, True, False, False,
                                                                False]


def _random_elements(seed: int):
    """200 elements in the unit square, circulations of both signs, merging radius 0.05."""
    rng = np.random.default_rng(seed)
    positions = rng.uniform(0, 1, (200, 2))
    gammas = rng.choice([-1.0, 1.0], 200) * rng.uniform(0.5, 1.5, 200)
    return positions, gammas, np.full(200, 0.05)


def _merged_until_settled(positions, gammas, radii, signs: str):
    """Thirty rounds of merging (pairs that compete wait a round)."""
    for _ in range(30):
        positions, gammas = restructure.apply_merges(
            positions, gammas,
            restructure.partners(positions, gammas, radii[:len(gammas)], signs))
    return positions, gammas


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_merging_keeps_circulation_and_impulse_and_leaves_no_close_pair_of_a_sign(seed):
    positions, gammas, radii = _random_elements(seed)
    merged_positions, merged_gammas = _merged_until_settled(positions, gammas, radii, "same")
    for sign in (1, -1):
        mine = np.sign(gammas) == sign
        merged = np.sign(merged_gammas) == sign
        assert merged_gammas[merged].sum() == pytest.approx(gammas[mine].sum())
        assert (merged_gammas[merged, None] * merged_positions[merged]).sum(axis=0) == \
            pytest.approx((gammas[mine, None] * positions[mine]).sum(axis=0))
    partner = restructure.partners(merged_positions, merged_gammas,
                                   radii[:len(merged_gammas)])
    assert np.all(partner < 0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_merging_of_any_sign_keeps_circulation_and_leaves_no_close_pair(seed):
    positions, gammas, radii = _random_elements(seed)
    merged_positions, merged_gammas = _merged_until_settled(positions, gammas, radii, "any")
    assert merged_gammas.sum() == pytest.approx(gammas.sum())
    assert np.abs(merged_gammas).sum() < np.abs(gammas).sum()  # opposite ones cancelled
    assert np.all(restructure.partners(merged_positions, merged_gammas,
                                       radii[:len(merged_gammas)], "any") < 0)


def test_competing_pairs_wait():
    # 0 -> 1 -> 2: 1 seeks 2, so (0, 1) waits and (1, 2) merges; 3 and 4 both claim 5:
    # the lower wins
    partner = np.array([1, 2, -1, 5, 5, -1])
    assert restructure.accepted(partner).tolist() == [False, True, False, True, False, False]


@needs_compiler
@pytest.mark.parametrize("chunk", [device.CHUNK, device.BLOCK])
def test_the_restructuring_kernels_equal_the_numpy_rules(chunk, monkeypatch):
    monkeypatch.setattr(device, "CHUNK", chunk)  # partners over one chunk or four
    rng = np.random.default_rng(3)
    print("seed 3")
    backend = get_backend("numpy")
    body = circle(64, 0.5)
    start = rng.normal(0, 0.7, (400, 2))
    end = start + rng.normal(0, 0.2, (400, 2))
    arrays = device.BodyArrays(backend, body, np.float64)
    assert np.array_equal(device.absorbed(backend, start, end, arrays),
                          restructure.absorbed(start, end, body))
    gammas = rng.normal(size=400)
    radii = rng.uniform(0.02, 0.1, 400)
    for signs in ("same", "any"):
        assert np.array_equal(device.partners(backend, start, gammas, radii, signs),
                              restructure.partners(start, gammas, radii, signs))
    intensity = rng.normal(size=64)
    out = np.zeros((400, 2))
    device.add_sheet_velocity(backend, end, intensity, arrays, out, 0.01)
    assert np.allclose(out, VortexSheet(body).velocity(intensity, end, 0.01), atol=1e-13)
    assert np.allclose(device.mean_tangential(backend, end, gammas, arrays),
                       mean_tangential(end, gammas, body), rtol=1e-12, atol=1e-12)


def _solver(**overrides):
    options = {"reynolds": 100.0, "dt": 0.02} | overrides
    return VortexSolver(circle(60, 0.5), VortexSettings(**options), backend="numpy")


def test_a_step_conserves_circulation_and_keeps_the_wake_out_of_the_body():
    solver = _solver()
    for _ in range(15):
        loads = solver.step()
        # the free vortices and the next sheet add to zero: the wake holds only what the
        # wall absorbed in the last step (made up by the next sheet)
        positions = solver.positions
        assert np.all(np.hypot(*positions.T) > 0.5 * np.cos(np.pi / 60) - 1e-12)
    assert loads.elements == solver.n_elements > 60
    sheet = solver.sheet_intensity()
    total = solver.gammas.sum() + (sheet * solver.body.lengths).sum()
    assert abs(total) < 1e-12


def test_a_vortex_leaving_the_far_field_puts_no_circulation_around_the_body():
    # a vortex of circulation 1 beyond the far distance is dropped; it stays counted in
    # the flow, so the sheet and the free elements still add to minus it (not to zero,
    # which would wrap its circulation around the body: a lift of 2 Gamma / (U D))
    solver = _solver()
    solver.set_state(np.array([[30.0, 0.0]]), np.array([1.0]), 0.0, 0)
    solver.step()
    assert solver.far_circulation == 1.0
    sheet = solver.sheet_intensity()
    assert solver.gammas.sum() + (sheet * solver.body.lengths).sum() == pytest.approx(-1.0)


def test_the_first_step_sheds_the_potential_flows_slip():
    # from rest, the sheet is the potential flow's slip -2 U sin(theta), and the new
    # elements carry it; the symmetric start has no lift
    solver = _solver()
    loads = solver.step()
    theta = np.arctan2(*solver.body.midpoints[:, ::-1].T)
    intensity = solver.gammas[:60] / solver.body.lengths  # none absorbed at the first step
    assert np.allclose(intensity, -2 * np.sin(theta), atol=0.02)
    assert abs(loads.cy) < 1e-10


def test_the_friction_of_an_impulsive_start_is_rayleighs_layer():
    # just after an impulsive start the wall carries Rayleigh's layer under the potential
    # flow's slip 2 U sin(theta): friction drag sqrt(8 pi / (Re t U / R)) (Re on the
    # diameter), symmetric so no friction lift (but for round-off)
    solver = VortexSolver(circle(200, 0.5), VortexSettings(reynolds=100.0, dt=0.008),
                          backend="numpy")
    ratios, lift = [], []
    for _ in range(25):
        loads = solver.step()
        ratios.append(loads.cx_friction / np.sqrt(8 * np.pi / (100 * loads.time / 0.5)))
        lift.append(loads.cy_friction)
    print("friction / Rayleigh's over the last steps", np.round(ratios[-5:], 3))
    assert 0.95 < np.mean(ratios[-5:]) < 1.15
    assert np.abs(lift).max() < 0.01 * loads.cx_friction  # symmetric but for round-off


def test_the_default_radius_floor_keeps_the_fourier_number_at_a_tenth_up_to_2_panels():
    # the floor is sqrt(10 nu dt) (Fourier number nu dt / floor^2 = 0.1), capped at two
    # panel lengths: Re 1000 with dt 0.01 is under the cap, Re 10 with dt 0.1 above it
    for reynolds, dt, capped in ((1000.0, 0.01, False), (10.0, 0.1, True)):
        solver = _solver(reynolds=reynolds, dt=dt)
        two_panels = solver_module.FLOOR_PANELS * solver.panel_length
        fourier = solver.nu * dt / solver.radius_floor**2
        if capped:
            assert solver.radius_floor == pytest.approx(two_panels)
            assert fourier > solver_module.FOURIER_MAX
        else:
            assert solver.radius_floor < two_panels
            assert fourier == pytest.approx(solver_module.FOURIER_MAX)


def test_the_radius_floor_steadies_the_diffusion_but_leaves_the_walls_vorticity():
    # a floor of 2 panel lengths changes the diffusive velocities next to the wall; the
    # wall's vorticity (the friction) takes radii floored at 0.2 panel lengths whatever
    # the floor, so a thin layer's friction is not smeared
    panel = _solver().panel_length
    grown = _solver(radius_floor=solver_module.FLOOR_PANELS * panel)
    for _ in range(6):
        grown.step()
    small = _solver(radius_floor=solver_module.WALL_FLOOR_PANELS * panel)
    w_grown, wall_grown = grown._diffusion(grown.positions, grown.gammas)
    w_small, wall_small = small._diffusion(grown.positions, grown.gammas)
    np.testing.assert_array_equal(wall_grown, wall_small)
    assert np.abs(w_grown - w_small).max() > 0.1 * np.abs(w_small).max()


def test_the_pressure_along_the_wall_adds_up_to_the_impulses_pressure_force():
    # the pressure is the running sum of the vorticity the wall puts in; integrated over
    # the contour it gives the impulse's force (born less absorbed), and the friction
    # coefficients give the friction's part of the loads
    solver = _solver()
    for _ in range(8):
        loads = solver.step()
    pressure, _, friction, friction_moment = surface_forces(solver.body, solver.surface,
                                                           (0.0, 0.0))
    length = solver.reference_length
    assert np.allclose(pressure / length, [loads.cx - loads.cx_friction,
                                           loads.cy - loads.cy_friction], rtol=1e-3, atol=1e-3)
    assert np.allclose(friction / length, [loads.cx_friction, loads.cy_friction], rtol=1e-12)
    assert friction_moment != 0
    assert solver.surface.cp[front_panel(solver.body, (1.0, 0.0))] == 1.0


def test_from_rest_the_probed_flow_is_the_potential_flow_past_the_cylinder():
    # no wake yet: the sheet alone turns the stream around the body, and the probe adds it
    solver = VortexSolver(circle(400, 0.5), VortexSettings(reynolds=100.0, dt=0.02),
                          backend="numpy")
    angle = np.linspace(0.1, 3.0, 7)
    radius = np.linspace(0.6, 2.0, 7)
    points = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    ratio = (0.5 / radius) ** 2  # potential flow: u_r = (1 - R^2/r^2) cos, u_t = -(1 + ..) sin
    u_r, u_t = (1 - ratio) * np.cos(angle), -(1 + ratio) * np.sin(angle)
    exact = np.column_stack([u_r * np.cos(angle) - u_t * np.sin(angle),
                             u_r * np.sin(angle) + u_t * np.cos(angle)])
    assert np.allclose(solver.flow_velocity(points), exact, atol=2e-3)


def test_bad_vortex_settings_are_refused():
    with pytest.raises(ConfigError, match="dt must be positive"):
        VortexSettings(reynolds=100, dt=0)
    with pytest.raises(ConfigError, match="unknown velocity method"):
        VortexSettings(reynolds=100, dt=0.1, method="fmm")
    with pytest.raises(ConfigError, match="free stream must not be zero"):
        VortexSettings(reynolds=100, dt=0.1, free_stream=(0.0, 0.0))


CASE = """
[solver]
method = "vortex"

[body]
shape = "circle"
panels = 40

[flow]
reynolds = 100

[vortex]
dt = 0.05

[run]
backend = "numpy"
steps = 6

[output]
directory = "out"
checkpoint_every = 3
snapshot_every = 3
"""


def test_a_vortex_case_runs_writes_its_outputs_and_restarts_exactly(tmp_path, capsys):
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    assert main(["run", str(case), "--quiet"]) == 0
    out = tmp_path / "out"
    rows = (out / "loads.csv").read_text().splitlines()
    assert rows[0].startswith("time,cx,cy,cm,cx_friction,cy_friction,elements") and len(rows) == 7
    wall_s = [float(row.split(",")[-1]) for row in rows[1:]]  # the loop's clock, as FV's
    assert rows[0].endswith(",wall_s") and np.all(np.diff(wall_s) >= 0)
    assert (out / "wake_0000003.vtu").exists() and (out / "wake_0000006.vtu").exists()
    surface = np.loadtxt(out / "surface.csv", delimiter=",", skiprows=1)
    assert surface.shape == (40, 5) and np.all(np.diff(surface[:, 2]) > 0)
    assert (out / "surface.csv").read_text().startswith("x,y,s,cp,cf")
    # six steps at once equal three, then three more from the checkpoint of step 3
    whole = np.load(out / "checkpoint.npz")["positions"]
    case.write_text(CASE.replace("steps = 6", "steps = 3"))
    assert main(["run", str(case), "--quiet"]) == 0
    case.write_text(CASE.replace("steps = 6", 'steps = 3\nrestart = "out/checkpoint.npz"'))
    assert main(["run", str(case), "--quiet"]) == 0
    assert np.array_equal(np.load(out / "checkpoint.npz")["positions"], whole)
    assert len((out / "loads.csv").read_text().splitlines()) == 7
    assert "6 steps" in capsys.readouterr().out


def test_ctrl_c_ends_a_vortex_run_after_the_step_in_progress(tmp_path, monkeypatch, capsys):
    """SIGINT in the middle of step 2: the step finishes, and the loads, the checkpoint and
    the last snapshot are those of step 2."""
    import json
    import os
    import signal

    step = VortexSolver.step

    def step_with_ctrl_c(self):
        if self.iteration == 1:
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0.05)  # the handler runs here, in mid-step
        return step(self)

    monkeypatch.setattr(VortexSolver, "step", step_with_ctrl_c)
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    assert main(["run", str(case), "--quiet"]) == 130
    assert capsys.readouterr().out.startswith("interrupted: 2 steps")
    out = tmp_path / "out"
    assert len((out / "loads.csv").read_text().splitlines()) == 3
    with np.load(out / "checkpoint.npz") as data:
        assert json.loads(str(data["meta"]))["iteration"] == 2
    assert (out / "wake_0000002.vtu").exists()


def test_a_vortex_restart_after_kill_drops_the_loads_past_its_checkpoint(tmp_path):
    """kill -9 between checkpoints leaves loads.csv ahead of the checkpoint: the restart
    computes those steps again, so their old rows go (and a row cut short with them)."""
    case = tmp_path / "case.toml"
    case.write_text(CASE.replace("steps = 6", "steps = 3"))
    assert main(["run", str(case), "--quiet"]) == 0
    loads = tmp_path / "out" / "loads.csv"
    rows = loads.read_text().splitlines()
    later = [rows[-1].replace("0.15", t, 1) for t in ("0.2", "0.25")]
    loads.write_text("\n".join([*rows, *later, "0.1"]) + "\n")  # the last row cut short
    case.write_text(CASE.replace("steps = 6", 'steps = 3\nrestart = "out/checkpoint.npz"'))
    assert main(["run", str(case), "--quiet"]) == 0
    times = np.loadtxt(loads, delimiter=",", skiprows=1)[:, 0]
    np.testing.assert_allclose(times, 0.05 * np.arange(1, 7))


@pytest.mark.parametrize("change, message", [
    ('shape = "circle"', "unknown value 'square'"),
    ("panels = 40\n", "needs panels"),
    ("reynolds = 100", "reynolds is required"),
    ("[vortex]", "unknown section"),
    ("dt = 0.05", r"\[vortex\] theta: must be below 1, found 1.5 \(tree: accuracy parameter\)"),
])
def test_bad_vortex_cases_are_refused_with_one_line(tmp_path, change, message):
    replacement = {'shape = "circle"': 'shape = "square"', "panels = 40\n": "",
                   "reynolds = 100": "", "[vortex]": "[vortex]\n[mesh]\nfile = 'x'\n[vortex2]",
                   "dt = 0.05": "dt = 0.05\ntheta = 1.5"}
    case = tmp_path / "case.toml"
    case.write_text(CASE.replace(change, replacement[change]))
    with pytest.raises(ConfigError, match=message):
        load_case(case)


def test_a_vortex_case_loads_as_such(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    loaded = load_case(case)
    assert isinstance(loaded, VortexCase) and loaded.body.n_panels == 40


@pytest.mark.gpu
@pytest.mark.parametrize("chunk", [device.CHUNK, device.BLOCK])
@pytest.mark.parametrize("precision, tolerance", [("fp64", 1e-12), ("fp32", 1e-5)])
def test_the_cuda_kernels_equal_the_numpy_references(precision, tolerance, chunk, monkeypatch):
    monkeypatch.setattr(device, "CHUNK", chunk)  # sources in one chunk, or in four
    from gpusolver.solvers.vortex import diffusion
    backend = get_backend("cupy")
    xp = backend.xp
    rng = np.random.default_rng(11)
    print("seed 11")
    body = rounded_plate(120, 1.0, 0.05)
    positions = np.column_stack([rng.uniform(-0.1, 1.1, 500), rng.normal(0, 0.06, 500)])
    gammas = rng.normal(size=500) * 1e-3
    dtype = np.float64 if precision == "fp64" else np.float32
    p, g = xp.asarray(positions, dtype=dtype), xp.asarray(gammas, dtype=dtype)
    radii = diffusion.domain_radii(positions, 0.002)
    assert np.allclose(device.domain_radii(backend, p, 0.002).get(), radii, rtol=tolerance)
    r = xp.asarray(radii, dtype=dtype)
    for got, want in zip((*device.wake_sums(backend, p, g, r, "any"),
                          *device.surface_sums(backend, p, r,
                                               device.BodyArrays(backend, body, dtype))),
                         (*diffusion.wake_sums(positions, gammas, radii, "any"),
                          *diffusion.surface_sums(positions, radii, body)), strict=True):
        assert np.allclose(got.get(), want, rtol=tolerance, atol=tolerance * np.abs(want).max())
    i0 = diffusion.surface_sums(positions, radii, body)[0]
    want = diffusion.wall_vorticity(positions, gammas, radii, i0, body)
    got = device.surface_sums(backend, p, r, device.BodyArrays(backend, body, dtype), g)[2]
    assert np.allclose(got.get(), want, rtol=tolerance, atol=tolerance * np.abs(want).max())
    end = positions + rng.normal(0, 0.05, positions.shape)
    intensity = rng.normal(size=body.n_panels)
    sheet = xp.zeros((500, 2))  # fp64, added to in the panels' precision
    device.add_sheet_velocity(backend, xp.asarray(end), xp.asarray(intensity),
                              device.BodyArrays(backend, body, dtype), sheet, 0.01)
    want = VortexSheet(body).velocity(intensity, end, 0.01)
    assert np.allclose(sheet.get(), want, rtol=tolerance, atol=tolerance * np.abs(want).max())
    arrays = device.BodyArrays(backend, body, np.float64)
    assert np.array_equal(device.absorbed(backend, xp.asarray(positions), xp.asarray(end),
                                          arrays).get(),
                          restructure.absorbed(positions, end, body))
    merge = rng.uniform(0.01, 0.05, 500)
    assert np.array_equal(device.partners(backend, xp.asarray(positions), xp.asarray(gammas),
                                          xp.asarray(merge)).get(),
                          restructure.partners(positions, gammas, merge))
    assert np.allclose(device.mean_tangential(backend, xp.asarray(positions), xp.asarray(gammas),
                                              arrays).get(),
                       mean_tangential(positions, gammas, body), rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["direct", "tree"])
def test_gpu_steps_follow_the_numpy_steps(method, monkeypatch):
    """fp64; the tree's steps walk the same boxes as the NumPy tree, and its local
    searches (here at any number of elements: diffusion sums, merging partners) give the
    direct ones."""
    monkeypatch.setattr(solver_module, "TREE_LOCAL_MIN", 0)
    settings_ = VortexSettings(reynolds=200.0, dt=0.02, method=method)
    cpu = VortexSolver(circle(80, 0.5), settings_, backend="numpy")
    gpu = VortexSolver(circle(80, 0.5), settings_, backend="cupy")
    for _ in range(4):
        a, b = cpu.step(), gpu.step()
        assert a.elements == b.elements and a.absorbed == b.absorbed
        assert a.cx == pytest.approx(b.cx, rel=1e-9, abs=1e-9)
    assert np.allclose(gpu.positions.get(), cpu.positions, atol=1e-12)


def test_more_bad_vortex_settings_are_refused():
    with pytest.raises(ConfigError, match="per_panel must be a positive integer"):
        VortexSettings(reynolds=100, dt=0.1, per_panel=0)
    with pytest.raises(ConfigError, match="reference_length must be positive"):
        VortexSettings(reynolds=100, dt=0.1, reference_length=-1.0)
    with pytest.raises(ConfigError, match="unknown precision"):
        VortexSettings(reynolds=100, dt=0.1, precision="fp16")
    with pytest.raises(ConfigError, match="unknown merge_signs 'opposite'; valid: same, any"):
        VortexSettings(reynolds=100, dt=0.1, merge_signs="opposite")
    with pytest.raises(ConfigError, match="unknown diffusion_signs 'both'; valid: same, any"):
        VortexSettings(reynolds=100, dt=0.1, diffusion_signs="both")


def test_a_mesh_body_needs_its_file_and_marker(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(CASE.replace('shape = "circle"', 'shape = "mesh"'))
    with pytest.raises(ConfigError, match="needs file and marker"):
        load_case(case)


def test_a_restart_from_another_body_physics_or_file_is_refused(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    assert main(["run", str(case), "--quiet"]) == 0
    case.write_text(CASE.replace("panels = 40", "panels = 50").replace(
        "steps = 6", 'steps = 1\nrestart = "out/checkpoint.npz"'))
    with pytest.raises(ConfigError, match="another mesh or body"):
        run_case(load_case(case), progress=False)
    case.write_text(CASE.replace("reynolds = 100", "reynolds = 200").replace(
        "steps = 6", 'steps = 1\nrestart = "out/checkpoint.npz"'))
    with pytest.raises(ConfigError, match="other physics"):
        run_case(load_case(case), progress=False)
    (tmp_path / "junk.npz").write_bytes(b"not a checkpoint")
    case.write_text(CASE.replace("steps = 6", 'steps = 1\nrestart = "junk.npz"'))
    with pytest.raises(ConfigError, match="not a gpusolver checkpoint"):
        run_case(load_case(case), progress=False)


def test_a_vortex_checkpoint_given_to_a_finite_volume_case_names_both_methods(tmp_path):
    """One checkpoint format, one check: another method's checkpoint is named as such
    (it was reported as a truncated or corrupted file)."""
    from .test_run_case import write_case

    vortex = tmp_path / "vortex.toml"
    vortex.write_text(CASE.replace("steps = 6", "steps = 1"))
    run_case(load_case(vortex), progress=False)
    fv = write_case(tmp_path, iterations=1, directory="fv",
                    restart='restart = "out/checkpoint.npz"')
    with pytest.raises(ConfigError, match="written by method 'vortex', the case runs 'fv'"):
        run_case(load_case(fv), progress=False)
