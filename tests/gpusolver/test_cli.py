"""The gpusolver command line, as far as it runs without a GPU."""

from pathlib import Path

import pytest

from gpusolver.backends import cupy_available
from gpusolver.cli import build_parser, main

DATA = Path(__file__).resolve().parents[2] / "data"


def test_bench_flux_needs_a_mesh_source():
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["bench-flux"])
    assert exc.value.code == 2


def test_bench_flux_rejects_unknown_precisions(capsys):
    code = main(["bench-flux", "--mesh", str(DATA / "couette_quad_50.msh"), "--precisions",
                 "fp16"])
    assert code == 2
    assert "unknown precision(s) fp16; valid: fp64, fp32" in capsys.readouterr().err


@pytest.mark.skipif(cupy_available(), reason="a GPU is usable here")
@pytest.mark.parametrize("command", ["bench", "bench-flux"])
def test_bench_without_a_gpu_says_so_before_any_work(command, capsys):
    code = main([command, "--generate", "wing:100000000"])  # would take hours to mesh
    assert code == 1
    err = capsys.readouterr().err
    assert "needs a CUDA GPU with CuPy" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("option", "value"), [("--strategies", "atomic,magic"),
                                                ("--orderings", "rcm,nonsense"),
                                                ("--residual-orderings", "bogus"),
                                                ("--degrees", "2,5")])
def test_bench_rejects_unknown_names_before_meshing(option, value, capsys):
    assert main(["bench", "--generate", "wing:100000000", option, value]) == 2
    assert "unknown" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["wing", "wing:abc", "wing:0", "teapot:1000"])
def test_bad_generate_values_are_usage_errors(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench-flux", "--generate", value])
    assert exc.value.code == 2


def test_both_tools_print_their_version(capsys):
    from meshorder.cli import main as meshorder_main

    for tool, run in (("gpusolver", main), ("meshorder", meshorder_main)):
        with pytest.raises(SystemExit) as exc:
            run(["--version"])
        assert exc.value.code == 0
        assert capsys.readouterr().out.startswith(f"{tool} ")


@pytest.mark.parametrize(("extra", "message"), [
    ([], "run it as `mpiexec -n N gpusolver bench-parallel ...` with N >= 2"),
    (["--transports", "nccl,pigeon"], "unknown transport(s) pigeon; valid: mpi-host, nccl"),
    (["--solver", "dg", "--precision", "fp32"], "--solver dg times fp64 only"),
])
def test_bench_parallel_outside_mpiexec_or_with_unknown_transports_is_a_usage_error(
        extra, message, capsys):
    assert main(["bench-parallel", "--mesh", str(DATA / "naca0012_tri.msh"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_reader_that_leaves_the_pipe_is_not_an_error():
    """``gpusolver run case.toml | head -1``: the printing after the reader left ends the
    command quietly with exit 0, as meshorder's do (not "error: : Broken pipe")."""
    import subprocess
    import sys

    code = ("import sys, gpusolver.cli as cli\n"
            "def leave(args):\n"
            "    raise BrokenPipeError(32, 'Broken pipe')\n"
            "cli.COMMANDS['run'] = leave\n"
            "sys.exit(cli.main(['run', 'case.toml']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
