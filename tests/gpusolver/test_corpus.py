"""The corpus of third-party meshes (``scripts/corpus.py``) with the shipped steady
settings: each 2-D one runs a few steps in CI without diverging (the full runs are a
benchmark)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from gpusolver.run import run_case
from gpusolver.systems import load_case

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "corpus.py"
spec = importlib.util.spec_from_file_location("corpus", SCRIPT)
corpus = importlib.util.module_from_spec(spec)
sys.modules["corpus"] = corpus  # its dataclasses look their module up
spec.loader.exec_module(corpus)

TWO_D = [entry for entry in corpus.CORPUS if entry.dim == 2]


@pytest.mark.skipif(not corpus.MESHES.is_dir(), reason="../shared/meshes is not here")
@pytest.mark.parametrize("entry", TWO_D, ids=[entry.name for entry in TWO_D])
def test_each_2d_mesh_of_the_corpus_starts_converging_with_the_shipped_settings(entry,
                                                                              tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(corpus.case_text(entry, 30, "numpy", tmp_path / "out"))
    result = run_case(load_case(case), progress=False)
    assert result.report.fall < 0.5  # 30 steps: the residual has fallen
    loads = result.report.loads
    assert np.isfinite([loads["cl"], loads["cd"]]).all()
    assert not result.solver.gas.invalid(result.solver.u).any()


def test_a_row_records_the_cells_of_the_solution_file(tmp_path):
    from gpusolver.io.vtu import write_vtu

    points = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    write_vtu(tmp_path / "s.vtu", points, [("triangle", np.array([[0, 1, 2], [1, 3, 2]]))])
    assert corpus.solution_cells(tmp_path / "s.vtu") == 2
    row = {"mesh": "m", "origin": "o", "cells": 12345, "steps": 7, "orders": 6.0,
           "best_orders": 6.0, "seconds": 1.5, "cl": 0.1, "cd": 0.02}
    assert "| m | o | 12,345 | 7 | 6.0 (6.0) | 1.5 | 0.10000 | 0.02000 |" in corpus.markdown([row])


@pytest.mark.skipif(not corpus.MESHES.is_dir(), reason="../shared/meshes is not here")
def test_every_entry_names_a_mesh_that_is_there_or_that_the_script_makes():
    made = set(corpus.GENERATED) | set(corpus.GEOMETRIES)
    missing = [entry.name for entry in corpus.CORPUS
               if not entry.file.exists() and entry.path not in made]
    assert not missing
    wing = next(entry for entry in corpus.CORPUS if entry.name == "repository-wing")
    assert wing.file == corpus.ROOT / "data" / "wing.msh"
