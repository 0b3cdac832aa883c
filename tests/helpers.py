"""What many tests share: the `benchkit` command run as a user runs it, and the marks
of tests that need something this machine may not have (bubblewrap, root, Chromium,
node)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from benchkit.workspace.sandbox import bwrap_problem

NO_BWRAP = bwrap_problem()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_NODE = shutil.which("npm") is None or shutil.which("node") is None


def benchkit_cli(
    *args: str,
    store: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    module: str = "benchkit",
) -> subprocess.CompletedProcess[str]:
    """`python -m benchkit ARGS` (or `-m benchkit.cli`), its output captured: with the
    store in `BENCHKIT_STORE` when given, in `cwd`, with `env` (else this process's).
    No timeout of its own: pytest-timeout names a test that hangs."""
    environment = dict(os.environ if env is None else env)
    if store is not None:
        environment["BENCHKIT_STORE"] = str(store)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        check=False,
    )


BWRAP_REASON = f"no sandbox here: {NO_BWRAP}"
CHROMIUM_REASON = "no Chromium here (.ci/run installs Debian's chromium as root)"
NODE_REASON = "node and npm are not on this machine's PATH"
needs_bwrap = pytest.mark.skipif(NO_BWRAP is not None, reason=BWRAP_REASON)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=CHROMIUM_REASON)
needs_node = pytest.mark.skipif(NO_NODE, reason=NODE_REASON)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a mount, a capability)")
NEEDS = {BWRAP_REASON: "sandbox", CHROMIUM_REASON: "browser", NODE_REASON: "node"}
"""The mark each of these skips gives its tests (see `conftest.pytest_collection_modifyitems`),
so that `-m "not sandbox"` and the like select them."""
