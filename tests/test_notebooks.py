"""Every notebook in notebooks/ runs in a Jupyter kernel from top to bottom, shows its
figures as images (what Jupyter displays, not a Figure's text) and leaves no file behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

# the development environment has them (requirements-dev); a bare GPU image may not
nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebook_runs_shows_an_image_and_leaves_nothing_behind(notebook):
    folder = notebook.parent
    before = sorted(p.name for p in folder.iterdir())
    temporary = set(Path(tempfile.gettempdir()).iterdir())
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [output for cell in nb.cells if cell.cell_type == "code"
               for output in cell.get("outputs", [])]
    assert any("image/png" in output.get("data", {}) for output in outputs), (
        "the notebook shows no image")
    assert sorted(p.name for p in folder.iterdir()) == before
    left = {p for p in set(Path(tempfile.gettempdir()).iterdir()) - temporary
            if p.name.startswith(("meshorder", "gpusolver"))}
    assert not left, left
