"""Write ``golden.json``: each case of this folder run by the gpusolver on PYTHONPATH.

Usage (from the repository root): ``python tests/gpusolver/golden/make_golden.py``. The
file holds, per case, every row of its log (``history.csv`` or ``loads.csv``) without the
wall clock, and ``forces.csv``. ``test_golden.py`` runs the same cases and asserts that
the answers have not moved: they were recorded before the run loop and the solvers'
interfaces were unified, so a change of structure that moves an answer fails it. The
implicit cases were recorded again when implicit updates became relaxed per cell
(:mod:`gpusolver.integrators.relaxation`; their first steps relax 14 and 54 cells) and
the history gained the CFL number and the relaxed cells (and the Newton-Krylov case its
linear tolerance); the multigrid case again when
multigrid began to relax its coarse corrections so (its 12 steps are the start's
transient; the converged transonic NACA 0012 kept its CL and CD); the JST case again
when JST's dissipation took SU2's stretching factor (:data:`gpusolver.solvers.fv.jst.STRETCHING`).
"""

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def answers(case: Path) -> dict:
    """The logged rows and the forces of one run of ``case``."""
    with tempfile.TemporaryDirectory() as out:
        copy = HERE / f".{case.name}"
        copy.write_text(case.read_text() + f'\n[output]\ndirectory = "{out}"\n')
        try:
            subprocess.run([sys.executable, "-m", "gpusolver", "run", str(copy), "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
        finally:
            copy.unlink()
        return read_answers(Path(out))


def read_answers(out: Path) -> dict:
    """The log's rows (numbers, no ``wall_s``) and ``forces.csv``'s rows in ``out``."""
    log = next(p for p in (out / "history.csv", out / "loads.csv") if p.exists())
    with open(log, newline="") as f:
        rows = [{k: float(v) for k, v in row.items() if k != "wall_s"}
                for row in csv.DictReader(f)]
    forces = []
    if (out / "forces.csv").exists():
        with open(out / "forces.csv", newline="") as f:
            forces = [{k: (v if k == "marker" else float(v)) for k, v in row.items()}
                      for row in csv.DictReader(f)]
    return {"log": rows, "forces": forces}


if __name__ == "__main__":
    golden = {case.name: answers(case) for case in sorted(HERE.glob("*.toml"))}
    (HERE / "golden.json").write_text(json.dumps(golden, indent=1) + "\n")
