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
