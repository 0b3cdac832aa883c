"""The faces: `import benchkit` (exactly its public names, loaded on first use, fast)
and the `benchkit` command (a user's mistake is one line and exit 2, never a traceback)."""

from __future__ import annotations

import importlib
import inspect
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner

import benchkit
from benchkit import errors
from benchkit.cli.options import Benchkit
from tests.conftest import ROOT, TinyRepo
from tests.helpers import PATIENCE_S, benchkit_cli, benchkit_modules

HEAVY = ("polars", "pandas", "pyarrow", "numpy", "matplotlib")


def test_all_holds_exactly_the_public_names() -> None:
    for name in benchkit_modules(ROOT):
        importlib.import_module(name)  # every submodule loaded: none may leak a name
    for name in benchkit.__all__:
        getattr(benchkit, name)
    own = {
        name
        for name, value in vars(benchkit).items()
        if isinstance(value, ModuleType)
        and value.__name__ == f"benchkit.{name}"
        and name not in NAMESPACES
    }
    public = {name for name in vars(benchkit) if not name.startswith("_")} - own
    assert public == set(benchkit.__all__) - {"__version__"}
    assert benchkit.__all__ == sorted(benchkit.__all__)
    assert dir(benchkit) == benchkit.__all__


NAMESPACES = {"swebench"}
"""The public names that are modules, on purpose: `bk.swebench.benches(...)`."""


def test_no_public_function_is_shadowed_by_a_module() -> None:
    for name in benchkit_modules(ROOT):
        importlib.import_module(name)
    for name in benchkit.__all__:
        value = getattr(benchkit, name)
        assert not isinstance(value, ModuleType) or name in NAMESPACES, name
    assert callable(benchkit.pilot) and callable(benchkit.list_arms)
    assert callable(benchkit.swebench.benches)  # a namespace: its functions are there


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        benchkit.nope  # type: ignore[attr-defined]  # noqa: B018


def test_filters_are_keyword_arguments() -> None:
    wanted = ["bench", "arm", "executor", "model", "origin", "run_set", "since", "until"]
    for function in (benchkit.runs, benchkit.table, benchkit.scan):
        parameters = inspect.signature(function).parameters
        assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values())
        assert [n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY] == wanted


def test_what_pilot_returns_goes_to_compare_and_evidence(tiny: TinyRepo, tmp_path: Path) -> None:
    runs = benchkit.pilot(str(tiny.bench_dir), arm=["human", "noop"], store=tiny.seeded(tmp_path))
    comparison = benchkit.compare(runs, metrics=["coverage", "pass"])
    assert comparison.frame["arm"].to_list() == ["human", "noop"]
    assert comparison.frame["coverage_mean"].to_list() == [1.0, 0.0]
    text = str(benchkit.evidence(runs, labels=["after", "before"]))
    assert (
        "| human (local) | - | - | ok | ok | - | pass; tampered: test_calc.py (edited) |"
    ) in text
    assert "| 2/2, 0 unrelated, no regressions |" in text
    assert str(benchkit.evidence([r.run_id for r in runs], store=tmp_path)) == str(
        benchkit.evidence(runs)
    )
    assert benchkit.flips(runs, "human", "noop").height == 0


def test_the_origin_filter(tiny: TinyRepo, tmp_path: Path) -> None:
    csv = tmp_path / "published.csv"
    csv.write_text("bench,arm,cost_usd\ntiny,tool-v1,0.25\n")
    benchkit.import_runs(csv, tmp_path / "store")
    benchkit.pilot(str(tiny.bench_dir), arm="noop", store=tiny.seeded(tmp_path / "store"))
    imported = benchkit.runs(tmp_path / "store", origin="imported")
    assert imported["arm"].to_list() == ["tool-v1"]
    assert benchkit.runs(tmp_path / "store", origin=["pilot"])["arm"].to_list() == ["noop"]
    assert benchkit.table("checks", tmp_path / "store", origin="imported").is_empty()


def _modules(*argv: str) -> set[str]:
    """The modules a fresh interpreter imports to run `argv`, by their whole names."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _loaded(*argv: str) -> set[str]:
    """The top-level modules a fresh interpreter imports to run `argv`."""
    names = {name.split(".")[0] for name in _modules(*argv)}
    assert "benchkit" in names or argv[-1] == "pass"
    return names


@pytest.mark.parametrize(
    "argv",
    [
        ("-c", "import benchkit"),
        ("-m", "benchkit", "--help"),
        ("-m", "benchkit", "pilot", "--help"),
        ("-m", "benchkit", "--version"),
    ],
)
def test_starting_loads_no_heavy_library(argv: tuple[str, ...]) -> None:
    assert _loaded(*argv) & set(HEAVY) == set()


def test_the_fast_start_check_sees_a_heavy_import() -> None:
    assert "polars" in _loaded("-c", "import benchkit; benchkit.runs")


def test_pilots_and_a_read_load_polars_alone(tiny: TinyRepo, tmp_path: Path) -> None:
    """Pilots (their rows written, the baseline read back from its cache) and
    `benchkit runs` of their store go by polars alone: pyarrow and numpy (a seventh
    of a CPU-second of every command), and pandas, which pyarrow's own conversions
    (`pa.array`, `pq.read_table`) import, are not loaded."""
    store = str(tmp_path / "store")
    pilots = ("pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--arm", "human")
    loaded = _loaded("-m", "benchkit", *pilots, "--store", store, "--sandbox", "none", "--quiet")
    unwanted = {"pyarrow", "numpy", "pandas", "matplotlib"}
    assert "polars" in loaded and loaded & unwanted == set()
    assert len(benchkit.runs(store)) == 2
    assert _loaded("-m", "benchkit", "runs", "--store", store) & unwanted == set()


def test_pilots_of_built_in_arms_load_no_arm_files_models(tiny: TinyRepo, tmp_path: Path) -> None:
    """An arm file's kind (its pydantic models, the agents' report readers) is loaded
    for an arm file alone: pilots of built-in arms start without it."""
    store = str(tmp_path / "store")
    pilots = ("pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--arm", "human")
    loaded = _modules("-m", "benchkit", *pilots, "--store", store, "--sandbox", "none", "--quiet")
    assert "benchkit.run.pilot" in loaded
    arm_file_kind = {"benchkit.bench.arm_file", "benchkit.arms.command", "benchkit.arms.reports"}
    assert loaded & arm_file_kind == set()
    assert len(benchkit.runs(store)) == 2


COMMAND_START = """
import gc, os, sys
set_at = []
set_threshold = gc.set_threshold
gc.set_threshold = lambda *t: (set_at.append("benchkit.cli" in sys.modules), set_threshold(*t))
import benchkit.__main__ as command
sys.argv = ["benchkit", "--version"]
try:
    command.main()
finally:
    plugins = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    print(set_at, gc.get_threshold()[2], "benchkit.cli" in sys.modules, plugins)
"""


def test_the_command_sets_the_collector_before_its_imports() -> None:
    """The `benchkit` command's entry makes the collector's full passes rare
    (`collects_rarely`) before it imports the click group and what it needs: the passes
    over what imports make took 20 to 40 ms of every command's start. It looks for no
    pydantic plugin either (`PYDANTIC_DISABLE_PLUGINS`)."""
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run(
        [sys.executable, "-c", COMMAND_START], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[False] 100 True __all__"


VAR = "PYDANTIC_DISABLE_PLUGINS"
CHILDREN = f"""
import os
from pathlib import Path
from benchkit.workspace.processes import as_command, callers_environ
as_command()
from benchkit.change.testrun import command_env
tests = command_env(Path("."), None, {{}})
print(os.environ["{VAR}"], "{VAR}" in callers_environ(), "{VAR}" in tests)
"""


def test_the_command_looks_for_no_pydantic_plugin_unless_the_user_says() -> None:
    """A command validates benchkit's own files only: pydantic's plugins, which it
    finds by reading every installed package's entry points, are not looked for; a
    user's own `PYDANTIC_DISABLE_PLUGINS` is kept as set, and a command run for the user
    (their tests, as `benchkit ab` runs them) sees it only then. Imported as a library,
    benchkit leaves it alone."""
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    said = subprocess.run(
        [sys.executable, "-c", COMMAND_START],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "PYDANTIC_DISABLE_PLUGINS": "logfire"},
    )
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines()[-1].endswith(" logfire")
    for given, seen in (
        (env, "__all__ False False"),
        ({**env, VAR: "logfire"}, "logfire True True"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", CHILDREN], capture_output=True, text=True, cwd=ROOT, env=given
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == seen  # the user's tests see it only as the user set it
    library = "import os, benchkit.cli; print(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))"
    done = subprocess.run(
        [sys.executable, "-c", library], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of one run, imported by `benchkit import` once for the module: each
    mistake below is made in a copy of its own."""
    folder = tmp_path_factory.mktemp("imported")
    (folder / "runs.csv").write_text("bench,arm,wall_s\nb1,a1,1.5\n")
    done = benchkit_cli("import", "runs.csv", cwd=folder, store=folder / "store")
    assert done.returncode == 0, done.stderr
    return folder / "store"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "--by", "nope"], "by: no column 'nope' in the runs to group by"),
        (["compare", "--by", "arm,nope"], "by: no column 'nope'"),
        (["compare", "--bench", "b9"], "compare: no runs to compare: the selection is empty"),
        (["evidence", "zzz"], "no run in the store has an id starting 'zzz'"),
        (["evidence"], "RUN_IDS: give at least one run id"),
        (["evidence", "--label", "before"], "--label: takes NAME=VALUE, not 'before'"),
        (["import", "missing.csv"], "missing.csv: no such file"),
        (["import", "runs.csv"], "runs.csv: speed: an unknown column"),
        (["pilot", "--bench", "nope"], "nope: no such bench (bundled: demo, demo-node)"),
        (["pilot", "--arm", "nope"], "nope: no such arm (built in: human, noop"),
        (["pilot", "--arm", "replay:"], "replay:: replay needs a patch"),
        (["pilot", "--var", "novalue"], "--var: takes NAME=VALUE, not 'novalue'"),
        (["pilot", "--checks", "nope"], "bench.toml: checks: no check named 'nope'"),
        (["runs", "--store", "a-file"], "a-file: --store: not a folder"),
        (["ab", "--base", "main", "--head", "main", "--", "true"], ": not a git repository"),
    ],
)
def test_a_users_mistake_is_one_line_and_exit_2(
    imported: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    store = tmp_path / "store"
    shutil.copytree(imported, store)
    (tmp_path / "runs.csv").write_text("bench,arm,speed\nb1,a1,fast\n")
    (tmp_path / "a-file").write_text("")
    done = benchkit_cli(*args, cwd=tmp_path, store=store)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("benchkit: ") and message in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_an_internal_error_keeps_its_traceback() -> None:
    @click.group(cls=Benchkit)
    def group() -> None:
        pass

    @group.command()
    def broken() -> None:
        raise RuntimeError("a bug of benchkit's own")

    @group.command()
    def mistaken() -> None:
        raise benchkit.UsageError("--x", "", "not a number")

    result = CliRunner().invoke(group, ["broken"])
    assert isinstance(result.exception, RuntimeError)
    result = CliRunner().invoke(group, ["mistaken"])
    assert result.exit_code == 2
    assert result.output == "benchkit: --x: not a number\n"


def test_every_user_error_is_a_benchkit_error() -> None:
    for name in ("ArmError", "BenchError", "ImportFileError", "RefError", "StoreError"):
        assert issubclass(getattr(benchkit, name), benchkit.BenchkitError)
    assert issubclass(benchkit.UsageError, ValueError)


def test_every_user_error_pickles_whole() -> None:
    """A worker process's error reaches its launcher pickled: each kind, by its parts."""
    kinds = [
        k
        for k in vars(errors).values()
        if isinstance(k, type) and issubclass(k, benchkit.BenchkitError)
    ]
    assert len(kinds) >= 7
    for kind in kinds:
        error = kind("/store", "runs.0.cost_usd", "is negative")
        back: benchkit.BenchkitError = pickle.loads(pickle.dumps(error))
        assert type(back) is kind
        assert (back.file, back.field, back.message) == ("/store", "runs.0.cost_usd", "is negative")
        assert str(back) == "/store: runs.0.cost_usd: is negative"


def test_a_command_that_failed_pickles_whole() -> None:
    """A pilot's fault can be a command of benchkit's own that failed (a `git` that had
    to succeed): it reaches the launcher from a worker process or a Ray task pickled,
    its output with it."""
    from benchkit.workspace.proc import ProcError

    error = ProcError(["git", "worktree", "add", "/x"], 128, "", "fatal: not a git repository")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is ProcError
    assert (back.argv, back.exit_code, back.stderr) == (error.argv, 128, error.stderr)
    assert str(back) == "git worktree add exited 128: fatal: not a git repository"
