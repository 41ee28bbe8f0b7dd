"""RANS: the Spalart-Allmaras (SA-neg) and Menter SST-V models in the finite-volume
solver, on NASA TMR's flat plate and on exact cases."""

from pathlib import Path

import numpy as np
import pytest

from gpusolver.errors import ConfigError, SolverDivergedError
from gpusolver.physics import spalart_allmaras as sa
from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from meshorder import read_mesh
from meshorder.testing import grid_mesh

from .kernel_backends import BACKENDS, attach_host_kernels

TMR = Path(__file__).resolve().parents[3] / "shared" / "meshes" / "tmr"
PLATE = TMR / "flatplate/grids/flatplate_clust2_4levelsdown_35x25.p2dfmt"
#: TMR 2DZP: M 0.2, Re 5 million per unit length, T 540 R (300 K).
PLATE_GAS = Gas(dim=2, mach=0.2, reynolds=5e6, temperature_ref=300.0)
PLATE_BOUNDARIES = {"subsonic_inflow_pt": "farfield", "back_pressure": "pressure-outlet",
                    "symmetry_z_strong": "symmetry", "viscous_solid": "no-slip-adiabatic",
                    "farfield_riem": "farfield"}
#: CFL3D on the 35x25 grid (flatplate/SA/cf_convergence.dat, drag_convergence.dat).
CFL3D_CF, CFL3D_CD = 0.00279568508, 0.00295438152
#: SST-V, Cf(x = 0.97): CFL3D on 35x25 and on the finest grid, 545x385
#: (flatplate/SST/cf_convergence_sstv.dat).
CFL3D_SST_CF, CFL3D_SST_CF_FINEST = 0.255183387e-2, 0.269085355e-2

needs_tmr = pytest.mark.skipif(not TMR.is_dir(), reason="../shared/meshes/tmr absent")


def _plate(steps: int = 0, model: str = "sa-neg", turbulence_steps: int = 1,
           turbulence_solver: str = "auto") -> tuple[Solver, np.ndarray | None]:
    """The 35x25 plate after ``steps`` Newton-Krylov steps, and the last step's norms
    (SST's scalars step at a CFL number up to 1e4)."""
    stepping = Stepping("newton-krylov", cfl=5.0, cfl_max=1e4,
                        turbulence_cfl=1e4 if model == "sst" else 100.0,
                        turbulence_steps=turbulence_steps, turbulence_solver=turbulence_solver)
    solver = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES, backend="numpy",
                    scheme=Scheme("roe", 2, "green-gauss", "none"), stepping=stepping,
                    reference_area=2.0, turbulence=model)
    norms = None
    for _ in range(steps):
        norms = solver.step()
    return solver, norms


@needs_tmr
def test_the_flat_plates_wall_distance_is_to_the_plate_not_its_nodes():
    """Above the plate (x >= 0) a cell's distance is its height; ahead of it, the
    distance to the leading edge."""
    solver, _ = _plate()
    x, y = solver.host.centroid
    expected = np.where(x >= 0, y, np.hypot(x, y))
    np.testing.assert_allclose(solver.turbulence[0].distance, expected, rtol=1e-12)


def test_a_stream_without_walls_keeps_its_free_stream_nu_tilde():
    """No wall, no shear: nothing produces or destroys nu_tilde, which stays at TMR's
    3 nu of the free stream."""
    box = {m: "farfield" for m in ("left", "right", "bottom", "top")}
    gas = Gas(dim=2, mach=0.3, reynolds=1e5)
    solver = Solver(grid_mesh(6, 5), gas, box, backend="numpy", turbulence="sa-neg",
                    stepping=Stepping("lusgs", cfl=10.0))
    for _ in range(3):
        solver.step()
    (model,) = solver.turbulence
    np.testing.assert_allclose(model.nt, sa.FREE_STREAM_RATIO * gas.mu_ref, rtol=1e-12)
    assert solver.turbulence_residuals["nu_tilde"] < 1e-12 * gas.mu_ref


def test_turbulence_needs_the_navier_stokes_equations():
    box = {m: "farfield" for m in ("left", "right", "bottom", "top")}
    with pytest.raises(ConfigError, match="needs equations = 'navier-stokes'"):
        Solver(grid_mesh(3, 3), Gas(dim=2, mach=0.3), box, backend="numpy",
               turbulence="sa-neg")
    with pytest.raises(ConfigError, match="unknown turbulence model 'k-epsilon'"):
        Solver(grid_mesh(3, 3), Gas(dim=2, mach=0.3, reynolds=1e5), box, backend="numpy",
               turbulence="k-epsilon")
    with pytest.raises(ConfigError, match="unknown turbulence_solver 'ilu'; valid: auto, lu"):
        Solver(grid_mesh(3, 3), Gas(dim=2, mach=0.3, reynolds=1e5), box, backend="numpy",
               turbulence="sa-neg", stepping=Stepping("lusgs", turbulence_solver="ilu"))


@needs_tmr
def test_the_flat_plate_converges_near_tmrs_skin_friction_and_drag():
    """35x25 (816 cells), 300 Newton-Krylov steps: the density residual 7 orders down
    and falling (measured 2026-11-27 on the 2-core machine: 6.8 orders; CD 0.0030389,
    +2.9% from CFL3D's on this grid). The eddy viscosity's peak at x = 0.97 is about
    TMR's (200 mu on the finest grid)."""
    solver, norms = _plate(300)
    assert norms[0] < 1e-6 * solver.first_residual
    assert solver.friction_markers == ["viscous_solid"]
    centre, cf, y_plus = solver.surface_friction("viscous_solid")
    order = np.argsort(centre[0])
    assert np.interp(0.970084048409, centre[0, order], cf[order]) == pytest.approx(
        CFL3D_CF, rel=0.03)
    # TMR: this grid's first nodes lie at y+ about 1.7; the first cells' centres half as far
    assert 0.5 < np.median(y_plus) < 1.5
    assert solver.wall_forces()["total"].drag == pytest.approx(CFL3D_CD, rel=0.04)
    pressure, friction = solver.force_split()["total"]  # a plate: friction drag alone
    assert abs(pressure.drag) < 0.01 * friction.drag
    assert pressure.drag + friction.drag == pytest.approx(solver.wall_forces()["total"].drag,
                                                          rel=1e-12)
    ratio = solver.model_fields()["eddy_viscosity_ratio"]
    column = np.abs(solver.centroids()[0] - 0.97) < 0.08
    assert 150 < ratio[column].max() < 250


@needs_tmr
def test_more_turbulence_steps_per_step_bring_the_plate_down_faster():
    """SA-neg's steps cannot take the mean flow's CFL number (they cycle), so three of
    them per mean-flow step: after 120 steps the density residual is several times lower,
    and the model's reported residual is that of each step's start."""
    (one, one_norms), (three, three_norms) = _plate(120), _plate(120, turbulence_steps=3)
    assert three_norms[0] < 0.2 * one_norms[0]
    assert three.model_residuals()["nu_tilde"] < 0.2 * one.model_residuals()["nu_tilde"]
    assert three.wall_forces()["total"].drag == pytest.approx(CFL3D_CD, rel=0.04)


@needs_tmr
def test_sa_steps_at_large_cfl_numbers_converge_the_naca_0012():
    """TMR's 113x33 NACA 0012 at 10 degrees (``cases/naca0012_sa.toml``'s settings): with
    the source's derivative in the implicit matrix whatever its sign, nu_tilde's steps
    take CFL numbers up to 1e4 and the density residual falls 8 orders within 60 steps
    (measured 46 on the 2-core machine, 2026-11-28; 108 at ``turbulence_cfl = 100``).
    Taking the derivative only where it damps, nu_tilde ran away at these CFL numbers."""
    gas = Gas(dim=2, mach=0.15, aoa_deg=10.0, reynolds=6e6, temperature_ref=300.0)
    stepping = Stepping("newton-krylov", cfl=5.0, cfl_max=1e4, turbulence_cfl=1e4,
                        preconditioner_every=10, turbulence_steps=3)
    solver = Solver(read_mesh(TMR / "naca0012/grids/n0012_113-33.p2dfmt"), gas,
                    {"farfield_riem": "farfield", "viscous_solid": "no-slip-adiabatic"},
                    backend="numpy", scheme=Scheme("lmroe", 2, "green-gauss", "none"),
                    stepping=stepping, turbulence="sa-neg")
    for _ in range(60):
        norms = solver.step()
    assert norms[0] < 1e-8 * solver.first_residual
    assert solver.model_residuals()["nu_tilde"] < 1e-8
    assert solver.wall_forces()["total"].lift == pytest.approx(1.03309, rel=1e-4)


@needs_tmr
def test_swept_turbulence_steps_converge_the_plate_as_the_lu_does():
    """The model's implicit steps by symmetric Gauss-Seidel sweeps on the LU-SGS levels
    instead of the host's LU: 300 steps with three nu_tilde sweeps per step take the
    residual below 1e-7 of its start (measured 1.1e-8; the LU with one step 1.1e-7) to
    the LU's drag."""
    solver, norms = _plate(300, turbulence_steps=3, turbulence_solver="sweeps")
    assert solver.turbulence[0]._exact is None  # no LU was made
    assert norms[0] < 1e-7 * solver.first_residual
    assert solver.wall_forces()["total"].drag == pytest.approx(0.0030389, rel=1e-3)


@needs_tmr
def test_multigrid_with_inviscid_coarse_levels_speeds_the_rans_plate():
    """LU-SGS on the 35x25 plate with SA-neg: three coarse levels (the Euler operator,
    nu_tilde frozen on the fine level) bring the density residual after 200 steps below
    half of LU-SGS's alone (measured 2026-11-27: 0.043 against 0.198, from 4.9), and
    they take no viscous operator."""
    residuals = []
    for levels in (0, 3):
        solver = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES, backend="numpy",
                        scheme=Scheme("roe", 2, "green-gauss", "none"),
                        stepping=Stepping("lusgs", cfl=5.0, cfl_max=1e3, multigrid=levels),
                        reference_area=2.0, turbulence="sa-neg")
        for _ in range(200):
            norms = solver.step()
        residuals.append(norms[0])
    assert all(not level.discretisation.viscous for level in solver.multigrid.levels)
    assert residuals[1] < 0.5 * residuals[0]


@needs_tmr
def test_multigrid_with_rans_runs_on_parts():
    """Three parts, each agglomerating its own cells, SA-neg swept on each part's own
    cells: 200 LU-SGS steps with the coarse level below half the residual without it
    (measured 2026-11-27: 0.055 against 0.24)."""
    from meshorder import Topology
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = read_mesh(PLATE)
    plan = make_plan(mesh, PlanOptions(partitions=3), topology=Topology(mesh))
    residuals = []
    for levels in (0, 2):
        solver = Solver([plan.part(p) for p in range(3)], PLATE_GAS, PLATE_BOUNDARIES,
                        backend="numpy", scheme=Scheme("roe", 2, "green-gauss", "none"),
                        stepping=Stepping("lusgs", cfl=5.0, cfl_max=1e3, multigrid=levels,
                                          turbulence_solver="sweeps"),
                        reference_area=2.0, turbulence="sa-neg")
        for _ in range(200):
            norms = solver.step()
        residuals.append(norms[0])
    assert residuals[1] < 0.5 * residuals[0]


@needs_tmr
def test_one_factorisation_per_step_serves_the_turbulence_sub_steps(monkeypatch):
    """Three nu_tilde sub-steps per step factorise their matrix once (the first's): two
    steps, two factorisations; each sub-step still lowers the model's residual."""
    from gpusolver.solvers.fv.jacobian import ExactSolver

    factorised = []  # the scalar's (1 x 1 blocks; the mean flow's are 4 x 4)
    real = ExactSolver.factorise

    def counted(exact, blocks, slot=None):
        if exact.n_vars == 1:
            factorised.append(1)
        return real(exact, blocks, slot)
    monkeypatch.setattr(ExactSolver, "factorise", counted)
    solver, _ = _plate(2, turbulence_steps=3)
    assert len(factorised) == 2
    (model,) = solver.turbulence
    u, mass_flux = solver.states[0], solver.discretisations[0].mass_flux
    with np.errstate(all="ignore"):  # as the solver's steps (SA's S-tilde clip divides)
        model.step(u, mass_flux, 1e-3)
        assert len(factorised) == 3
        before, _ = model.step_report()
        model.step(u, mass_flux, 1e-3, new_mean_flow=False)
        model.step(u, mass_flux, 1e-3, new_mean_flow=False)
        assert len(factorised) == 3
        model.step(u, mass_flux, 1e-3)
    assert model.step_report()[0] < before


@needs_tmr
@pytest.mark.parametrize("backend", ["arrays", *BACKENDS])
@pytest.mark.parametrize("poison", ["inf", "run-away"])
def test_a_non_finite_or_run_away_turbulence_scalar_ends_the_run_naming_its_cell(
        backend, poison, monkeypatch):
    """A model's step that leaves a non-finite scalar (nu_tilde ran away on the NACA 0012
    at 15 degrees with LMRoe: 1e-4 to 1e87 in three steps), or one past the model's
    ceiling (1e13 times the free stream's nu_tilde), ends the run in one line naming the
    cell, before the next mean-flow step reads its eddy viscosity: the array code checks
    the values after the step, the kernels' update counts those it leaves so."""
    if backend == "cupy":
        pytest.importorskip("cupy")
    solver = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES,
                    backend="cupy" if backend == "cupy" else "numpy",
                    scheme=Scheme("roe", 2, "green-gauss", "none"),
                    stepping=Stepping("lusgs", cfl=5.0, cfl_max=1e3,
                                      turbulence_solver="sweeps"),
                    reference_area=2.0, turbulence="sa-neg")
    if backend == "host":
        solver.fuse()
    (model,) = solver.turbulence
    assert (model.kernels is None) == (backend == "arrays")
    solver.step()
    assert float(model.tallies[-1]) == 0
    # poisoned before the kernels' update (which keeps it), or after the array code's step
    target, name = (model, "step") if model.kernels is None else (model.kernels, "advance")
    real = getattr(target, name)

    value = np.inf if poison == "inf" else 1e13 * model.free_stream[0]

    def poisoning(*args, **kwargs):
        real(*args, **kwargs)
        model.values[0, 5] = value

    monkeypatch.setattr(target, name, poisoning)
    with pytest.raises(SolverDivergedError, match=r"iteration 2: the solution at cell \d+ "
                       r"\(centroid .*\) has a non-finite or run-away nu_tilde after the "
                       r"model's step") as error:
        solver.step()
    assert error.value.cell == solver.layouts[0].file_cells[5]
    assert float(model.tallies[-1]) == (0 if model.kernels is None else 1)


@needs_tmr
def test_a_runaway_turbulence_residual_cuts_the_models_cfl_number():
    """SA-neg: nu_tilde's residual 100 times its lowest cuts the model's CFL cap tenfold
    (to no less than the first CFL number; one line in the log, the history's
    turbulence_cfl column); each new lowest lets it grow back 5%, up to turbulence_cfl;
    a restart's controls keep it. SST's scalars are not watched."""
    solver, _ = _plate()  # turbulence_cfl 100, cfl 5
    solver.cfl = 1e4
    assert solver.turbulence_cfl == 100
    solver._turbulence_back_off(np.array([1e-6]))
    solver._turbulence_back_off(np.array([5e-5]))  # 50 times: no cut
    assert solver.turbulence_cfl == 100 and not solver.notes
    solver._turbulence_back_off(np.array([2e-4]))
    assert solver.turbulence_cfl == 10
    assert solver.notes[-1].endswith("nu_tilde's residual rose to 0.0002, 200x its lowest; "
                                     "the model's CFL number 100 -> 10")
    solver._turbulence_back_off(np.array([1e-4]))  # a new lowest
    assert solver.turbulence_cfl == pytest.approx(10.5)
    assert solver.monitors()["turbulence_cfl"] == "10.5"
    restarted, _ = _plate()
    restarted.set_controls(*solver.controls())
    restarted.cfl = 1e4
    assert restarted.turbulence_cfl == pytest.approx(10.5)
    restarted._turbulence_back_off(np.array([2e-2]))  # 200 times the kept lowest
    assert restarted.turbulence_cfl == 5  # the first CFL number
    sst, _ = _plate(model="sst")
    sst.cfl = 1e6
    for norms in ([1e-6, 1e-6], [1.0, 1.0]):
        sst._turbulence_back_off(np.array(norms))
    assert sst.turbulence_cfl == 1e4 and not sst.notes


@needs_tmr
def test_sst_on_the_flat_plate_converges_near_tmrs_skin_friction():
    """SST-V, 35x25, 200 Newton-Krylov steps (7.5 s on the 2-core machine, 2026-11-27):
    the density residual 8 orders down, Cf(0.97) 0.0026756: within 1% of CFL3D's on
    TMR's finest grid, 4.9% above CFL3D's on this one (docs/validation.md). The eddy
    viscosity stays off the wall (k = 0 there) and omega follows Menter's wall value."""
    solver, norms = _plate(200, "sst")
    assert norms[0] < 1e-8 * solver.first_residual
    centre, cf, _ = solver.surface_friction("viscous_solid")
    order = np.argsort(centre[0])
    at = np.interp(0.970084071, centre[0, order], cf[order])
    assert at == pytest.approx(CFL3D_SST_CF_FINEST, rel=0.01)
    assert at == pytest.approx(CFL3D_SST_CF, rel=0.06)
    k, omega = solver.model_state()["k"], solver.model_state()["omega"]
    assert (k > 0).all() and (omega > 0).all()
    (model,) = solver.turbulence
    nu = solver.gas.mu_ref  # about the wall's: the plate is adiabatic at M 0.2
    wall = model.distance < 2e-6
    assert np.allclose(model.values[1][wall] * model.distance[wall] ** 2 / nu,
                       6.0 / 0.075, rtol=0.3)  # omega = 6 nu / (beta1 d^2) beside the wall


@needs_tmr
def test_the_skin_friction_file_follows_the_wall(tmp_path):
    from gpusolver.io.output import write_skin_friction

    solver, _ = _plate(2)
    (path,) = write_skin_friction(tmp_path, solver)
    rows = np.genfromtxt(path, delimiter=",", names=True)
    assert path.name == "cf_viscous_solid.csv"
    assert rows.dtype.names == ("s", "x", "y", "cf", "y_plus") and len(rows) == 28
    assert (np.diff(rows["s"]) > 0).all()


@needs_tmr
def test_a_checkpoint_keeps_k_and_omega_and_refuses_another_model():
    solver, _ = _plate(3, "sst")
    state = solver.model_state()
    assert set(state) == {"k", "omega"}
    fresh, _ = _plate(0, "sst")
    fresh.set_model_state(state)
    for name in ("k", "omega"):
        np.testing.assert_array_equal(fresh.model_state()[name], state[name])
    sa_solver, _ = _plate(0)
    with pytest.raises(ValueError, match="turbulence model is not the run's"):
        sa_solver.set_model_state(state)


@needs_tmr
def test_a_checkpoint_keeps_nu_tilde():
    solver, _ = _plate(3)
    state = solver.model_state()
    fresh, _ = _plate()
    fresh.set_model_state(state)
    np.testing.assert_array_equal(fresh.model_state()["nu_tilde"], state["nu_tilde"])
    laminar = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES, backend="numpy")
    with pytest.raises(ValueError, match="turbulence model is not the run's"):
        laminar.set_model_state(state)


@needs_tmr
def test_parts_see_every_parts_walls():
    """Each part's cells take their distance to the walls of every part: three parts
    give the whole mesh's distances."""
    from meshorder import Topology
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = read_mesh(PLATE)
    whole, _ = _plate()
    plan = make_plan(mesh, PlanOptions(partitions=3), topology=Topology(mesh))
    parts = Solver([plan.part(p) for p in range(3)], PLATE_GAS, PLATE_BOUNDARIES,
                   backend="numpy", stepping=Stepping("lusgs", cfl=5.0), turbulence="sa-neg")
    expected = np.empty(mesh.n_cells)
    expected[whole.layouts[0].file_cells] = whole.turbulence[0].distance
    for model, layout in zip(parts.turbulence, parts.layouts, strict=True):
        np.testing.assert_allclose(model.distance[:layout.n_own],
                                   expected[layout.file_cells[:layout.n_own]], rtol=1e-12)


@needs_tmr
@pytest.mark.parametrize("turbulence_solver", ["lu", "sweeps"])
def test_parts_take_several_turbulence_steps(turbulence_solver):
    """Three parts, LU-SGS with two nu_tilde steps per step (the model's halo exchanged
    before each; swept over each part's own cells, or by the LU): the steps stay finite
    and the second step moves nu_tilde on from where one step leaves it."""
    from meshorder import Topology
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = read_mesh(PLATE)
    plan = make_plan(mesh, PlanOptions(partitions=3), topology=Topology(mesh))
    solvers = [Solver([plan.part(p) for p in range(3)], PLATE_GAS, PLATE_BOUNDARIES,
                      backend="numpy", turbulence="sa-neg",
                      stepping=Stepping("lusgs", cfl=5.0, turbulence_steps=steps,
                                        turbulence_solver=turbulence_solver),
                      scheme=Scheme("roe", 2, "green-gauss", "none")) for steps in (1, 2)]
    for solver in solvers:
        for _ in range(3):
            assert np.isfinite(solver.step()).all()
        assert np.isfinite(solver.model_state()["nu_tilde"]).all()
    one, two = (solver.model_state()["nu_tilde"] for solver in solvers)
    assert not np.allclose(one, two, rtol=1e-6)


@needs_tmr
def test_a_parts_exact_turbulence_step_holds_its_halo():
    """On a part the exact step solves the own cells with the halo held (its rows the
    identity's, its residuals 0): the halo's nu_tilde is left as the other parts' own
    values have it, and every own cell moves."""
    from meshorder import Topology
    from meshorder.pipeline import PlanOptions, make_plan

    mesh = read_mesh(PLATE)
    plan = make_plan(mesh, PlanOptions(partitions=3), topology=Topology(mesh))
    solver = Solver([plan.part(p) for p in range(3)], PLATE_GAS, PLATE_BOUNDARIES,
                    backend="numpy", turbulence="sa-neg",
                    stepping=Stepping("lusgs", cfl=5.0, turbulence_solver="lu"),
                    scheme=Scheme("roe", 2, "green-gauss", "none"))
    for _ in range(2):
        solver.step()
    for model, d, u in zip(solver.turbulence, solver.discretisations, solver.states,
                           strict=True):
        assert model.n_own < len(model.nt)
        before = model.nt.copy()
        d.residual(u)  # the mass fluxes of the state
        model.step(u, d.mass_flux, 1e-2)
        np.testing.assert_array_equal(model.nt[model.n_own:], before[model.n_own:])
        assert (model.nt[:model.n_own] != before[:model.n_own]).all()


@needs_tmr
def test_a_rans_case_logs_its_turbulence_residual_and_writes_its_fields(tmp_path):
    import meshio

    from gpusolver.run import run_case
    from gpusolver.systems import load_case

    text = (Path(__file__).resolve().parents[2] / "cases" / "flatplate_sa.toml").read_text()
    text = text.replace("2levelsdown_137x97", "4levelsdown_35x25").replace(
        "iterations = 400", "iterations = 3")
    text = text.replace('file = "../../shared', f'file = "{TMR.parents[1]}').replace(
        'directory = "../out/flatplate_sa"', 'directory = "out"')
    case = tmp_path / "plate.toml"
    case.write_text(text)
    run_case(load_case(case), progress=False)
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    assert "residual_nu_tilde" in history.dtype.names and (history["residual_nu_tilde"] > 0).all()
    fields = meshio.read(tmp_path / "out" / "solution.vtu").cell_data
    assert {"nu_tilde", "eddy_viscosity_ratio"} <= set(fields)
    assert (tmp_path / "out" / "cf_viscous_solid.csv").is_file()
    case.write_text(text.replace('turbulence = "sa-neg"', 'turbulence = "sst"').replace(
        'directory = "out"', 'directory = "sst"'))
    run_case(load_case(case), progress=False)
    history = np.genfromtxt(tmp_path / "sst" / "history.csv", delimiter=",", names=True)
    assert {"residual_k", "residual_omega"} <= set(history.dtype.names)
    fields = meshio.read(tmp_path / "sst" / "solution.vtu").cell_data
    assert {"k", "omega", "eddy_viscosity_ratio"} <= set(fields)


def test_a_total_pressure_inflow_at_the_free_streams_totals_keeps_the_free_stream():
    """The ghost of a free-stream cell is the free stream; at a lower interior pressure
    the ghost is faster, with the given total pressure and temperature."""
    from gpusolver.physics.boundary import CONDITIONS

    gas = Gas(dim=2, mach=0.2, aoa_deg=3.0)
    inflow = CONDITIONS["total-pressure-inflow"].ghost
    w = np.repeat(gas.free_stream[:, None], 2, axis=1)
    normal = np.array([[-1.0, -1.0], [0.0, 0.0]])
    np.testing.assert_allclose(inflow(gas, w, normal, {}), w, rtol=1e-13)
    w[-1, 1] *= 0.98
    ghost = inflow(gas, w, normal, {})
    g = gas.gamma
    temperature = g * ghost[-1] / ghost[0]
    mach2 = (ghost[1:-1] ** 2).sum(axis=0) / temperature
    stream = 1 + 0.5 * (g - 1) * gas.mach**2
    np.testing.assert_allclose(temperature * (1 + 0.5 * (g - 1) * mach2), stream, rtol=1e-13)
    np.testing.assert_allclose(ghost[-1] * (1 + 0.5 * (g - 1) * mach2) ** (g / (g - 1)),
                               stream ** (g / (g - 1)) / g, rtol=1e-13)
    assert mach2[1] > gas.mach**2 and ghost[-1, 1] == w[-1, 1]


@needs_tmr
def test_the_3d_plate_one_cell_thick_follows_the_2d_plate():
    """TMR's 3-D form of the 35x25 grid (hexahedra between two symmetry planes, the plate
    in the x-z plane): 60 Newton-Krylov steps give the 2-D drag (measured: 2.7e-4 apart;
    the Krylov solves are inexact, and order their cells differently)."""
    three = Gas(dim=3, mach=0.2, reynolds=5e6, temperature_ref=300.0, lift_axis="z")
    drags = []
    for grid, gas, boundaries in ((PLATE, PLATE_GAS, PLATE_BOUNDARIES),
                                  (PLATE.with_suffix(".p3dfmt"), three,
                                   PLATE_BOUNDARIES | {"symmetry_y_strong": "symmetry"})):
        solver = Solver(read_mesh(grid), gas, boundaries, backend="numpy",
                        scheme=Scheme("roe", 2, "green-gauss", "none"),
                        stepping=Stepping("newton-krylov", cfl=5.0, cfl_max=1e4,
                                          turbulence_solver="lu"),
                        reference_area=2.0, turbulence="sa-neg")
        for _ in range(60):
            solver.step()
        drags.append(solver.wall_forces()["total"].drag)
    assert drags[1] == pytest.approx(drags[0], rel=1e-3)


@needs_tmr
@pytest.mark.gpu
@pytest.mark.parametrize(("model", "turbulence_solver"),
                         [("sa-neg", "lu"), ("sst", "lu"), ("sa-neg", "sweeps")])
def test_rans_on_cupy_arrays_gives_numpys_state(model, turbulence_solver):
    """The models' array code on the GPU (LU-SGS mean flow, their implicit steps) against
    the NumPy reference, 5 steps of the 35x25 plate, fp64. The scalars are compared
    against their field's largest value: SST's ``k`` falls to 1e-8 of it near the wall,
    where the round-off of the mean flow's residual (the GPU's order of sums) reaches it
    as 1e-16 (H100: 2.7e-9 of such a value, 7e-17 absolute: 3e-10 of the field's largest)."""
    pytest.importorskip("cupy")
    states = []
    for backend in ("numpy", "cupy"):
        solver = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES, backend=backend,
                        scheme=Scheme("roe", 2, "green-gauss", "none"),
                        stepping=Stepping("lusgs", cfl=5.0, turbulence_cfl=1e4,
                                          turbulence_solver=turbulence_solver),
                        reference_area=2.0, turbulence=model)
        for _ in range(5):
            solver.step()
        states.append((solver.conserved(), solver.model_state()))
    (u0, m0), (u1, m1) = states
    np.testing.assert_allclose(u1, u0, rtol=1e-12, atol=1e-14)
    for name in m0:
        np.testing.assert_allclose(m1[name], m0[name], rtol=1e-10,
                                   atol=1e-9 * np.abs(m0[name]).max())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dim, corners", [(2, 2), (3, 3), (3, 4)])
@pytest.mark.parametrize("n_faces", [150, 2500])
def test_the_wall_distance_kernel_gives_the_host_searchs_distances(backend, dim, corners,
                                                                   n_faces):
    """Random faces (quadrilaterals, some of them triangles by a NaN corner) and points
    near and far: the kernel (compiled for the CPU, or on the GPU) against the host's
    exact search; 2,500 faces make three blocks of groups, the last ones partly full."""
    from gpusolver.backends import get_backend
    from gpusolver.layout.wall_distance import wall_distance

    seed = int(np.random.default_rng().integers(2**31))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    faces = rng.uniform(-1, 1, (n_faces, 1, dim)) + rng.uniform(-0.1, 0.1, (n_faces, corners, dim))
    if corners == 4:
        faces[::3, 3] = np.nan
    points = rng.uniform(-4, 4, (1500, dim)) * rng.uniform(0.01, 1, (1500, 1))
    expected = wall_distance(points, faces)
    found = wall_distance(points, faces, get_backend("cupy" if backend == "cupy" else "numpy"))
    np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-15)


@needs_tmr
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", ["sa-neg", "sst"])
def test_the_fused_residual_with_eddy_viscosity_is_the_array_codes(backend, model):
    """The mean flow's residual in the fused kernels (compiled for the CPU, and on the
    GPU) with each face's eddy viscosity, and the mass fluxes the models read, against
    the array code on a developing boundary layer (the 35x25 plate after 3 steps); and
    the Newton-Krylov steps around it (inexact Krylov solves, which amplify round-off)."""
    def solver():
        stepping = Stepping("newton-krylov", cfl=5.0, cfl_max=1e4,
                            turbulence_cfl=1e4 if model == "sst" else 100.0)
        made = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES,
                      backend="cupy" if backend == "cupy" else "numpy",
                      scheme=Scheme("roe", 2, "green-gauss", "none"), stepping=stepping,
                      reference_area=2.0, turbulence=model)
        if backend == "host":
            made.fuse()
        assert made.discretisations[0].fused is not None
        return made

    reference, _ = _plate(steps=3, model=model)
    fused = solver()
    d, d_reference = fused.discretisations[0], reference.discretisations[0]
    fused.set_conserved(reference.conserved())
    fused.turbulence[0].values[...] = fused.backend.asarray(reference.turbulence[0].values)
    for one in (reference, fused):
        one.turbulence[0].set_eddy_viscosity(one.u)
    expected, got = d_reference.residual(reference.u), d.residual(fused.u)
    assert np.abs(d_reference.eddy_viscosity).max() > 0
    np.testing.assert_allclose(fused.backend.to_host(got), expected, rtol=1e-12,
                               atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(fused.backend.to_host(d.mass_flux), d_reference.mass_flux,
                               rtol=1e-12, atol=1e-12 * np.abs(d_reference.mass_flux).max())
    reference, fused = _plate(model=model)[0], solver()
    for _ in range(3):  # (measured: 1e-7 apart after 2 steps)
        np.testing.assert_allclose(fused.step(), reference.step(), rtol=1e-5, atol=1e-11)
    np.testing.assert_allclose(fused.conserved(), reference.conserved(), rtol=1e-5)


@needs_tmr
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", ["sa-neg", "sst"])
def test_the_models_residual_in_kernels_is_the_array_codes(backend, model):
    """The model's residual alone (what ``gpusolver bench`` times beside the mean flow's)
    in kernels, compiled for the CPU or on the GPU, against its array code, on the 35x25
    plate after three LU-SGS steps of a developing boundary layer: fp64, to round-off."""
    if backend == "cupy":
        pytest.importorskip("cupy")

    def solver(kernels: str) -> Solver:
        made = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES,
                      backend="cupy" if kernels == "cupy" else "numpy",
                      scheme=Scheme("roe", 2, "green-gauss", "none"),
                      stepping=Stepping("lusgs", cfl=5.0, cfl_max=1e3,
                                        turbulence_solver="sweeps"),
                      reference_area=2.0, turbulence=model)
        if kernels == "host":
            made.fuse()
        return made

    reference, fused = solver("arrays"), solver(backend)
    for _ in range(3):
        reference.step()
    fused.set_conserved(reference.conserved())
    fused.turbulence[0].values[...] = fused.backend.asarray(reference.turbulence[0].values)
    for one in (reference, fused):
        one.turbulence[0].set_eddy_viscosity(one.u)
        one.discretisations[0].residual(one.u)  # the mass fluxes of the state
    expected = reference.turbulence[0].residual(reference.u,
                                                reference.discretisations[0].mass_flux)[0]
    kernels = fused.turbulence[0].kernels
    kernels.evaluate_residual(fused.u, fused.discretisations[0].mass_flux, kernels.cell_steps(1.0))
    got = fused.backend.to_host(kernels.residual)
    expected = np.reshape(fused.backend.to_host(expected), got.shape)
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())


@needs_tmr
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("multigrid", [0, 2])
def test_fused_rans_lusgs_steps_are_the_array_codes(backend, multigrid):
    """SA-neg on the 35x25 plate: LU-SGS steps (and the multigrid cycle) in the fused
    kernels, compiled for the CPU or on the GPU, replayed as recorded CUDA graphs from
    the third step, give the array code's mean flow and nu_tilde to round-off: each step's
    eddy viscosity reaches the recorded steps, and the model reads the mass fluxes of the
    step's start in both."""
    def solver(kernels: str) -> Solver:
        made = Solver(read_mesh(PLATE), PLATE_GAS, PLATE_BOUNDARIES,
                      backend="cupy" if kernels == "cupy" else "numpy",
                      scheme=Scheme("roe", 2, "green-gauss", "none"),
                      stepping=Stepping("lusgs", cfl=5.0, cfl_max=1e3, multigrid=multigrid,
                                        turbulence_solver="lu"),
                      reference_area=2.0, turbulence="sa-neg")
        if kernels == "host":
            attach_host_kernels(made) if multigrid else made.fuse()
        return made

    if backend == "cupy":
        pytest.importorskip("cupy")
    reference, fused = solver("arrays"), solver(backend)
    assert fused.fused_implicit is not None and reference.fused_implicit is None
    assert (fused.multigrid is None) == (multigrid == 0)
    if multigrid:
        assert fused.multigrid.kernels is not None and reference.multigrid.kernels is None
    for _ in range(6):  # (the first step's density residual is round-off: 4e-13)
        expected = reference.step()
        np.testing.assert_allclose(fused.step(), expected, rtol=1e-10,
                                   atol=1e-12 * expected.max())
    np.testing.assert_allclose(fused.conserved(), reference.conserved(), rtol=1e-10,
                               atol=1e-13)
    np.testing.assert_allclose(fused.model_state()["nu_tilde"],
                               reference.model_state()["nu_tilde"], rtol=1e-9,
                               atol=1e-12 * PLATE_GAS.mu_ref)


@needs_tmr
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("model", "dim", "gradient", "parts", "precision", "solve"),
                         [("sa-neg", 2, "green-gauss", 1, "fp64", "sweeps"),
                          ("sa-neg", 2, "least-squares", 1, "fp64", "sweeps"),
                          ("sa-neg", 3, "green-gauss", 1, "fp64", "sweeps"),
                          ("sa-neg", 2, "green-gauss", 3, "fp64", "sweeps"),
                          ("sa-neg", 2, "green-gauss", 1, "fp32", "sweeps"),
                          ("sa-neg", 2, "green-gauss", 1, "fp64", "lu"),
                          ("sa-neg", 2, "green-gauss", 3, "fp64", "lu"),
                          ("sa-neg", 2, "green-gauss", 1, "fp32", "lu"),
                          ("sst", 2, "green-gauss", 1, "fp64", "sweeps"),
                          ("sst", 2, "least-squares", 1, "fp64", "sweeps"),
                          ("sst", 3, "green-gauss", 1, "fp64", "sweeps"),
                          ("sst", 2, "green-gauss", 3, "fp64", "sweeps"),
                          ("sst", 2, "green-gauss", 1, "fp32", "sweeps"),
                          ("sst", 2, "least-squares", 1, "fp64", "lu")])
def test_turbulence_steps_in_kernels_are_the_array_codes(backend, model, dim, gradient, parts,
                                                          precision, solve):
    """SA-neg's and SST's implicit steps in kernels (compiled for the CPU, or on the GPU;
    swept, or solved exactly from the kernels' matrices) against their array code, on
    the 35x25 plate and its 3-D form (hexahedra between two symmetry planes), whole or in
    three parts, LU-SGS mean flow, two model steps a step: fp64, the same residual norms
    and scalars to round-off (1e-9) over 8 steps of a developing boundary layer; fp32,
    where round-off grows over steps, one step of the model from the same states after 3
    steps: each scalar to 1e-5 of its largest value."""
    from meshorder import Topology
    from meshorder.pipeline import PlanOptions, make_plan

    grid, gas, boundaries = PLATE, PLATE_GAS, PLATE_BOUNDARIES
    if dim == 3:
        grid = PLATE.with_suffix(".p3dfmt")
        gas = Gas(dim=3, mach=0.2, reynolds=5e6, temperature_ref=300.0, lift_axis="z")
        boundaries = PLATE_BOUNDARIES | {"symmetry_y_strong": "symmetry"}

    mesh = read_mesh(grid)
    if parts > 1:
        plan = make_plan(mesh, PlanOptions(partitions=parts), topology=Topology(mesh))
        mesh = [plan.part(p) for p in range(parts)]

    def solver(kernels: str) -> Solver:
        made = Solver(mesh, gas, boundaries,
                      backend="cupy" if kernels == "cupy" else "numpy",
                      scheme=Scheme("roe", 2, gradient, "none"),
                      stepping=Stepping("lusgs", cfl=5.0, cfl_max=1e3, turbulence_steps=2,
                                        turbulence_solver=solve),
                      reference_area=2.0, turbulence=model, precision=precision)
        if kernels == "host":
            made.fuse()
        return made

    if backend == "cupy":
        pytest.importorskip("cupy")
    reference, fused = solver("arrays"), solver(backend)
    assert all(scalars.kernels is not None for scalars in fused.turbulence)
    assert reference.turbulence[0].kernels is None
    if precision == "fp32":
        for _ in range(3):
            reference.step()
        fused.set_conserved(reference.conserved())
        dt = reference.backend.to_host(reference.time_step(reference.u))
        start = reference.backend.to_host(reference.turbulence[0].values).copy()
        steps = []
        for solver in (reference, fused):
            scalars, d = solver.turbulence[0], solver.discretisations[0]
            scalars.values[...] = solver.backend.asarray(start)
            scalars.set_eddy_viscosity(solver.u)
            d.residual(solver.u)  # the mass fluxes of the state
            with np.errstate(all="ignore"):  # as Solver.step (where() takes both branches)
                scalars.step(solver.u, d.mass_flux, solver.backend.asarray(dt))
            steps.append(solver.backend.to_host(scalars.values).astype(np.float64))
        for got, expected in zip(*steps, strict=True):
            np.testing.assert_allclose(got, expected, rtol=0,
                                       atol=1e-5 * np.abs(expected).max())
        return
    for _ in range(8):
        expected = reference.step()
        np.testing.assert_allclose(fused.step(), expected, rtol=1e-9,
                                   atol=1e-12 * expected.max())
        for name, norm in reference.turbulence_residuals.items():
            assert fused.turbulence_residuals[name] == pytest.approx(norm, rel=1e-9)
    for name, values in reference.model_state().items():  # (SST's k near the wall is
        # 1e-2 of its largest, the difference of a large production and destruction: the
        # GPU's fused multiply-adds, exp and pow leave 1e-15 there after 8 steps, 1.5e-7
        # relative and 4.7e-9 of the largest k, measured on an H100)
        np.testing.assert_allclose(fused.model_state()[name], values, rtol=1e-9,
                                   atol=2e-8 * np.abs(values).max())
    # the eddy viscosity the next step's mean flow takes (in kernels for both models; SST's
    # near the wall proportional to k, as close relative to itself: 8.9e-8 on an H100)
    mu_t = reference.model_fields()["eddy_viscosity_ratio"]
    np.testing.assert_allclose(fused.model_fields()["eddy_viscosity_ratio"], mu_t,
                               rtol=2e-7 if model == "sst" else 1e-9, atol=2e-8 * mu_t.max())
