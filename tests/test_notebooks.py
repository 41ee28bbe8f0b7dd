"""Every notebook in notebooks/ runs from top to bottom and leaves no file behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import matplotlib
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebook_runs_and_leaves_its_folder_clean(notebook, monkeypatch):
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before = sorted(p.name for p in notebook.parent.iterdir())
    monkeypatch.chdir(notebook.parent)
    cells = json.loads(notebook.read_text())["cells"]
    namespace: dict = {"__name__": "__notebook__"}
    for number, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            code = compile("".join(cell["source"]), f"{notebook.name} cell {number}", "exec")
            exec(code, namespace)
    from matplotlib.figure import Figure

    shown = plt.get_fignums() or [v for v in namespace.values() if isinstance(v, Figure)]
    assert shown, "the notebook shows no figure"
    plt.close("all")
    assert sorted(p.name for p in notebook.parent.iterdir()) == before
    assert os.getcwd() == str(notebook.parent)
