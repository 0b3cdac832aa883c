"""The notebooks as a researcher sees them: executed once, under nbval, where every
plot cell must show an image (the hook in `notebooks/conftest.py`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from tests.conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"
PNG = "".join(  # one pixel
    [
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8Dw",
        "HwAFBQIAX8jx0gAAAABJRU5ErkJggg==",
    ]
)


def test_the_compare_notebook_draws_four_plots() -> None:
    notebook = nbformat.read(NOTEBOOKS / "02_compare_arms.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    plots = [c for c in notebook.cells if c.cell_type == "code" and "bk.plot(" in c.source]
    assert len(plots) == 4


def test_a_plot_cell_that_shows_no_image_fails_under_nbval(tmp_path: Path) -> None:
    """One notebook, one kernel: a plot cell with its image passes, one without fails.
    The kernel keeps its IPython files (history, profile) in a folder of its own, not
    the user's `~/.ipython`."""
    image = "from IPython.display import Image\nImage(data=__import__('base64').b64decode(PNG))"
    plot = "bk.plot('x')"
    notebook = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    notebook.cells = [
        nbformat.v4.new_code_cell(  # type: ignore[no-untyped-call]
            "import os, types\n"
            "assert get_ipython().ipython_dir != os.path.expanduser('~/.ipython')\n"
            f"bk = types.SimpleNamespace(plot=lambda *a: None)\nPNG = {PNG!r}"
        ),
        nbformat.v4.new_code_cell(f"{plot}\n{image}"),  # type: ignore[no-untyped-call]
        nbformat.v4.new_code_cell(f"{plot}\nNone"),  # type: ignore[no-untyped-call]
    ]
    nbformat.write(notebook, tmp_path / "plots.ipynb")  # type: ignore[no-untyped-call]
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path / "conftest.py")
    # the copy of notebooks/conftest.py takes the suite's places from tests.conftest, in
    # a temp folder of this test's: pytest's own, numbered, would remove the oldest of
    # the suites' folders kept beside it (a gigabyte, seconds), and a worker's name
    # inherited would put the shared caches beside those (`shared_folder`)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "pytest", "-p", "nbval", "--nbval-lax", "-p", "no:cacheprovider"]
    places = ["--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "basetemp")]
    done = subprocess.run(
        [*argv, "-rA", *places, str(tmp_path / "plots.ipynb")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    said = done.stdout
    assert done.returncode == 1, said[-3000:]
    assert "PASSED plots.ipynb::Cell 1" in said and "FAILED plots.ipynb::Cell 2" in said, said
    assert "a plot cell shows 0 images" in said
