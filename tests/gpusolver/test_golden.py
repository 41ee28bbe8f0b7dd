"""The answers of every method and integrator stay where they were.

``golden/golden.json`` holds the logs and forces of the cases in ``golden/`` as the
project computed them before the run loop and the solvers' interfaces were unified
(``golden/make_golden.py`` rewrites it with whatever gpusolver is on PYTHONPATH). Each case
runs here through today's ``run_case``; the logs keep 9 significant digits and the forces
10, so agreement to 1e-8 is agreement to the last printed digit.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from gpusolver.run import run_case
from gpusolver.systems import load_case

from .golden.make_golden import read_answers

HERE = Path(__file__).parent / "golden"
GOLDEN = json.loads((HERE / "golden.json").read_text())


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_case_gives_its_recorded_answer(tmp_path, name):
    case = tmp_path / name
    mesh_dir = (HERE / "../../../data").resolve()
    case.write_text((HERE / name).read_text().replace('"../../../data', f'"{mesh_dir}')
                    + f'\n[output]\ndirectory = "{tmp_path / "out"}"\n')
    run_case(load_case(case), progress=False)
    now, then = read_answers(tmp_path / "out"), GOLDEN[name]
    assert len(now["log"]) == len(then["log"]) and len(now["forces"]) == len(then["forces"])
    for new, old in zip(now["log"] + now["forces"], then["log"] + then["forces"], strict=True):
        assert new.keys() == old.keys()
        numbers = [k for k in old if k != "marker"]
        np.testing.assert_allclose([new[k] for k in numbers], [old[k] for k in numbers],
                                   rtol=1e-8, atol=1e-14, err_msg=f"{name}: {old}")
