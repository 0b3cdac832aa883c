"""Shared fixtures: real git repositories and benches in temporary folders."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from benchkit.workspace.git import git_env

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "benchkit" / "bundled" / "benches" / "demo"


def sh_git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=git_env(), check=True, capture_output=True, text=True
    ).stdout.strip()


SHARED_ENVIRONMENTS = "shared-environments"
"""The run's folder of built bench environments (see `shared_environments`)."""


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of the whole run, whatever the worker (under xdist, the workers' common
    base): for what is safe to share, a cache built under its own locks."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / name
    folder.mkdir(exist_ok=True)
    return folder


def package_caches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One uv cache and one npm cache for the run, both workers' alike (each client
    locks its own cache): a package is downloaded and unpacked once, whatever the test
    or notebook."""
    return {
        "UV_CACHE_DIR": str(shared_folder(tmp_path_factory, "uv-cache")),
        "npm_config_cache": str(shared_folder(tmp_path_factory, "npm-cache")),
    }


def unwrapped_pythons(folder: Path) -> Path | None:
    """`folder`, holding `python` and `python3` as links to the interpreters those names
    on PATH run, where PATH names a wrapper: a pyenv shim is a bash script that starts
    some thirty processes to pick the interpreter, 55 ms of CPU a start, and the fake
    agents and the caller's environment start `python` a hundred times a run. None where
    neither name is a wrapper (nothing to change)."""
    linked = False
    for name in ("python", "python3"):
        found = shutil.which(name)
        if found is None:
            continue
        asked = [found, "-c", "import sys; print(sys.executable)"]
        real = subprocess.run(asked, capture_output=True, text=True, check=False).stdout.strip()
        if real and Path(real).is_file() and Path(real).resolve() != Path(found).resolve():
            (folder / name).symlink_to(real)
            linked = True
    return folder if linked else None


@pytest.fixture(scope="session", autouse=True)
def _packages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run's package caches (`package_caches`) for every test, and `python` on PATH
    the interpreter itself (`unwrapped_pythons`)."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in package_caches(tmp_path_factory).items():
            mp.setenv(name, value)
        pythons = unwrapped_pythons(tmp_path_factory.mktemp("pythons"))
        if pythons is not None:
            mp.setenv("PATH", f"{pythons}{os.pathsep}{os.environ['PATH']}")
        yield


@pytest.fixture(scope="session")
def maintainer_venv(tmp_path_factory: pytest.TempPathFactory, _packages: None) -> Path:
    """A maintainer's own virtualenv, as `benchkit ab` finds it active: a pinned pytest
    and a package benchkit lacks (freezegun), built with uv from the registry."""
    from benchkit.workspace.venv import uv

    venv = tmp_path_factory.mktemp("maintainer") / "venv"
    uv("venv", "--quiet", "--python", "3.11", str(venv))
    python = str(venv / "bin" / "python")
    uv("pip", "install", "--quiet", "--python", python, "pytest==8.3.5", "freezegun==1.5.1")
    return venv


def activate(monkeypatch: pytest.MonkeyPatch, venv: Path) -> None:
    """The virtualenv active, as `source venv/bin/activate` leaves a shell."""
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture(scope="session")
def shared_environments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of built bench environments for the whole run, whatever the worker:
    an environment is built once per key, under the cache's lock, as pilots in
    parallel share it (the `tiny` repository's is one key, whichever test makes it)."""
    return shared_folder(tmp_path_factory, SHARED_ENVIRONMENTS)


@pytest.fixture(autouse=True)
def _isolated(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    shared_environments: Path,
) -> None:
    """Every test gets its own cache and store, never the user's; the cache's built
    environments are the run's shared ones, but for a test marked
    `fresh_environments` (one that builds, lists, prunes or drops them)."""
    fresh = request.node.get_closest_marker("fresh_environments") is not None
    cache = a_cache(tmp_path_factory, None if fresh else shared_environments)
    monkeypatch.setenv("BENCHKIT_CACHE", str(cache))
    monkeypatch.setenv("BENCHKIT_STORE", str(tmp_path_factory.mktemp("store")))


def a_cache(tmp_path_factory: pytest.TempPathFactory, environments: Path | None) -> Path:
    """A new benchkit cache, its built environments those of `environments` (None:
    its own, and its own memo of the Pythons found). Else the memo of `uv python find`'s
    answers is the run's: a tenth of a CPU-second a test saved, its pyenv shims run
    again each time otherwise (the memo's own test uses a cache of its own)."""
    cache = tmp_path_factory.mktemp("cache")
    if environments is not None:
        (cache / "envs").symlink_to(environments, target_is_directory=True)
        pythons = shared_folder(tmp_path_factory, "shared-pythons")
        (cache / "pythons").symlink_to(pythons, target_is_directory=True)
    return cache


def with_checks_at_base(store: Path, source: Path) -> Path:
    """`store`, holding the checks at base that the store `source` holds, as a store does
    after its first pilot: a pilot of the same bench there reads them where a new store
    would run them again. A store that holds checks at base already is left as it is.
    A test of the checks at base themselves (when they run, what they find) takes a
    store of its own."""
    if not (store / "baselines").exists():
        for part in ("baselines", "artifacts/baselines"):
            shutil.copytree(source / part, store / part, dirs_exist_ok=True)
    return store


@dataclass(frozen=True)
class TinyRepo:
    """A real git repository with a base commit and a human commit on branch `human`."""

    path: Path
    base: str
    human: str
    bench_dir: Path
    at_base: Path | None = None
    """A store holding the bench's checks at base (`tiny_at_base`), for `seeded`."""

    @property
    def bench_file(self) -> Path:
        return self.bench_dir / "bench.toml"

    def seeded(self, store: Path) -> Path:
        """`store`, holding the bench's checks at base (`with_checks_at_base`): a pilot
        there reads them (a fifth of a CPU-second saved). Every tiny repository is the
        same commits, so its checks at base have one key, whatever the test."""
        return store if self.at_base is None else with_checks_at_base(store, self.at_base)


BASE_FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "util.py": "NAME = 'calc'\nVERSION = 1\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    ".gitignore": "ignored/\n*.log\n",
}

HUMAN_FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
    "def mul(a, b):\n    return a * b\n",
    "util.py": "NAME = 'calc'\nVERSION = 2\n",
    "test_calc.py": "from calc import add, mul\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    "\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}

TINY_BENCH = """\
name = "tiny"
instruction = "Add mul() to calc and bump VERSION."

[repo]
git = "{repo}"
base = "main"

[human]
ref = "human"

[[checks]]
name = "lint"
command = "python -c 'import calc, util'"
timeout = 30

[[checks]]
name = "test"
command = "python -m pytest -q -p no:cacheprovider --junitxml {{report}}"
timeout = 60
count = "junit"

[tests]
report = "junit.xml"
alone = "python -m pytest -q -p no:cacheprovider --junitxml {{report}} {{files}}"

[sites]
exclude = ["test_*.py"]

[environment]
kind = "venv"
python = "3.11"
packages = ["pytest==8.3.5"]
"""


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def make_repo(
    repo: Path, base: dict[str, str], change: dict[str, str], branch: str
) -> tuple[str, str]:
    """A real repository: `base` committed on main, `change` on top of it on `branch`."""
    repo.mkdir()
    sh_git(repo, "init", "--quiet", "--initial-branch", "main")
    shas = []
    for files, message in ((base, "base"), (change, branch)):
        if message == branch:
            sh_git(repo, "checkout", "--quiet", "-b", branch)
        write_files(repo, files)
        sh_git(repo, "add", "-A")
        sh_git(repo, "commit", "--quiet", "-m", message)
        shas.append(sh_git(repo, "rev-parse", "HEAD"))
    sh_git(repo, "checkout", "--quiet", "main")
    return shas[0], shas[1]


def tiny_repo(folder: Path) -> TinyRepo:
    """The tiny repository and its bench, made in `folder`."""
    repo = folder / "repo"
    base, human = make_repo(repo, BASE_FILES, HUMAN_FILES, "human")
    bench_dir = folder / "bench"
    (bench_dir / "patches").mkdir(parents=True)
    (bench_dir / "bench.toml").write_text(TINY_BENCH.format(repo=repo))
    return TinyRepo(path=repo, base=base, human=human, bench_dir=bench_dir)


@pytest.fixture(scope="session")
def tiny_at_base(tmp_path_factory: pytest.TempPathFactory, shared_environments: Path) -> Path:
    """A store where one pilot ran on the tiny bench, in the run's shared environments:
    the bench's checks at base, run once a worker, for `TinyRepo.seeded`."""
    import benchkit

    folder = tmp_path_factory.mktemp("tiny-at-base")
    store = folder / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        bench = str(tiny_repo(folder).bench_dir)
        benchkit.pilot(bench, arm="noop", store=store, sandbox="none", progress=False)
    return store


@pytest.fixture
def tiny(tmp_path: Path, tiny_at_base: Path) -> TinyRepo:
    return replace(tiny_repo(tmp_path), at_base=tiny_at_base)


FIRST = ("ray", "node")
"""Marks of the files that take longest of all (a minute or more on one worker)."""
HEAVY = ("browser", "slow")
"""Marks of the other files whose tests take seconds each: run after those, before the
quick ones, so that both workers end together (`make test` keeps this order:
`--no-loadscope-reorder`, where xdist would order files by their count of tests)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test skipped where bubblewrap, Chromium or node is missing is marked as such
    (`sandbox`, `browser`, `node`), so that `-m` selects it; the notebooks are `slow`;
    the files of the heaviest tests go first, the quick ones last (`make test` hands a
    file's tests to one worker: a notebook's cells share one kernel, a module fixture
    is made once)."""
    from tests.helpers import NEEDS

    for item in items:
        for mark in item.iter_markers("skipif"):
            kind = NEEDS.get(str(mark.kwargs.get("reason")))
            if kind:
                item.add_marker(kind)
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)

    def rank(item: pytest.Item) -> int:
        for n, marks in enumerate((FIRST, HEAVY)):
            if any(item.get_closest_marker(m) for m in marks):
                return n
        return 2

    items.sort(key=rank)
