"""The gpusolver command line, as far as it runs without a GPU."""

from pathlib import Path

import pytest

from gpusolver.cli import build_parser, main

DATA = Path(__file__).resolve().parents[2] / "data"


def test_bench_flux_needs_a_mesh_source():
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["bench-flux"])
    assert exc.value.code == 2


def test_bench_flux_rejects_unknown_precisions():
    with pytest.raises(SystemExit, match=r"unknown precision\(s\) \['fp16'\]"):
        main(["bench-flux", "--mesh", str(DATA / "couette_quad_50.msh"), "--precisions", "fp16"])


def test_bench_flux_bad_mesh_is_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.su2"
    bad.write_text("NDIME= 2\n")
    assert main(["bench-flux", "--mesh", str(bad)]) == 1
    assert "gpusolver: error: " in capsys.readouterr().err


def test_bench_rejects_unknown_strategies_before_meshing(capsys):
    with pytest.raises(SystemExit, match="unknown strategy"):
        main(["bench", "--generate", "wing:100000000", "--strategies", "atomic,magic"])
