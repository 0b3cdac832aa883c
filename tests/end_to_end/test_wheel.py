"""An installable wheel: built from the checkout, installed into a fresh virtualenv
outside it, and run from another folder, as a user who did `pip install benchkit`. uv
(one of benchkit's dependencies) builds and installs it, with the checkout's setuptools:
the development virtualenv has no pip of its own.

The fresh virtualenv takes benchkit from the wheel alone; the libraries benchkit needs
(polars, pyarrow, ...) are borrowed from the test's own environment through a path
file, so the test needs no network. What it proves is that the wheel carries the
package, its bundled benches and its arm files, and runs without the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests.conftest import ROOT, a_cache, sh_git
from tests.helpers import DEMO_BASE_SHA, DEMO_HUMAN_SHA, PATIENCE_S

pytestmark = pytest.mark.slow

LEFT_OUT = (".git", ".venv", "build", "dist", "data", "*.egg-info", "__pycache__", ".*_cache")


def _run(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=PATIENCE_S, cwd=cwd, env=env
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of a copy of the checkout (a build never writes into the checkout)."""
    source = tmp_path_factory.mktemp("source") / "benchkit"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*LEFT_OUT))
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [
            *(find_uv_bin(), "build", "--quiet", "--wheel", "--no-build-isolation"),
            *("--python", sys.executable, "--out-dir", str(out), str(source)),
        ]
    )
    [built] = out.glob("benchkit-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv with the wheel installed: its `benchkit` command."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    install = [find_uv_bin(), "pip", "install", "--quiet", "--no-deps", "--python", str(python)]
    _run([*install, str(wheel)])
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    Path(site.stdout.strip(), "borrowed.pth").write_text(sysconfig.get_path("purelib") + "\n")
    yield venv / "bin" / "benchkit"


def test_the_wheel_carries_the_bundled_benches_and_arm_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    bundled = sh_git(ROOT, "ls-files", "benchkit/bundled").splitlines()
    assert "benchkit/bundled/arms/fake-agent/fake_agent.py" in bundled
    assert set(bundled) <= names
    assert "benchkit/bundled/benches/demo/base/.gitignore" in names
    assert "benchkit/py.typed" in names
    templates = sh_git(ROOT, "ls-files", "benchkit/analysis/templates").splitlines()
    assert "benchkit/analysis/templates/run.html" in templates
    assert set(templates) <= names  # the report's pages and style
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]


def test_the_installed_wheel_runs_the_demo_from_another_folder(
    installed: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    shared_environments: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    left_out = ("BENCHKIT_STORE", "VIRTUAL_ENV", "PYTHONPATH")  # the checkout's traces
    env = {k: v for k, v in os.environ.items() if k not in left_out}
    # a cache of its own, its built environments the run's: the demo's is one key, made
    # from the wheel's copy of the bench as from the checkout's
    cache = a_cache(tmp_path_factory, shared_environments)
    env |= {"HOME": str(tmp_path / "home"), "BENCHKIT_CACHE": str(cache)}
    benches = _run([str(installed), "benches"], cwd=elsewhere, env=env).stdout
    assert benches.startswith("demo ") and str(installed.parent.parent) in benches
    assert "fake-agent" in _run([str(installed), "arms"], cwd=elsewhere, env=env).stdout
    argv = [str(installed), "pilot", "--bench", "demo", "--arm", "human", "--arm", "fake-agent"]
    done = _run([*argv, "--max-cost", "0.5", "--store", "store"], cwd=elsewhere, env=env)
    assert "human #1: ok" in done.stdout and "covered 15/15" in done.stdout
    assert "fake-agent #1: ok" in done.stdout and "cost $0.05" in done.stdout
    shas = _run(
        [
            str(installed.parent / "python"),
            "-c",
            "import benchkit; r = benchkit.runs('store'); "
            "print(*r['base_sha'].unique(), *r['human_sha'].unique(), "
            "*r['benchkit_version'].unique())",
        ],
        cwd=elsewhere,
        env=env,
    ).stdout.split()
    assert shas == [DEMO_BASE_SHA, DEMO_HUMAN_SHA, "0.1.0"]
    assert not (ROOT / "data" / "runs" / "store").exists()
