"""SWE-bench task instances as benches: one folder each, a `bench.toml` beside the
gold patch and the test patch.

An instance's bench: its repository from the mirror or URL given for it (one per
repository: its instances share one mirror), base `base_commit`, the human
reference `patch` (the gold patch), the tests the arm never sees `test_patch`
(`[tests] test_patch`: run at base with it, reset to it after the arm),
`must_pass` and `keep_passing` its `FAIL_TO_PASS` and `PASS_TO_PASS`, the test
command SWE-bench's for pytest (`pytest -rA` on the files the test patch touches)
with a JUnit report, the instruction its `problem_statement` (and `hints_text`,
when asked), and the environment the environments file gives its (repository,
version).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomli_w
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from benchkit.bench.bench_file import Environment
from benchkit.bench.swebench import (
    EnvironmentKey,
    Instance,
    Prediction,
    read_environments,
    read_instances,
    read_predictions,
)
from benchkit.errors import BenchError, UsageError
from benchkit.store.atomic import replace_whole
from benchkit.workspace.proc import ProcError
from benchkit.workspace.repository import missing_commits

# SWE-bench's own: files of a test patch that are data, not tests to run
NOT_TESTS = (
    ".json",
    ".png",
    "csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)
PYTEST_ID = re.compile(r"^[^:\s]+\.py::\S.*$")
TEST_TIMEOUT_S = 1800.0
REPORT = ".benchkit/junit.xml"


def repos_given(given: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    """`OWNER/NAME=MIRROR_OR_URL` values (or a mapping) as a mapping; a bad one is a
    `UsageError` naming `--repo`."""
    if isinstance(given, Mapping):
        return dict(given)
    found: dict[str, str] = {}
    for value in given:
        name, sep, where = value.partition("=")
        if not sep or "/" not in name or not where:
            raise UsageError("--repo", value, "give OWNER/NAME=MIRROR_OR_URL")
        found[name] = where
    return found


def benches(
    instances: str | Path,
    *,
    repos: Sequence[str] | Mapping[str, str],
    environments: str | Path,
    out: str | Path = "swebench-benches",
    hints: bool = False,
) -> list[Path]:
    """Write a bench folder for each instance of the file `instances` into `out`,
    and return their paths, in the file's order. `repos` maps each repository
    (`OWNER/NAME`) to its local mirror or clone URL; `environments` is the file of
    what each (repository, version) runs with. Every instance is checked before one
    folder is written: a bad one is one `BenchkitError` naming the file, the instance
    and the field."""
    source = Path(instances)
    found = read_instances(source)
    where = {name: _where(value) for name, value in repos_given(repos).items()}
    runs_with = read_environments(Path(environments))
    planned = [_bench(source, i, where, runs_with, hints) for i in found]
    _commits_there(source, found, where)
    folder = Path(out)
    written = []
    for instance, toml in zip(found, planned, strict=True):
        bench = folder / instance.instance_id
        bench.mkdir(parents=True, exist_ok=True)
        replace_whole(bench / "gold.patch", instance.patch)
        replace_whole(bench / "test.patch", instance.test_patch)
        replace_whole(bench / "bench.toml", toml)
        written.append(bench)
    return written


def _where(value: str) -> str:
    """A mirror given by its path, made absolute (the bench may be read elsewhere); a
    path that names nothing is a `UsageError` (a URL is taken as it is)."""
    local = Path(value).expanduser()
    if local.exists():
        return str(local.resolve())
    if "://" not in value and not re.match(r"^[\w.-]+@[\w.-]+:", value):  # not scp-like
        raise UsageError("--repo", value, "no such folder (give a local mirror or a clone URL)")
    return value


def _commits_there(source: Path, instances: Sequence[Instance], where: Mapping[str, str]) -> None:
    """Each instance's base commit, in its repository's local mirror (a URL's are
    checked when the benches are planned); one missing is a `BenchError`."""
    for repo, place in where.items():
        own = [i for i in instances if i.repo == repo]
        if not own or not Path(place).exists():
            continue
        try:
            missing = missing_commits(Path(place), [i.base_commit for i in own])
        except ProcError as exc:
            raise UsageError("--repo", place, f"not a git repository: {exc}") from None
        if missing:
            first = next(i for i in own if i.base_commit == missing[0])
            raise BenchError(
                source, f"{first.instance_id}: base_commit", f"no such commit in {place}"
            )


def _bench(
    source: Path,
    instance: Instance,
    where: Mapping[str, str],
    runs_with: Mapping[EnvironmentKey, Environment],
    hints: bool,
) -> str:
    """The bench file of an instance; or a `BenchError`."""
    name = instance.instance_id

    def bad(field: str, message: str) -> BenchError:
        return BenchError(source, f"{name}: {field}", message)

    if instance.repo not in where:
        raise bad(
            "repo", f"no mirror given for {instance.repo} (--repo {instance.repo}=PATH_OR_URL)"
        )
    if not instance.version:
        raise bad("version", "none given: the version is the key of its environment")
    environment = runs_with.get((instance.repo, instance.version))
    if environment is None:
        raise bad(
            "version",
            f"the environments file has no entry for {instance.repo} version {instance.version!r}",
        )
    for field, tests in (
        ("FAIL_TO_PASS", instance.FAIL_TO_PASS),
        ("PASS_TO_PASS", instance.PASS_TO_PASS),
    ):
        odd = next((t for t in tests if not PYTEST_ID.match(t)), None)
        if odd is not None:
            raise bad(
                field,
                f"{odd!r} is not a pytest id (FILE.py::NAME): benchkit grades pytest instances",
            )
    if not instance.FAIL_TO_PASS:
        raise bad("FAIL_TO_PASS", "names no test: nothing tells a fix")
    files = test_files(instance.test_patch)
    if not files:
        raise bad("test_patch", "touches no test file to run")
    instruction = instance.problem_statement
    if hints and (instance.hints_text or "").strip():
        instruction += f"\n\nHints:\n{instance.hints_text}"
    command = ["python", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--junitxml", "{report}"]
    table: dict[str, Any] = {
        "name": name,
        "description": f"SWE-bench instance {name}: {instance.repo} {instance.version}".strip(),
        "instruction": instruction,
        "repo": {"git": where[instance.repo], "base": instance.base_commit},
        "human": {"patch": "gold.patch"},
        "environment": environment.model_dump(exclude_defaults=True),
        "checks": [
            {
                "name": "test",
                "command": [*command, *files],
                "timeout": TEST_TIMEOUT_S,
                "count": "junit",
            }
        ],
        "tests": {
            "check": "test",
            "report": REPORT,
            "runner": "pytest",
            "must_pass": list(instance.FAIL_TO_PASS),
            "keep_passing": list(instance.PASS_TO_PASS),
            "test_patch": "test.patch",
        },
        "swebench": {"instance_id": name, "repo": instance.repo, "version": instance.version},
    }
    return tomli_w.dumps(table, multiline_strings=True)


def test_files(test_patch: str) -> list[str]:
    """The files of a test patch that SWE-bench runs: those it leaves in the tree,
    but data (`.json`, `.txt`, ...)."""
    try:
        patch = PatchSet(test_patch)
    except UnidiffParseError:
        return []
    kept = (f.path for f in patch if not f.is_removed_file)
    return [p for p in kept if not p.endswith(NOT_TESTS)]


def predictions(path: str | Path) -> list[Prediction]:
    """The predictions of a file (JSON Lines, a JSON list, or a JSON object keyed by
    instance id): what `--arm prediction:FILE` replays."""
    return read_predictions(Path(path))
