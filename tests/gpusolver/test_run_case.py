"""``gpusolver run``: case validation, outputs, restart, exit codes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import meshio
import numpy as np
import pytest

from gpusolver.cli import main
from gpusolver.errors import ConfigError
from gpusolver.run import run_case
from gpusolver.solvers.fv import solver as fv_solver
from gpusolver.systems import load_case
from meshorder import write_mesh
from meshorder.testing import grid_mesh

CASE = """
[mesh]
file = "square.msh"
[physics]
mach = 0.5
aoa_deg = 2.0
[boundaries]
left = "farfield"
right = "pressure-outlet"
bottom = "slip-wall"
top = "farfield"
[scheme]
flux = "roe"
[run]
backend = "numpy"
iterations = {iterations}
cfl = 1.0
time_integrator = "{integrator}"
{restart}
[output]
directory = "{directory}"
checkpoint_every = 2
"""


def write_case(tmp_path: Path, iterations=4, restart="", directory="out", extra="",
               integrator="rk4") -> Path:
    write_mesh(grid_mesh(6, 5, "triangle"), tmp_path / "square.msh")
    path = tmp_path / f"case_{directory}.toml"
    path.write_text(CASE.format(iterations=iterations, restart=restart, directory=directory,
                                integrator=integrator) + extra)
    return path


def test_run_writes_every_output(tmp_path):
    result = run_case(load_case(write_case(tmp_path)), progress=False)
    out = tmp_path / "out"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["checkpoint.npz", "cp_bottom.csv", "forces.csv", "history.csv",
                     "solution.vtu"]
    history = np.genfromtxt(out / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == [1, 2, 3, 4]
    solution = meshio.read(out / "solution.vtu")
    for name in ("density", "velocity", "pressure", "mach"):
        assert name in solution.cell_data
    np.testing.assert_allclose(solution.cell_data["density"][0], result.solver.primitive()[0])


@pytest.mark.parametrize("compression", ["none", "zlib"])
def test_the_solution_file_is_compressed_as_the_case_asks(tmp_path, compression):
    case = write_case(tmp_path, extra=f'vtu_compression = "{compression}"\n')
    result = run_case(load_case(case), progress=False)
    path = tmp_path / "out" / "solution.vtu"
    assert (b"vtkZLibDataCompressor" in path.read_bytes()) == (compression == "zlib")
    np.testing.assert_array_equal(meshio.read(path).cell_data["density"][0],
                                  result.solver.primitive()[0])


def test_a_run_that_does_not_converge_says_where_its_residual_sits(tmp_path):
    """The note names the cells that hold the residual and their quality; the solution
    file shows the residual and the quality as fields (only then)."""
    lines = []
    case = write_case(tmp_path, extra="")
    case.write_text(case.read_text().replace("cfl = 1.0", "cfl = 1.0\nresidual_reduction = 1e-9"))
    result = run_case(load_case(case), progress=False, notify=lines.append)
    assert result.converged is False
    (note,) = [line for line in lines if "of the density residual sits in" in line]
    assert note.startswith("90% of the density residual sits in ")
    assert "median aspect ratio" in note and "non orthogonality" in note
    solution = meshio.read(tmp_path / "out" / "solution.vtu")
    residual = solution.cell_data["density_residual"][0]
    assert residual.shape == (result.solver.n_cells,) and residual.max() > 0
    np.testing.assert_allclose(solution.cell_data["aspect_ratio"][0].min(), 2 ** 0.5 * 6 / 5,
                               rtol=0.3)  # right triangles of a 6 x 5 grid of the square
    plain = run_case(load_case(write_case(tmp_path, directory="plain")), progress=False)
    assert plain.converged is None
    assert "density_residual" not in meshio.read(tmp_path / "plain" / "solution.vtu").cell_data


VORTEX = 'top = { type = "farfield", vortex = true, centre = [0.5, 0.0] }'


@pytest.mark.parametrize(("integrator", "top"), [("rk4", ""), ("lusgs", ""), ("rk4", VORTEX)],
                         ids=["rk4", "lusgs", "rk4-vortex-farfield"])
def test_restart_continues_without_loss(tmp_path, integrator, top):
    def case(**kwargs):
        path = write_case(tmp_path, integrator=integrator, **kwargs)
        if top:
            path.write_text(path.read_text().replace('top = "farfield"', top))
        return load_case(path)

    straight = run_case(case(iterations=6, directory="a"), progress=False).solver
    run_case(case(iterations=3, directory="b"), progress=False)
    resumed = run_case(case(iterations=3, directory="b", restart='restart = "b/checkpoint.npz"'),
                       progress=False).solver
    assert resumed.iteration == 6
    np.testing.assert_array_equal(resumed.conserved(), straight.conserved())
    assert resumed.discretisation.circulation == straight.discretisation.circulation
    assert (straight.discretisation.circulation != 0) == bool(top)
    history = np.genfromtxt(tmp_path / "b" / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == [1, 2, 3, 4, 5, 6]


def test_a_restart_continues_the_steady_controls(tmp_path, monkeypatch):
    """The frozen limiter's ceiling, the CFL ramp's back-off and the stall watch travel in
    the checkpoint: an LU-SGS run restarted after its limiter froze ends where the
    uninterrupted run does, to the bit."""
    monkeypatch.setattr(fv_solver, "STALL_STEPS", 1)  # freeze at the first slow step

    def case(**kwargs):
        path = write_case(tmp_path, integrator="lusgs", **kwargs)
        path.write_text(path.read_text().replace(
            "cfl = 1.0", "cfl = 5.0\ncfl_max = 1e3\nfreeze_limiter = 0.9"))
        return load_case(path)

    straight = run_case(case(iterations=12, directory="a"), progress=False).solver
    run_case(case(iterations=8, directory="b"), progress=False)
    frozen = np.genfromtxt(tmp_path / "b" / "history.csv", delimiter=",", names=True)
    assert frozen["limiter_frozen"][-1] == 1  # frozen before the checkpoint
    resumed = run_case(case(iterations=4, directory="b", restart='restart = "b/checkpoint.npz"'),
                       progress=False).solver
    assert resumed.iteration == straight.iteration == 12
    np.testing.assert_array_equal(resumed.conserved(), straight.conserved())
    assert resumed.cfl == straight.cfl
    assert resumed.controls()[0] == straight.controls()[0]


@pytest.mark.parametrize(("extra", "message"), [
    ("[solve]\nx = 1\n", "unknown section.*solve.*valid"),
    ("[solver]\nx = 1\n", r"\[solver\] unknown key"),
])
def test_unknown_sections_are_refused(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        load_case(write_case(tmp_path, extra=extra))


@pytest.mark.parametrize(("old", "new", "message"), [
    ('flux = "roe"', 'flux = "hllc"',
     "unknown value 'hllc'; valid: rusanov, llf, roe, lmroe, ausmpw\\+"),
    ("cfl = 1.0", "cfl = 1.0\nclf = 2.0", r"\[run\] unknown key\(s\) clf; valid: backend"),
    ("cfl = 1.0", "cfl = -1.0", "must be positive"),
    ('bottom = "slip-wall"', 'bottom = "wall"', "unknown condition 'wall'; valid: slip-wall"),
    ("mach = 0.5", 'mach = "fast"', "expected int or float"),
    ("checkpoint_every = 2", 'checkpoint_every = 2\nvtu_compression = "gzip"',
     "unknown value 'gzip'; valid: none, zlib, lzma"),
    ("mach = 0.5", "mach = 0.5\ngamma = 1.0", r"\[physics\] gamma must be above 1"),
    ("mach = 0.5", "mach = 0.5\ngamma = 0.5", r"\[physics\] gamma must be above 1"),
])
def test_bad_values_name_the_key_and_the_valid_choices(tmp_path, old, new, message):
    path = write_case(tmp_path)
    path.write_text(path.read_text().replace(old, new))
    with pytest.raises(ConfigError, match=message):
        load_case(path)


def test_cli_exit_codes_and_no_work_on_a_bad_marker(tmp_path, capsys):
    path = write_case(tmp_path)
    path.write_text(path.read_text().replace('top = "farfield"', 'lid = "farfield"'))
    assert main(["run", str(path), "--quiet"]) == 1
    assert "unknown marker(s) lid; no condition for marker(s) top" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(["run", str(write_case(tmp_path, iterations=2)), "--quiet"]) == 0


def test_a_checkpoint_of_another_mesh_is_refused(tmp_path):
    run_case(load_case(write_case(tmp_path, iterations=2, directory="a")), progress=False)
    path = write_case(tmp_path, iterations=2, directory="b",
                      restart='restart = "a/checkpoint.npz"')
    write_mesh(grid_mesh(5, 5, "triangle"), tmp_path / "square.msh")
    with pytest.raises(ConfigError, match="written for another mesh"):
        run_case(load_case(path), progress=False)
    missing = write_case(tmp_path, iterations=2, directory="c",
                         restart='restart = "nowhere.npz"')
    with pytest.raises(ConfigError, match="cannot read checkpoint"):
        run_case(load_case(missing), progress=False)




def test_residual_reduction_stops_a_converged_run(tmp_path, capsys):
    case = write_case(tmp_path, integrator="newton-krylov")
    settings = "cfl = 10\ncfl_max = 1e6\nresidual_reduction = 1e-9"
    text = case.read_text().replace("cfl = 1.0", settings)
    case.write_text(text.replace("iterations = 4", "iterations = 40"))
    assert main(["run", str(case), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("converged: ")
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    assert 3 < len(history) < 40
    assert history["residual_0"][-1] <= 1e-9 * history["residual_0"][0]
    assert history["residual_0"][-2] > 1e-9 * history["residual_0"][0]
    assert (np.diff(history["wall_s"]) > 0).all()


def test_a_run_that_misses_its_reduction_says_so(tmp_path, capsys):
    case = write_case(tmp_path, iterations=2, extra="")
    case.write_text(case.read_text().replace("cfl = 1.0", "cfl = 1.0\nresidual_reduction = 1e-8"))
    assert main(["run", str(case), "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("90% of the density residual sits in")
    assert out[1].startswith("not converged: 2 iterations")


@pytest.mark.parametrize("key", ["residual_reduction", "freeze_limiter"])
def test_reduction_factors_of_one_or_more_are_refused(tmp_path, key):
    case = write_case(tmp_path)
    case.write_text(case.read_text().replace("cfl = 1.0", f"cfl = 1.0\n{key} = 10"))
    with pytest.raises(ConfigError, match=rf"\[run\] {key}: must be below 1, found 10 \("):
        load_case(case)


def test_boundary_patterns_name_many_markers_and_exact_names_come_first(tmp_path, capsys):
    """gmsh meshes without physical groups name every curve apart: a glob pattern gives
    them one condition; a marker's own entry wins, then the first pattern in file order."""
    path = write_case(tmp_path)
    text = path.read_text()
    start, end = text.index("[boundaries]"), text.index("[scheme]")
    path.write_text(text[:start] + '[boundaries]\nbottom = "slip-wall"\n'
                    '"[lr]*" = "farfield"\n"*" = "farfield"\n' + text[end:])
    result = run_case(load_case(path), progress=False)
    specs = result.system.case.boundaries
    assert {name: spec.condition.name for name, spec in specs.items()} == {
        "bottom": "slip-wall", "left": "farfield", "right": "farfield", "top": "farfield"}
    path.write_text(text[:start] + '[boundaries]\n"*" = "farfield"\n"lid*" = "farfield"\n'
                    + text[end:])
    assert main(["run", str(path), "--quiet"]) == 1
    assert "unknown marker(s) lid*" in capsys.readouterr().err  # a pattern matching nothing


def test_max_update_zero_bounds_nothing_and_a_negative_one_is_refused(tmp_path):
    from gpusolver.solvers.fv.case import stepping_of

    def stepping(value):
        case = write_case(tmp_path, integrator="lusgs")
        case.write_text(case.read_text().replace("cfl = 1.0", f"cfl = 1.0\nmax_update = {value}"))
        return stepping_of(load_case(case))

    assert stepping(0.05).max_update == 0.05
    assert stepping(0).max_update is None
    with pytest.raises(ConfigError, match="max_update must be a fraction >= 0"):
        stepping(-0.1)


def test_lusgs_omega_reaches_the_lusgs_steps_and_below_one_is_refused(tmp_path):
    """The LU-SGS steps take ``[run] lusgs_omega`` (the coarse levels': test_fv_multigrid)."""
    from gpusolver.run import build_system
    from gpusolver.solvers.fv.case import stepping_of

    def case_with(value):
        case = write_case(tmp_path, integrator="lusgs")
        case.write_text(case.read_text().replace(
            "cfl = 1.0", f"cfl = 1.0\nlusgs_omega = {value}"))
        return load_case(case)

    assert build_system(case_with(3)).solver.lusgs.omega == 3.0
    assert stepping_of(case_with(1)).lusgs_omega == 1.0
    with pytest.raises(ConfigError, match="lusgs_omega must be at least 1"):
        stepping_of(case_with(0.5))


def test_an_empty_boundaries_section_is_answered_with_the_meshs_markers(tmp_path):
    case = write_case(tmp_path)
    text = case.read_text()
    start, end = text.index("[boundaries]"), text.index("[scheme]")
    case.write_text(text[:start] + "[boundaries]\n" + text[end:])
    with pytest.raises(ConfigError, match="no condition for marker.*the mesh has markers: "
                                          ".*bottom"):
        run_case(load_case(case), progress=False)


def _ctrl_c_during_step(monkeypatch, number: int, presses: int = 1) -> None:
    """Ctrl-C (SIGINT to this process) ``presses`` times in the middle of the FV solver's
    step ``number`` (counted from 1)."""
    from gpusolver.solvers.fv.solver import Solver

    step = Solver.step
    count = {"n": 0}

    def step_with_ctrl_c(self, dt=None):
        count["n"] += 1
        if count["n"] == number:
            for _ in range(presses):
                os.kill(os.getpid(), signal.SIGINT)
                signal.sigtimedwait([], 0.05)  # the handler runs here, in mid-step
        return step(self, dt)

    monkeypatch.setattr(Solver, "step", step_with_ctrl_c)


def test_ctrl_c_ends_after_the_step_in_progress_with_a_matching_checkpoint(
        tmp_path, monkeypatch, capsys):
    _ctrl_c_during_step(monkeypatch, 4)
    case = write_case(tmp_path, iterations=10)
    assert main(["run", str(case), "--quiet"]) == 130
    assert capsys.readouterr().out.startswith("interrupted: 4 iterations")
    out = tmp_path / "out"
    history = np.genfromtxt(out / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == [1, 2, 3, 4]
    assert _checkpoint_iteration(out / "checkpoint.npz") == 4
    assert (out / "solution.vtu").exists()


def test_a_second_ctrl_c_stops_at_once(tmp_path, monkeypatch, capsys):
    """The first Ctrl-C waits for the step in progress; a second one does not wait."""
    _ctrl_c_during_step(monkeypatch, 4, presses=2)
    case = write_case(tmp_path, iterations=10)
    assert main(["run", str(case), "--quiet"]) == 130
    assert "interrupted" in capsys.readouterr().err
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == [1, 2, 3]
    assert _checkpoint_iteration(tmp_path / "out" / "checkpoint.npz") == 2


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_are_refused(tmp_path, value):
    case = write_case(tmp_path)
    case.write_text(case.read_text().replace("mach = 0.5", f"mach = {value}"))
    with pytest.raises(ConfigError, match="mach: must be a finite number"):
        load_case(case)


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_a_damaged_checkpoint_is_one_line_of_bad_input(tmp_path, capsys, damage):
    run_case(load_case(write_case(tmp_path)), progress=False)
    checkpoint = tmp_path / "out" / "checkpoint.npz"
    data = bytearray(checkpoint.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "flip":
        for offset in range(60, len(data), 61):
            data[offset] ^= 0xFF
    else:
        data = bytearray()
    checkpoint.write_bytes(bytes(data))
    case = write_case(tmp_path, restart=f'restart = "{checkpoint}"', directory="again")
    assert main(["run", str(case), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "checkpoint.npz" in err and len(err.strip().splitlines()) == 1


def test_an_output_directory_that_is_a_file_stops_the_run_before_work(tmp_path, capsys):
    (tmp_path / "taken").write_text("precious")
    case = write_case(tmp_path, directory="taken")
    assert main(["run", str(case), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "output directory" in err and "taken" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "taken").read_text() == "precious"


def test_surface_pressure_rows_follow_the_wall_with_their_arc_length(tmp_path):
    run_case(load_case(write_case(tmp_path)), progress=False)
    cp = np.genfromtxt(tmp_path / "out" / "cp_bottom.csv", delimiter=",", names=True)
    assert cp.dtype.names == ("s", "x", "y", "cp")
    assert (np.diff(cp["s"]) > 0).all()
    steps = np.hypot(np.diff(cp["x"]), np.diff(cp["y"]))
    np.testing.assert_allclose(steps, np.diff(cp["s"]), rtol=1e-12)  # neighbours, in order
    assert cp["x"][0] > cp["x"][-1]  # from the downstream end


def test_the_case_reference_in_docs_is_generated_from_the_schema():
    from gpusolver.case_reference import case_reference

    committed = Path(__file__).resolve().parents[2] / "docs" / "case_format.md"
    assert committed.read_text() == case_reference(), (
        "regenerate: python -c 'from gpusolver.case_reference import case_reference; "
        "open(\"docs/case_format.md\", \"w\").write(case_reference())'")


@pytest.mark.parametrize("name", ["STEADY_EXAMPLE", "EXPLICIT_EXAMPLE"])
def test_the_reference_examples_are_valid_cases(tmp_path, name):
    import tomllib

    from gpusolver import case_reference
    from gpusolver.io.case import parse_case
    from gpusolver.solvers.fv.case import SCHEMA

    text = getattr(case_reference, name)
    case = parse_case(tomllib.loads(text), tmp_path / "case.toml", SCHEMA)
    assert case.run["iterations"] > 0


def test_a_restart_after_kill_drops_the_rows_past_its_checkpoint(tmp_path):
    """kill -9 between checkpoints leaves history ahead of the checkpoint: no duplicates."""
    run_case(load_case(write_case(tmp_path, iterations=3, directory="b")), progress=False)
    history_path = tmp_path / "b" / "history.csv"
    rows = history_path.read_text().splitlines()
    history_path.write_text("\n".join([*rows, rows[-1].replace("3,", "4,", 1),
                                       rows[-1].replace("3,", "5,", 1)]) + "\n")  # rows 4, 5
    resumed = write_case(tmp_path, iterations=3, directory="b",
                         restart='restart = "b/checkpoint.npz"')
    run_case(load_case(resumed), progress=False)
    history = np.genfromtxt(history_path, delimiter=",", names=True)
    assert history["iteration"].tolist() == [1, 2, 3, 4, 5, 6]


def _start_run(case: Path) -> subprocess.Popen:
    """``gpusolver run case`` in a process of its own, once its history has a row."""
    process = subprocess.Popen([sys.executable, "-m", "gpusolver", "run", str(case), "--quiet"],
                               cwd=case.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    history = case.parent / "out" / "history.csv"
    deadline = time.monotonic() + 120
    while not (history.exists() and len(history.read_text().splitlines()) > 2):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no history row within 120 s"
        time.sleep(0.2)
    return process


def _checkpoint_iteration(path: Path) -> int:
    with np.load(path) as data:
        return json.loads(str(data["meta"]))["iteration"]


def test_sigterm_ends_a_run_as_ctrl_c_does(tmp_path):
    """A scheduler's time limit (SIGTERM) stops after the step in progress, with a
    checkpoint and outputs that match the history."""
    process = _start_run(write_case(tmp_path, iterations=10**7))
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert out.startswith("interrupted: ") and "Traceback" not in err
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    last = int(history["iteration"][-1])
    assert history["iteration"].tolist() == list(range(1, last + 1))
    assert _checkpoint_iteration(tmp_path / "out" / "checkpoint.npz") == last
    assert (tmp_path / "out" / "solution.vtu").exists()


def test_kill_9_leaves_a_history_that_covers_the_checkpoint(tmp_path):
    """Rows reach the disk before each checkpoint: after ``kill -9`` the restart's
    history runs from 1 without gaps or repeats."""
    process = _start_run(write_case(tmp_path, iterations=10**7))
    time.sleep(1.0)
    process.kill()
    process.communicate(timeout=60)
    at = _checkpoint_iteration(tmp_path / "out" / "checkpoint.npz")
    rows = (tmp_path / "out" / "history.csv").read_text().splitlines()[1:]
    assert len(rows) >= at > 0
    resumed = write_case(tmp_path, iterations=3, restart='restart = "out/checkpoint.npz"')
    run_case(load_case(resumed), progress=False)
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == list(range(1, at + 4))


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[2] / "cases")
                                        .glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_case_file_is_valid(path):
    from gpusolver.systems import load_case

    case = load_case(path)
    assert case.loop.iterations >= 1 and case.method in ("fv", "dg", "vortex")


DG = '[solver]\nmethod = "dg"\n'


def _dg_case(tmp_path, directory="dg", iterations=4, restart="", precision="fp64"):
    path = write_case(tmp_path, iterations=iterations, directory=directory, restart=restart)
    text = path.read_text().replace('flux = "roe"', 'flux = "llf"\ndegree = 2')
    text = text.replace('backend = "numpy"', f'backend = "numpy"\nprecision = "{precision}"')
    path.write_text(DG + text)
    return load_case(path)


def test_a_dg_case_runs_writes_every_output_and_restarts_exactly(tmp_path):
    straight = run_case(_dg_case(tmp_path, "a", 4), progress=False).solver
    assert straight.layout.degree == 2 and straight.conserved().shape[1] == 6
    out = tmp_path / "a"
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.npz", "cp_bottom.csv",
                                                     "forces.csv", "history.csv",
                                                     "solution.vtu",
                                                     "solution_high_order.vtu"]
    view = meshio.read(out / "solution_high_order.vtu")
    assert sum(len(block.data) for block in view.cells) == 9 * straight.layout.n_elements
    assert np.all(view.point_data["density"] > 0)
    history = np.genfromtxt(out / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == [1, 2, 3, 4]
    assert np.all(np.isfinite(history["cl"]))
    run_case(_dg_case(tmp_path, "b", 2), progress=False)
    resumed = run_case(_dg_case(tmp_path, "b", 2, 'restart = "b/checkpoint.npz"'),
                       progress=False).solver
    assert resumed.iteration == 4 and resumed.time == straight.time
    np.testing.assert_array_equal(resumed.conserved(), straight.conserved())


@pytest.mark.parametrize(("change", "message"), [
    (('time_integrator = "rk4"', 'time_integrator = "lusgs"'),
     r"\[run\] time_integrator: unknown value 'lusgs'; valid: ssprk3, rk4"),
    (('precision = "fp64"', 'precision = "fp32"'), "fp64"),
    (('time_integrator = "rk4"', 'time_integrator = "rk4"\nmultigrid = 2'),
     r"\[run\] unknown key\(s\) multigrid"),
    (('[scheme]', '[scheme]\nlimiter = "venkatakrishnan"'), r"\[scheme\] unknown key\(s\) limiter"),
])
def test_dg_refuses_what_it_does_not_run_yet(tmp_path, change, message):
    """Keys of finite volumes that DG would ignore are refused, naming DG's own."""
    path = _dg_case(tmp_path).path
    path.write_text(path.read_text().replace(*change))
    with pytest.raises(ConfigError, match=message):
        run_case(load_case(path), progress=False)


def test_a_navier_stokes_dg_case_runs(tmp_path):
    path = _dg_case(tmp_path, iterations=2).path
    path.write_text(path.read_text().replace(
        "mach = 0.5", 'mach = 0.5\nequations = "navier-stokes"\nreynolds = 100.0'))
    solver = run_case(load_case(path), progress=False).solver
    assert solver.discretisation.viscous is not None and solver.iteration == 2
    history = np.genfromtxt(tmp_path / "dg" / "history.csv", delimiter=",", names=True)
    assert np.all(np.isfinite(history["cd"]))


def test_history_every_batches_dg_steps(tmp_path):
    """Seven DG steps recorded every third: rows at steps 3, 6 and 7."""
    path = _dg_case(tmp_path, "batched", iterations=7).path
    path.write_text(path.read_text().replace("checkpoint_every = 2",
                                             "checkpoint_every = 5\nhistory_every = 3"))
    result = run_case(load_case(path), progress=False)
    assert result.solver.iteration == 7
    history = np.genfromtxt(tmp_path / "batched" / "history.csv", delimiter=",", names=True)
    assert history["iteration"].tolist() == [3, 6, 7]


def test_the_walkthrough_case_runs_and_writes_what_it_lists(tmp_path):
    """docs/guide/walkthrough.md: its case file, as printed there, runs on the shipped
    mesh (a few steps, without the plan) and writes every file its table lists."""
    import re

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "guide" / "walkthrough.md").read_text()
    case_text = re.search(r"```toml\n(.*?)```", page, re.S).group(1)
    listed = re.findall(r"^\| `([\w.]+)` \|", page, re.M)
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / "naca.toml"
    mesh = root / "data" / "naca0012_tri.msh"
    path.write_text(case_text.replace('plan = "plan.npz"\n', "")
                    .replace('"../data/naca0012_tri.msh"', f'"{mesh}"')
                    .replace("iterations = 5000", 'iterations = 3\nbackend = "numpy"'))
    result = run_case(load_case(path), progress=False)
    assert result.system.iteration == 3
    assert set(listed) == {p.name for p in result.files}
    assert all((tmp_path / "out" / "naca" / name).exists() for name in listed)


@pytest.mark.parametrize("integrator", ["lusgs", "newton-krylov"])
def test_implicit_steps_at_one_global_time_step_advance_the_time(tmp_path, integrator):
    """``local_time_step = false`` with an implicit integrator: implicit steps of the one
    global step (they once ended in a TypeError after the set-up)."""
    path = write_case(tmp_path, iterations=2, integrator=integrator)
    path.write_text(path.read_text().replace("[run]", "[run]\nlocal_time_step = false"))
    solver = run_case(load_case(path), progress=False).solver
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    assert solver.iteration == 2 and solver.time > 0
    assert np.all(np.diff(history["time"]) > 0)
    assert history["time"][-1] == pytest.approx(solver.time, rel=1e-9)  # printed to 10 digits


def test_a_restart_takes_the_cases_cfl_and_says_so(tmp_path, capsys):
    """The advice of a diverged run is to lower the CFL number: a restart whose case does
    so runs at the case's CFL number, not at the one stored in the checkpoint, and says
    so in one line; a restart with the same settings continues the stored ramp."""
    from gpusolver.cli import main

    run_case(load_case(write_case(tmp_path, iterations=2, directory="a")), progress=False)
    resumed = write_case(tmp_path, iterations=1, directory="a",
                         restart='restart = "a/checkpoint.npz"')
    resumed.write_text(resumed.read_text().replace("cfl = 1.0", "cfl = 0.25"))
    capsys.readouterr()
    assert main(["run", str(resumed), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert ("restart: [run] cfl = 0.25 replaces the checkpoint's run (cfl = 1, at 1 when it "
            "stopped)") in printed
    assert run_case(load_case(resumed), progress=False).solver.cfl == 0.25


def test_keys_that_do_nothing_in_the_case_are_named_before_the_run(tmp_path, capsys):
    """A key the case's scheme or integrator never reads (a Reynolds number in an Euler
    case, a CFL ramp or LU-SGS sweeps with RK4) is named in one line each; the run goes on."""
    from gpusolver.cli import main

    case = write_case(tmp_path, iterations=1)
    case.write_text(case.read_text().replace("mach = 0.5", "mach = 0.5\nreynolds = 1e6")
                    .replace("cfl = 1.0", 'cfl = 1.0\ncfl_max = 100\nsweeps = "colours"\n'
                             'line_implicit = true'))
    assert main(["run", str(case), "--quiet"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "does nothing" in line]
    assert lines == [
        f"{case}: [physics] reynolds does nothing here (it needs equations = 'navier-stokes')",
        f"{case}: [run] cfl_max does nothing here (it needs an implicit time_integrator)",
        f"{case}: [run] sweeps does nothing here (it needs an implicit time_integrator)",
        f"{case}: [run] line_implicit does nothing here (it needs LU-SGS steps or "
        "preconditioner)"]


def test_a_dg_case_names_its_keys_that_do_nothing_too(tmp_path, capsys):
    from gpusolver.cli import main

    case = tmp_path / "dg.toml"
    mesh = Path(__file__).resolve().parents[2] / "data" / "naca0012_tri.msh"
    case.write_text(f"""
[solver]
method = "dg"
[mesh]
file = "{mesh}"
[physics]
mach = 0.5
reynolds = 1e6
prandtl = 0.7
[boundaries]
airfoil = "slip-wall"
farfield = "farfield"
[scheme]
degree = 1
[run]
backend = "numpy"
iterations = 1
[output]
directory = "{tmp_path / 'out'}"
""")
    assert main(["run", str(case), "--quiet"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "does nothing" in line]
    assert lines == [
        f"{case}: [physics] {key} does nothing here (it needs equations = 'navier-stokes')"
        for key in ("reynolds", "prandtl")]


@pytest.mark.parametrize("owner, refused", [
    ("ALIVE", True),            # a second run while the first still writes
    ("DEAD", False),            # the lock of a run killed with kill -9: taken over
    ("", False),                # a lock file cut short by a crash: taken over
    ("1 another-host", True),   # another host's run cannot be checked
])
def test_one_run_per_output_folder(tmp_path, owner, refused):
    import os
    import socket
    import subprocess
    import sys

    from gpusolver.io.lock import LOCK_NAME

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    text = {"ALIVE": f"{os.getpid()} {socket.gethostname()}",
            "DEAD": f"{dead} {socket.gethostname()}"}.get(owner, owner)
    (tmp_path / "out").mkdir()
    lock = tmp_path / "out" / LOCK_NAME
    lock.write_text(text)
    case = load_case(write_case(tmp_path, iterations=1))
    if refused:
        with pytest.raises(ConfigError, match=r"output directory .*out is in use by the run "
                                              r"of pid \d+ on [\w-]+"):
            run_case(case, progress=False)
        assert lock.read_text() == text and sorted(p.name for p in lock.parent.iterdir()) == [
            LOCK_NAME]
    else:
        assert run_case(case, progress=False).system.iteration == 1
        assert not lock.exists()  # released at the end


def test_sigterm_while_the_final_outputs_are_written_waits_for_all_of_them(tmp_path,
                                                                           monkeypatch):
    """A batch scheduler's SIGTERM that lands while the run writes its last outputs: they
    are all written, and they match the history (forces.csv was left from an earlier
    run next to a later history)."""
    import os
    import signal

    from gpusolver.solvers import mesh_system
    from meshorder.termination import terminate_as_interrupt

    run_case(load_case(write_case(tmp_path, iterations=2)), progress=False)
    writing = mesh_system.write_solution

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0.1)  # let the handler run
        return writing(*args, **kwargs)

    monkeypatch.setattr(mesh_system, "write_solution", signalled)
    resumed = write_case(tmp_path, iterations=3, restart='restart = "out/checkpoint.npz"')
    try:
        with terminate_as_interrupt():  # as gpusolver's command line runs it
            result = run_case(load_case(resumed), progress=False)
    except KeyboardInterrupt:
        pytest.fail("the SIGTERM cut the final outputs short")
    assert result.system.iteration == 5
    history = np.genfromtxt(tmp_path / "out" / "history.csv", delimiter=",", names=True)
    forces = np.genfromtxt(tmp_path / "out" / "forces.csv", delimiter=",", names=True,
                           dtype=None, encoding=None)
    total = forces[forces["marker"] == "total"]
    assert history["iteration"][-1] == 5
    np.testing.assert_allclose([total["cl"][0], total["cd"][0]],
                               [history["cl"][-1], history["cd"][-1]], rtol=1e-9)


def test_a_checkpoint_of_another_format_or_state_is_refused(tmp_path):
    """A checkpoint written before the one format (version 1 of finite volumes) and one
    whose state does not fit the run are each refused with one line naming the file."""
    import json

    run_case(load_case(write_case(tmp_path, iterations=2, directory="a")), progress=False)
    written = tmp_path / "a" / "checkpoint.npz"
    with np.load(written) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    old, shrunk = tmp_path / "old.npz", tmp_path / "shrunk.npz"
    np.savez(old, meta=np.array(json.dumps({**meta, "version": 1})), **arrays)
    np.savez(shrunk, meta=np.array(json.dumps(meta)), conserved=arrays["conserved"][:, :-1])
    for path, message in [(old, "format version 1, this gpusolver reads version 3"),
                          (shrunk, r"the run needs float64 \(4, \d+\)")]:
        case = write_case(tmp_path, iterations=1, directory="b",
                          restart=f'restart = "{path.name}"')
        with pytest.raises(ConfigError, match=f"checkpoint {path}: .*{message}"):
            run_case(load_case(case), progress=False)


def test_an_unknown_method_lists_the_registered_ones(tmp_path):
    path = write_case(tmp_path)
    path.write_text('[solver]\nmethod = "les"\n' + path.read_text())
    with pytest.raises(ConfigError, match=r"\[solver\] method: unknown value 'les'; valid: "
                                          "fv, dg, vortex"):
        load_case(path)


def test_a_lock_taken_by_another_run_at_the_same_moment_is_refused(tmp_path, monkeypatch):
    """Between finding a dead run's lock and taking it over, another run took it."""
    from gpusolver.io import lock

    monkeypatch.setattr(lock, "_take", lambda path: False)
    (tmp_path / lock.LOCK_NAME).write_text("")  # a lock cut short: taken over, if it can
    with pytest.raises(ConfigError, match="another run took .* just now"), \
            lock.output_lock(tmp_path):
        pass


def test_forces_csv_splits_pressure_and_friction(tmp_path):
    """Each marker's CL and CD are the sums of their pressure and friction parts; on a
    slip wall (the ghost mirrors the normal velocity only) there is no friction."""
    case = write_case(tmp_path, iterations=2)
    assert main(["run", str(case), "--quiet"]) == 0
    rows = np.genfromtxt(tmp_path / "out" / "forces.csv", delimiter=",", names=True,
                         dtype=None, encoding="utf-8")
    for row in np.atleast_1d(rows):
        for axis in ("cl", "cd"):
            assert row[f"{axis}_pressure"] + row[f"{axis}_friction"] == pytest.approx(
                row[axis], rel=1e-8, abs=1e-12)
            assert abs(row[f"{axis}_friction"]) < 1e-12


def test_a_run_with_a_plan_imports_no_scipy(tmp_path):
    """Everything a run needs of the mesh's graph is in its plan: on the NumPy backend such
    a run imports no SciPy (a quarter of a second); the runs that plan, refine or solve
    sparse systems do."""
    from meshorder.cli import main as meshorder_main

    write_mesh(grid_mesh(24, 20, "triangle"), tmp_path / "square.msh")
    assert meshorder_main(["reorder", str(tmp_path / "square.msh"), str(tmp_path / "p.npz"),
                           "--sweep-colours", "--multigrid", "1"]) == 0
    case = tmp_path / "planned.toml"
    case.write_text(CASE.format(iterations=2, restart="", directory="planned",
                                integrator="lusgs")
                    .replace('file = "square.msh"', 'file = "square.msh"\nplan = "p.npz"')
                    .replace("[run]", "[run]\nmultigrid = 1\nsweeps = \"colours\""))
    code = ("import sys; from gpusolver.cli import main; code = main(['run', '--quiet', "
            f"{str(case)!r}]); print(code, sorted(m for m in sys.modules if m == 'scipy'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr


def test_profile_setup_reports_each_run_of_a_case_in_one_process(tmp_path):
    """``scripts/profile_setup.py --repeat 2``: the phases of two runs, the second marked
    as such; ``--repeat 0`` is a usage error (exit 2)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "profile_setup.py"
    case = write_case(tmp_path, iterations=2)
    done = subprocess.run([sys.executable, str(script), str(case), "--repeat", "2"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    heads = [line for line in done.stdout.splitlines() if not line.startswith(" ")]
    assert len(heads) == 2 and "imports" in heads[0] and "run 2 in this process" in heads[1]
    assert done.stdout.count("build_system") == 2
    refused = subprocess.run([sys.executable, str(script), str(case), "--repeat", "0"],
                             capture_output=True, text=True, cwd=tmp_path)
    assert refused.returncode == 2 and "1 or more" in refused.stderr
