"""``scripts/recipe_meshes.py``: one case on several meshes of one generator recipe."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))  # the script imports its sibling corpus.py
spec = importlib.util.spec_from_file_location("recipe_meshes", SCRIPTS / "recipe_meshes.py")
recipe_meshes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recipe_meshes)
sys.path.remove(str(SCRIPTS))

CASE = """
[mesh]
file = "../out/a.msh"
plan = "../out/a.npz"
[physics]
mach = 0.5
[boundaries]
airfoil = "slip-wall"
farfield = "farfield"
[run]
backend = "numpy"
iterations = 100
[output]
directory = "../out/a"
restart = "../out/a/checkpoint.npz"
"""


def test_the_case_runs_on_the_new_mesh_without_its_plan_or_restart(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(CASE)
    sections = recipe_meshes.case_sections(case, tmp_path / "m.msh", None, tmp_path / "o", 7)
    assert sections["mesh"] == {"file": str(tmp_path / "m.msh")}
    assert sections["output"] == {"directory": str(tmp_path / "o")}
    assert sections["run"] == {"backend": "numpy", "iterations": 7}
    assert sections["boundaries"]["airfoil"] == "slip-wall"
    planned = recipe_meshes.case_sections(case, tmp_path / "m.msh", tmp_path / "p.npz",
                                          tmp_path / "o", None)
    assert planned["mesh"]["plan"] == str(tmp_path / "p.npz")
    assert planned["run"]["iterations"] == 100


def test_each_mesh_of_the_recipe_gives_a_row(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(CASE.replace('restart = "../out/a/checkpoint.npz"\n', ""))
    rows = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(SCRIPTS / "recipe_meshes.py"), str(case),
                           "--generate", "naca0012-tri --cells 1000", "--reorder=--colour",
                           "--meshes", "2", "--iterations", "3", "--json", str(rows)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    table = json.loads(rows.read_text())
    assert len(table) == 2 and all(row["steps"] == 3 and row["cells"] > 500 for row in table)
    assert done.stdout.strip().splitlines()[-1].startswith("| 2 | ")
