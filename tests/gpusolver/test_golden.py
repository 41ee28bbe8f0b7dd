"""The answers of every method and integrator stay where they were.

``golden/golden.json`` holds the logs and forces of the cases in ``golden/`` as the
project computed them before the run loop and the solvers' interfaces were unified
(``golden/make_golden.py`` rewrites it with whatever gpusolver is on PYTHONPATH). Each case
runs here through today's ``run_case``; the logs keep 9 significant digits and the forces
10, so agreement to 1e-8 is agreement to the last printed digit. A force or coefficient
is a sum of larger ones (a cylinder's lift, zero by symmetry, is 4e-10 of pressure forces
of order 1): it agrees to the last digit of the largest force or coefficient of its row.
"""

import json
import re
from pathlib import Path

import pytest

from gpusolver.run import run_case
from gpusolver.systems import load_case

from .golden.make_golden import read_answers

HERE = Path(__file__).parent / "golden"
#: Forces and their coefficients among a row's numbers.
LOAD = re.compile(r"(c[dlmxyz]|f[xyz])(_|$)")
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
        loads = [k for k in numbers if LOAD.match(k)]
        load_scale = max((abs(old[k]) for k in loads), default=0.0)
        for k in numbers:
            tolerance = 1e-8 * (load_scale if k in loads else abs(old[k])) + 1e-14
            assert abs(new[k] - old[k]) <= tolerance, f"{name}: {k} {new[k]} != {old[k]} ({old})"
