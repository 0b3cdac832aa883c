"""Benches in their own environments: built with uv from the registry, cached by what
makes them, copied per pilot, and never benchkit's own."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from uv import find_uv_bin

import benchkit
from benchkit.bench.find import find_bench
from benchkit.records import PilotSpec
from benchkit.run.launch import run_pilots
from benchkit.workspace.environment import EnvironmentWarning
from benchkit.workspace.inventory import cached
from benchkit.workspace.recipe import META, envs_dir
from benchkit.workspace.venv import uv
from tests.conftest import make_repo, sh_git, write_files
from tests.helpers import PATIENCE_S, benchkit_in_process, environment_log, needs_bwrap, reused

pytestmark = [
    pytest.mark.fresh_environments,  # each builds, lists, prunes or drops its own
    pytest.mark.slow,  # real pilots, seconds a test: the file starts early
]

OWN = Path(sys.prefix)  # benchkit's own virtualenv, in which these tests run

SOURCE = {"src/m.py": "def f():\n    return 1\n"}
HUMAN = {"src/m.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n"}
TESTS = {
    "tests/test_env.py": f"""\
import importlib.util
import os
import sys

import freezegun  # not in benchkit's own environment
import pytest

from m import f


def test_the_pinned_pytest_and_package():
    assert pytest.__version__ == "8.3.5"
    assert freezegun.__version__ == "1.5.1"


def test_nothing_of_benchkit(pytestconfig):
    assert not any(p.startswith({str(OWN)!r}) for p in sys.path)
    assert not os.environ["PATH"].startswith({str(OWN)!r})
    assert sys.prefix != {str(OWN)!r}
    for name in ("benchkit", "nbval", "polars", "click"):
        assert importlib.util.find_spec(name) is None, name
    assert not pytestconfig.pluginmanager.has_plugin("nbval")


def test_f():
    assert f() == 1
"""
}

BENCH = """\
name = "envcase"
instruction = "add g"

[repo]
git = "{repo}"
base = "{base}"

[human]
ref = "{human}"

[environment]
{environment}

[[checks]]
name = "test"
command = "python -m pytest -q -p no:cacheprovider --junitxml {{report}}"
count = "junit"

[tests]
report = ".bench/junit.xml"
alone = "python -m pytest -q -p no:cacheprovider --junitxml {{report}} {{files}}"

[sites]
exclude = ["tests/*"]
"""

VENV = """\
kind = "venv"
python = "3.11"
packages = ["pytest==8.3.5", "freezegun==1.5.1"]
"""


def env_bench(tmp_path: Path, environment: str, name: str = "bench") -> Path:
    repo = tmp_path / f"{name}-repo"
    base, human = make_repo(repo, {**SOURCE, **TESTS}, HUMAN, "human")
    folder = tmp_path / name
    folder.mkdir()
    text = BENCH.format(repo=repo, base=base, human=human, environment=environment)
    (folder / "bench.toml").write_text(text)
    return folder


def _own_path_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's PATH with benchkit's own virtualenv first, as when it is activated."""
    monkeypatch.setenv("PATH", f"{OWN / 'bin'}{os.pathsep}{os.environ['PATH']}")


def test_a_bench_runs_in_its_own_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _own_path_first(monkeypatch)
    bench = env_bench(tmp_path, VENV)
    first, again = benchkit.pilot(str(bench), arm=["human", "noop"], store=tmp_path / "store")
    for run in (first, again):
        assert (run.status, run.gate and run.gate.verdict) == ("ok", "pass"), run.failure_detail
        assert [c.status for c in run.checks if c.phase == "after"] == ["ok"]
    rows = benchkit.runs(tmp_path / "store").to_dicts()
    assert rows[0]["env_key"] == rows[1]["env_key"] and rows[0]["env_key"].startswith("venv-")
    assert "pytest==8.3.5" in rows[0]["env_packages"]
    assert "freezegun==1.5.1" in rows[0]["env_packages"]
    assert rows[0]["env_packages_digest"] == rows[1]["env_packages_digest"]
    assert rows[0]["env_python"].startswith("3.11.")
    assert str(OWN) not in rows[0]["env_python"]
    # the second pilot reused what the first built: its log says so, and no install
    key = rows[1]["env_key"]
    assert environment_log(rows[1]["artifacts"]) == f"{reused(key)}{envs_dir() / key}\n"


def test_without_the_environment_the_import_error_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The caller's own virtualenv has pytest but not freezegun; a `none` bench uses it.
    user = tmp_path / "user-venv"
    uv("venv", "--quiet", "--python", "3.11", str(user))
    uv("pip", "install", "--quiet", "--python", str(user / "bin" / "python"), "pytest==8.3.5")
    monkeypatch.setenv("PATH", f"{user / 'bin'}{os.pathsep}{os.environ['PATH']}")
    bench = env_bench(tmp_path, 'kind = "none"')
    done = subprocess.run(
        [sys.executable, "-m", "benchkit", "pilot", "--bench", str(bench), "--arm", "human"],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCHKIT_STORE": str(tmp_path / "store")},
        timeout=PATIENCE_S,
    )
    assert "test=FAIL" in done.stdout
    message = "test: 1 could not run: tests/test_env.py: ModuleNotFoundError: No module named"
    assert f"{message} 'freezegun'" in done.stderr
    [row] = benchkit.runs(tmp_path / "store").to_dicts()
    assert row["env_key"] == "none"
    assert row["env_python"].endswith(str(user / "bin" / "python"))
    # what the caller's python had: its pytest, no freezegun, nothing of benchkit's
    assert "pytest==8.3.5" in row["env_packages"]
    assert not [p for p in row["env_packages"] if p.startswith(("freezegun", "benchkit"))]


def _deps_bench(folder: Path, repo: Path, base: str, human: str, environment: str) -> Path:
    """A venv bench at `base` whose one check runs pytest."""
    folder.mkdir()
    (folder / "bench.toml").write_text(
        f'name = "deps"\ninstruction = "x"\n[repo]\ngit = "{repo}"\nbase = "{base}"\n'
        f'[human]\nref = "{human}"\n[environment]\nkind = "venv"\n{environment}\n'
        '[[checks]]\nname = "test"\ncommand = "python -m pytest -q -p no:cacheprovider"\n'
    )
    return folder


def test_a_changed_dependency_file_gives_a_new_environment_and_baseline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = {"requirements.txt": "iniconfig==2.0.0\n", "test_it.py": "def test_it():\n    pass\n"}
    base, changed = make_repo(repo, files, {"requirements.txt": "iniconfig==2.1.0\n"}, "next")
    sh_git(repo, "checkout", "--quiet", "next")
    write_files(repo, {"m.py": "X = 1\n"})
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "--quiet", "-m", "human")
    human = sh_git(repo, "rev-parse", "HEAD")
    keys = []
    for n, sha in enumerate((base, changed, base)):
        environment = 'requirements = ["requirements.txt"]\npackages = ["pytest==8.3.5"]'
        folder = _deps_bench(tmp_path / f"b{n}", repo, sha, human, environment)
        [run] = benchkit.pilot(str(folder), arm="noop", store=tmp_path / "store", new_set=True)
        assert run.environment is not None and run.environment.packages is not None
        keys.append((run.environment.key, run.baseline_key, run.baseline_cached))
        wanted = "iniconfig==2.1.0" if sha == changed else "iniconfig==2.0.0"
        assert wanted in run.environment.packages
    assert keys[0][:2] != keys[1][:2]  # new environment, new baseline
    assert keys[2] == (keys[0][0], keys[0][1], True)  # the first again: both reused
    assert len(cached()) == 2


def test_a_failing_environment_is_the_benchs_failure_and_others_go_on(tmp_path: Path) -> None:
    broken = env_bench(tmp_path, 'kind = "venv"\npackages = ["benchkit-no-such-package==9.9.9"]')
    good = env_bench(tmp_path, VENV, name="good")
    specs = [PilotSpec(bench=str(broken), arm="human"), PilotSpec(bench=str(good), arm="human")]
    bad_run, good_run = run_pilots(specs, store=tmp_path / "store")
    assert (bad_run.status, bad_run.failure_kind) == ("failed", "environment")
    assert "could not be built" in (bad_run.failure_detail or "")
    log = Path(bad_run.artifacts, "logs", "environment.log").read_text()
    assert "benchkit-no-such-package" in log
    assert bad_run.checks == () and bad_run.sites_covered == 0
    assert good_run.status == "ok" and good_run.gate is not None
    assert good_run.gate.verdict == "pass"


def _with_tamper_check(bench: Path, text: str) -> None:
    """The bench's file `text`, with a check that appends to its environment's pytest."""
    (bench / "bench.toml").write_text(
        text
        + '\n[[checks]]\nname = "tamper"\ncommand = ["python", "-c", '
        + json.dumps(
            "import pytest, pathlib; "
            "pathlib.Path(pytest.__file__).open('a').write('\\nTAMPERED = 1\\n')"
        )
        + "]\n"
    )


def test_a_pilot_never_changes_the_cached_environment(tmp_path: Path) -> None:
    # Outside the sandbox: a check may write into its pilot's copy, never the cache.
    planted = "import pathlib, sysconfig; p = pathlib.Path(sysconfig.get_path('purelib'))"
    bench = env_bench(tmp_path, VENV)
    text = (bench / "bench.toml").read_text()
    (bench / "bench.toml").write_text(
        text
        + '\n[[checks]]\nname = "plant"\ncommand = ["python", "-c", '
        + json.dumps(f"{planted}; (p / 'planted.py').write_text('x = 1')")
        + "]\n"
    )
    [run] = benchkit.pilot(
        str(bench), arm="noop", store=tmp_path / "store", new_set=True, sandbox="none"
    )
    assert {c.check: c.status for c in run.checks if c.phase == "after"}["plant"] == "ok"
    [env] = cached()
    assert not list(env.path.rglob("planted.py"))  # the pilot wrote into its own copy
    # A check that writes into a file in place: refused by the file's mode, or (as
    # root, who ignores modes) found afterwards, and the cached environment dropped.
    _with_tamper_check(bench, text)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        [run] = benchkit.pilot(
            str(bench), arm="noop", store=tmp_path / "store", new_set=True, sandbox="none"
        )
    tampered = run.after("tamper")
    assert tampered is not None
    if os.geteuid() != 0:
        assert tampered.status == "fail"  # PermissionError: the file is read-only
        assert [e.key for e in cached()] == [env.key]
    else:
        assert [w for w in seen if issubclass(w.category, EnvironmentWarning)]
        assert cached() == []  # dropped: the next pilot builds it again
    [run] = benchkit.pilot(
        str(bench),
        arm="noop",
        checks=["test"],
        store=tmp_path / "store",
        sandbox="none",
        new_set=True,
    )
    assert run.gate is not None and run.gate.verdict == "pass"
    [again] = cached()
    init = next(again.path.rglob("site-packages/pytest/__init__.py")).read_text()
    assert "TAMPERED" not in init


REWRITE = """\
import os, pathlib, _pytest._version as v
p = pathlib.Path(v.__file__)
st = p.stat()
os.chmod(p, 0o644)
data = p.read_bytes().replace(b"8.3.5", b"6.6.6")  # the same size
with open(p, "r+b") as f:  # in place: the cache's own file, through the copy's link
    f.write(data)
os.chmod(p, st.st_mode)
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # its times as they were
"""


def test_a_file_rewritten_in_place_with_its_size_and_times_kept_is_found(tmp_path: Path) -> None:
    """Without the sandbox, a check rewrites pytest's version file through its copy's
    hard link, keeping its size, and restores its mode and times: the cached
    environment is found changed by its contents, and dropped (seen: not found, and a
    later pilot ran with pytest 6.6.6)."""
    bench = env_bench(tmp_path, VENV)
    text = (bench / "bench.toml").read_text()
    (bench / "bench.toml").write_text(
        text
        + '\n[[checks]]\nname = "rewrite"\ncommand = ["python", "-c", '
        + json.dumps(REWRITE)
        + "]\n"
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        [run] = benchkit.pilot(
            str(bench), arm="noop", store=tmp_path / "store", new_set=True, sandbox="none"
        )
    rewrite = run.after("rewrite")
    assert rewrite is not None and rewrite.status == "ok"
    said = [str(w.message) for w in seen if issubclass(w.category, EnvironmentWarning)]
    assert said and "was written in place; it was dropped" in said[0]
    assert cached() == []  # dropped: the next pilot builds it again


@needs_bwrap
def test_in_the_sandbox_a_check_cannot_write_its_environment(tmp_path: Path) -> None:
    bench = env_bench(tmp_path, VENV)
    text = (bench / "bench.toml").read_text()
    _with_tamper_check(bench, text)
    [run] = benchkit.pilot(
        str(bench), arm="noop", store=tmp_path / "store", new_set=True, sandbox="bwrap"
    )
    tampered = run.after("tamper")
    assert tampered is not None and tampered.status == "fail"  # a read-only file system
    assert "Read-only file system" in Path(tampered.log_path).read_text()
    [env] = cached()  # as built: kept
    init = next(env.path.rglob("site-packages/pytest/__init__.py")).read_text()
    assert "TAMPERED" not in init


@needs_bwrap
def test_in_the_sandbox_the_cached_environment_is_bound_not_copied(tmp_path: Path) -> None:
    """In bubblewrap a pilot's checks see the cached environment itself, bound
    read-only where the pilot's instance goes (a copy would be new folders of
    hard-linked files): nothing is copied, and the checks still run in it."""
    bench = env_bench(tmp_path, VENV)
    text = (bench / "bench.toml").read_text()
    folder = "import os; s = os.stat(os.environ['VIRTUAL_ENV']); print('env', s.st_dev, s.st_ino)"
    (bench / "bench.toml").write_text(
        text + f'\n[[checks]]\nname = "where"\ncommand = ["python", "-c", {json.dumps(folder)}]\n'
    )
    [run] = benchkit.pilot(str(bench), arm="noop", store=tmp_path / "store", sandbox="bwrap")
    assert run.gate is not None and run.gate.verdict == "pass"  # pytest and freezegun found
    where = run.after("where")
    assert where is not None and where.status == "ok"
    [env] = cached()
    seen = os.stat(env.path)
    assert f"env {seen.st_dev} {seen.st_ino}" in Path(where.log_path).read_text()


def test_a_prune_keeps_an_environment_a_pilot_binds(tmp_path: Path) -> None:
    from benchkit.bench.find import find_bench
    from benchkit.workspace.environment import ensure, instantiate, recipe, remove
    from benchkit.workspace.inventory import prune
    from benchkit.workspace.repository import prepare_repository

    bench = find_bench(env_bench(tmp_path, VENV))
    environment = ensure(recipe(bench, prepare_repository(bench)), log=tmp_path / "env.log")
    tree = tmp_path / "tree"
    tree.mkdir()
    where = tmp_path / "tree-env"
    instance = instantiate(environment, where=where, tree=tree, log=tmp_path / "i.log", bound=True)
    assert instance.binds == ((environment.path, where),)
    assert where.is_dir() and not list(where.iterdir())  # where it is bound: nothing copied
    assert prune() == []  # a pilot binds it: kept
    remove(instance, read_only=True)
    assert not where.exists()
    assert prune() == [environment.path.name if environment.path else ""]


def test_pilots_copy_and_check_one_environment_together_and_a_drop_waits(tmp_path: Path) -> None:
    """Without the sandbox a pilot copies the cached environment (its worktree's copy
    and its clean tree's) and checks it as it ends: reads of the cache, each under the
    environment's lock taken shared, so that another pilot's copy or check (here: its
    shared lock, held) never holds them up. Taken exclusive, they queued behind each
    other (seen: this test's pilot waited for the other's lock). A drop, which removes
    the environment, still waits for them."""
    from benchkit.workspace.environment import (
        ensure,
        instantiate,
        recipe,
        remove,
        removed_unless_bound,
    )
    from benchkit.workspace.repository import prepare_repository

    bench = find_bench(env_bench(tmp_path, VENV))
    wanted = recipe(bench, prepare_repository(bench))
    environment = ensure(wanted, log=tmp_path / "env.log")
    assert environment.path is not None
    tree = tmp_path / "tree"
    tree.mkdir()

    def pilot() -> bool:  # its environment found, copied, and checked as it is removed
        found = ensure(wanted, log=tmp_path / "again.log")
        copy = instantiate(found, where=tmp_path / "tree-env", tree=tree, log=tmp_path / "i.log")
        remove(copy)
        return found.reused

    with ThreadPoolExecutor(2) as threads:
        with open(environment.path.with_suffix(".lock"), "a") as other:  # another pilot's
            fcntl.flock(other, fcntl.LOCK_SH)
            beside = threads.submit(pilot)  # a reuse, a copy, a check: a second alone
            assert beside.result(timeout=PATIENCE_S)  # else it waits for the other
            assert not (tmp_path / "tree-env").exists()
            dropping = threads.submit(removed_unless_bound, environment.path)
            time.sleep(0.5)
            assert not dropping.done()  # waits for the other pilot's copy
            assert environment.path.is_dir()
        assert dropping.result(timeout=PATIENCE_S)  # once it let go
    assert not environment.path.exists()


def test_a_drop_leaves_the_build_made_since_its_check(tmp_path: Path) -> None:
    """Two pilots' checks may both find the environment written in place: the first
    drops it, a pilot builds it again, and the second's drop must leave that build (a
    drop removes the build whose record its check read; another, only if it is not as
    built: an arm that rewrites `META` through its copy's link dodges nothing)."""
    from benchkit.workspace.environment import removed_unless_bound
    from benchkit.workspace.recipe import contents, manifest

    folder = tmp_path / "envs" / "venv-key"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "m.py").write_text("x = 1\n")

    def built(at: str) -> str:
        meta = {"built_at": at, "manifest": manifest(folder), "contents": contents(folder)}
        (folder / META).write_text(json.dumps(meta))
        return (folder / META).read_text()

    seen = built("then")
    built("now")  # dropped and built again since
    assert removed_unless_bound(folder, seen=seen)
    assert folder.is_dir()  # the new build, as built: kept
    seen = (folder / META).read_text()
    (folder / "lib" / "m.py").write_text("x = 2\n")  # written in place
    (folder / META).write_text(seen.replace('"now"', '"later"'))  # and its record too
    assert removed_unless_bound(folder, seen=seen)
    assert not folder.exists()


def test_env_list_and_prune(tmp_path: Path) -> None:
    benchkit.pilot(str(env_bench(tmp_path, VENV)), arm="noop", store=tmp_path / "store")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return benchkit_in_process("env", *args)

    listed = cli("list")
    assert listed.returncode == 0
    [line] = listed.stdout.splitlines()
    assert line.startswith("venv-") and "python 3.11." in line and "used " in line
    assert cli("prune").returncode == 2  # one of --all or --unused-days
    assert cli("prune", "--unused-days", "1").stdout.startswith("removed 0 environments")
    assert cli("prune", "--all").stdout.startswith("removed 1 environments")
    assert cli("list").stdout == "" and not list(envs_dir().glob("venv-*/"))


def test_env_list_shows_and_prune_removes_an_environment_whose_record_is_broken() -> None:
    """A cached environment whose `benchkit-env.json` lacks its recipe (a benchkit
    killed mid-write, a hand edit): listed as unreadable, not a traceback, and pruned."""
    broken = envs_dir() / "venv-0123456789abcdef"
    broken.mkdir(parents=True)
    (broken / META).write_text(json.dumps({"packages": ["a==1"]}))
    listed = benchkit_in_process("env", "list")
    assert listed.returncode == 0, listed.stderr
    [line] = listed.stdout.splitlines()
    assert line.startswith("venv-0123456789abcdef") and "unreadable" in line
    pruned = benchkit_in_process("env", "prune", "--all")
    assert pruned.stdout.startswith("removed 1 environments"), pruned.stderr
    assert not broken.exists()


def test_a_bench_without_an_environment_section_is_none(tmp_path: Path) -> None:
    bench = env_bench(tmp_path, "")
    path = bench / "bench.toml"
    path.write_text(path.read_text().replace("[environment]\n", ""))
    assert find_bench(bench).file.environment.kind == "none"
    assert find_bench("demo").file.environment.kind == "venv"


PACKAGE = {
    "pyproject.toml": '[build-system]\nrequires = ["flit_core>=3.9,<4"]\n'
    'build-backend = "flit_core.buildapi"\n\n[project]\nname = "mpkg"\nversion = "0.1.0"\n'
    'description = "m"\ndependencies = ["iniconfig==2.0.0"]\n\n'
    '[project.optional-dependencies]\ntest = ["pytest==8.3.5"]\n',
    "src/mpkg/__init__.py": "def f():\n    return 1\n",
    "tests/test_mpkg.py": "import importlib.metadata\nimport os\n\n"
    "import iniconfig\nimport mpkg\n\n\ndef test_the_worktree_is_installed():\n"
    "    assert importlib.metadata.version('mpkg') == '0.1.0'\n"
    "    assert mpkg.__file__.startswith(os.getcwd())  # the worktree's code, editable\n"
    "    assert mpkg.f() == 1\n",
}


def editable_bench(tmp_path: Path, files: dict[str, str] = PACKAGE) -> Path:
    """A bench of the `mpkg` package (its human adds `G`), installed editable with its
    `test` extra (`files`: the package's, flit's by default)."""
    repo = tmp_path / "repo"
    base, human = make_repo(
        repo, files, {"src/mpkg/__init__.py": "def f():\n    return 1\n\n\nG = 2\n"}, "human"
    )
    folder = tmp_path / "bench"
    folder.mkdir()
    environment = 'kind = "venv"\nextras = ["test"]\nproject = "editable"'
    (folder / "bench.toml").write_text(
        BENCH.format(repo=repo, base=base, human=human, environment=environment)
    )
    return folder


def test_an_editable_project_with_its_extras(tmp_path: Path) -> None:
    folder = editable_bench(tmp_path)
    runs = benchkit.pilot(str(folder), arm=["human", "noop"], store=tmp_path / "store")
    for run in runs:
        assert run.gate is not None and run.gate.verdict == "pass", run.failure_detail
        assert run.environment is not None and run.environment.packages is not None
        assert {"iniconfig==2.0.0", "pytest==8.3.5"} <= set(run.environment.packages)
        # the project itself is installed in each pilot's copy, not in the cached one
        assert not any(p.startswith("mpkg") for p in run.environment.packages)


def test_a_file_a_requirements_file_includes_is_part_of_the_key(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = {
        "requirements-dev.txt": "-r reqs/base.txt\npytest==8.3.5\n",
        "reqs/base.txt": "-c pins.txt\niniconfig\n",
        "reqs/pins.txt": "iniconfig==2.0.0\n",
        "test_it.py": "def test_it():\n    pass\n",
    }
    base, changed = make_repo(repo, files, {"reqs/pins.txt": "iniconfig==2.1.0\n"}, "next")
    found = []
    for n, sha in enumerate((base, changed)):
        environment = 'requirements = ["requirements-dev.txt"]'
        folder = _deps_bench(tmp_path / f"b{n}", repo, sha, base if n else changed, environment)
        [run] = benchkit.pilot(str(folder), arm="noop", store=tmp_path / "store", new_set=True)
        assert run.status == "ok", run.failure_detail
        assert run.environment is not None and run.environment.packages is not None
        found.append((run.environment.key, run.baseline_key, set(run.environment.packages)))
    assert found[0][0] != found[1][0] and found[0][1] != found[1][1]
    assert "iniconfig==2.0.0" in found[0][2] and "iniconfig==2.1.0" in found[1][2]


def test_the_found_python_is_remembered_until_a_path_folder_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`uv python find` looks at every Python on PATH (a tenth of a second a command):
    its answer is remembered by PATH and its folders' times, and a remembered program
    that no longer runs is found again."""
    from benchkit.workspace import venv as environment

    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BENCHKIT_CACHE", str(tmp_path / "cache"))
    environment._system_python.cache_clear()
    memo = environment._python_memo("3.11")
    version, path = environment._system_python("3.11")
    assert version.startswith("3.11.") and Path(path).is_file()
    assert memo.read_text() and environment._python_memo("3.11") == memo
    stat = os.stat(folder)
    os.utime(folder, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a Python added
    assert environment._python_memo("3.11") != memo
    gone = environment._python_memo("3.11")
    gone.parent.mkdir(parents=True, exist_ok=True)
    for stale in (f"{tmp_path / 'no-such-python'}\n{version}\n", f"{path}\n3.11.0-other\n"):
        gone.write_text(stale)  # a program gone, or one that is another Python now
        environment._system_python.cache_clear()
        assert environment._system_python("3.11") == (version, path)
        assert gone.read_text().split("\n")[1] == version
    environment._system_python.cache_clear()


def test_a_remembered_python_is_not_run_again_until_its_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command ran the remembered Python to ask its version (0.03 CPU-s a
    pilot command): not while the program is the interpreter itself and its file
    the one that was run (device, inode, size, time). A program replaced is run again,
    and one that is not a Python any more is found again by uv."""
    from benchkit.workspace import venv as environment

    monkeypatch.setenv("BENCHKIT_CACHE", str(tmp_path / "cache"))
    environment._system_python.cache_clear()
    version, path = environment._system_python("3.11")
    memo = environment._python_memo("3.11")
    assert memo.read_text().split("\n")[:3] == [path, version, path]  # then its stamp
    ran = tmp_path / "ran"
    program = tmp_path / "python-or-not"
    program.write_text(f"#!/bin/sh\ntouch {ran}\n")
    program.chmod(0o755)
    stamp = environment._stamp(str(program))
    memo.write_text(f"{program}\n3.11.99\n{program}\n{stamp}\n")
    environment._system_python.cache_clear()
    assert environment._system_python("3.11") == ("3.11.99", str(program))
    assert not ran.exists()  # the memo's word, the program not run
    stat = program.stat()
    os.utime(program, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # replaced
    environment._system_python.cache_clear()
    assert environment._system_python("3.11") == (version, path)  # found again
    assert ran.exists()
    environment._system_python.cache_clear()


def test_a_tools_version_is_asked_once_while_its_file_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command's recipe names uv's version, which asking takes a process: the
    answer is remembered in the cache by the program's file, and asked again once the
    program is replaced. uv's own answer is the one `uv --version` gives."""
    from benchkit.workspace import venv as environment

    monkeypatch.setenv("BENCHKIT_CACHE", str(tmp_path / "cache"))
    asked = tmp_path / "asked"
    program = tmp_path / "tool"
    program.write_text(f"#!/bin/sh\necho x >> {asked}\necho 'tool 1.0'\n")
    program.chmod(0o755)
    said = [environment.version_of(str(program)) for _ in range(3)]
    assert said == ["tool 1.0"] * 3 and asked.read_text() == "x\n"
    program.write_text(program.read_text().replace("1.0", "2.0") + "# a longer file\n")
    assert environment.version_of(str(program)) == "tool 2.0"
    assert asked.read_text() == "x\nx\n"
    uv = find_uv_bin()
    done = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True)
    assert environment.version_of(uv) == done.stdout.strip()


def test_a_bench_installed_editable_validates(tmp_path: Path) -> None:
    """Validation makes an editable install on each side, as a pilot does: its log
    has a folder to go in."""
    found = benchkit.validate(str(editable_bench(tmp_path)), reruns=1)
    assert found.lock.invalid is None and found.lock.reruns == 1


def test_what_a_setuptools_editable_install_writes_is_not_the_arms_change(tmp_path: Path) -> None:
    """setuptools writes `src/mpkg.egg-info/` into the tree it installs, before the arm
    runs: files of the environment's making, in no arm's diff (a repository without a
    .gitignore for them, as many are)."""
    setuptools = {
        **PACKAGE,
        "pyproject.toml": PACKAGE["pyproject.toml"].replace(
            'requires = ["flit_core>=3.9,<4"]\nbuild-backend = "flit_core.buildapi"',
            'requires = ["setuptools>=69"]\nbuild-backend = "setuptools.build_meta"',
        ),
    }
    folder = editable_bench(tmp_path, setuptools)
    runs = {
        r.spec.arm: r
        for r in benchkit.pilot(str(folder), arm=["human", "noop"], store=tmp_path / "s")
    }
    assert runs["noop"].gate is not None and runs["noop"].gate.verdict == "pass", runs[
        "noop"
    ].failure_detail
    assert (runs["noop"].diff_lines, runs["noop"].sites_unrelated) == (0, 0)
    assert (runs["human"].sites_covered, runs["human"].sites_unrelated) == (1, 0)
