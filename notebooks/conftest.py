"""The notebooks under nbval (`make test`): the stores their runs make are removed after.

A notebook makes its own store in the temp folder (`benchkit-notebook-*`, where a
researcher running it finds it). nbval's cells take no fixtures, so the stores are
listed as this file loads, before any cell runs, and those made since are removed as
the session ends.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

NOTEBOOK_STORES = "benchkit-notebook-*"
FOLDER = Path(tempfile.gettempdir())
BEFORE = set(FOLDER.glob(NOTEBOOK_STORES))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for store in set(FOLDER.glob(NOTEBOOK_STORES)) - BEFORE:
        shutil.rmtree(store, ignore_errors=True)
