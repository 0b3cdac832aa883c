"""The notebooks under nbval (`make test`), run once: every cell that draws a plot
(`bk.plot(`) must show it as an image, and the stores their runs make are removed
after.

A notebook makes its own store in the temp folder (`benchkit-notebook-*`, where a
researcher running it finds it). nbval's cells take no fixtures, so the stores are
listed as this file loads, before any cell runs, and those made since are removed as
the session ends (under xdist, the controller's, once every worker is done).

A notebook's kernel starts with the suite's own places, as the tests have them (see
`tests/conftest.py`): a benchkit cache of its own whose built environments are the
run's shared ones (the demo's, built once for the tests and the notebooks alike), the
run's uv and npm caches, and an IPython folder of its own (its history, its profile);
never the user's (`~/.ipython` took every test kernel's history).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.conftest import SHARED_ENVIRONMENTS, a_cache, package_caches, shared_folder

NOTEBOOK_STORES = "benchkit-notebook-*"
FOLDER = Path(tempfile.gettempdir())
BEFORE = set(FOLDER.glob(NOTEBOOK_STORES))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker ends while others run notebooks: the controller, last, removes them
    for store in set(FOLDER.glob(NOTEBOOK_STORES)) - BEFORE:
        shutil.rmtree(store, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """The environment a notebook's kernel starts in, as nbval starts it (when the
    notebook's first cell is set up): this process's, with the suite's places (see
    above). The hook has no fixtures: the run's temp folders come from its factory."""
    if item.parent is None or getattr(item.parent, "kernel", None) is not None:
        return (yield)  # a later cell: the kernel runs already
    factory: pytest.TempPathFactory = item.config._tmp_path_factory  # type: ignore[attr-defined]
    environments = shared_folder(factory, SHARED_ENVIRONMENTS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(factory, environments)))
        for name, value in package_caches(factory).items():
            mp.setenv(name, value)
        mp.setenv("IPYTHONDIR", str(factory.mktemp("ipython")))
        return (yield)


PLOT = "bk.plot("


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A cell that draws a plot and shows no image fails, as a researcher would see
    it: an empty output where the figure should be."""
    result = yield
    cell = getattr(item, "cell", None)
    if cell is not None and PLOT in cell.source:
        outputs = getattr(item, "test_outputs", None) or []
        images = [o for o in outputs if "image/png" in o.get("data", {})]
        shown = [sorted(o.get("data", {})) for o in outputs]
        assert len(images) == 1, f"a plot cell shows {len(images)} images: {shown}"
    return result
