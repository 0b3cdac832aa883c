"""The notebooks as a researcher sees them: executed, each plot cell shows an image."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"


def test_every_plot_cell_of_the_compare_notebook_shows_an_image(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOKS / "02_compare_arms.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    parameters = notebook.cells[1].source.replace("trials = 3", "trials = 2")
    notebook.cells[1].source = parameters.replace("store = None", f"store = {str(tmp_path)!r}")
    NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    plots = [c for c in notebook.cells if c.cell_type == "code" and "bk.plot(" in c.source]
    assert len(plots) == 4
    for cell in plots:
        shown = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(shown) == 1, (cell.source, [o.get("data", {}).keys() for o in cell.outputs])
