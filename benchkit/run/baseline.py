"""The checks at base, run once per (base sha, checks) and cached in the store.

A bench with a test patch (`[tests] test_patch`) runs them on base with it applied:
the tests the arm never sees are part of what the run after it is compared with.

A baseline depends only on the repository's base commit and on the bench's checks,
test runner and check environment, so it is kept under a key made of those, in
`<store>/baselines/`; the next pilot on the same bench reads it instead of running
the checks again. A baseline in which a check timed out is not cached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchkit.bench.bench_file import Bench
from benchkit.gate.verdict import TestRun
from benchkit.records import CheckResult, TestRecord
from benchkit.store.rows import check_from_row, check_rows, test_from_row, test_rows
from benchkit.store.schema import table_schema
from benchkit.store.store import Store
from benchkit.workspace.cache import locked, locked_if_free
from benchkit.workspace.checks import Confinement, run_checks
from benchkit.workspace.environment import env_copy_of, instantiate, programs, remove
from benchkit.workspace.git import add_worktree, remove_worktree
from benchkit.workspace.recipe import Environment
from benchkit.workspace.repository import Repository
from benchkit.workspace.sandbox import Sandbox


@dataclass(frozen=True, kw_only=True)
class Baseline:
    key: str
    checks: tuple[CheckResult, ...]
    tests: tuple[TestRecord, ...]
    report_read: bool  # the base test report could be read
    cached: bool
    test_check: str | None = None  # the bench's check that runs the tests

    @property
    def unjudgeable(self) -> str | None:
        """Why the tests at base cannot be judged against (they did not run), or None."""
        found = next((c for c in self.checks if c.check == self.test_check), None)
        if found is None:
            return "the test check did not run at base" if self.test_check else None
        return found.problem

    def test_run(self) -> TestRun | None:
        """The base test run as the gate needs it: its cases."""
        if not self.report_read:
            return None
        return TestRun(cases=tuple(t.case for t in self.tests))


def baseline_key(bench: Bench, base_sha: str, environment: Environment) -> str:
    """What the checks at base depend on: the commit (base with the held-out tests,
    when the bench has a test patch: `Repository.checked_base`), the checks, the test runner, the
    bench's `[env]`, the environment they ran with (its key and its packages), and
    what each check's program resolves to on its PATH (a tool upgraded in place)."""
    f = bench.file
    # by the bench file's own serializer: each part's would be built for it (2 ms)
    read = f.model_dump(include={"checks", "tests"})
    recipe = {
        "base": base_sha,
        "checks": read["checks"],
        "tests": read["tests"],
        "env": f.env,
        "environment": [environment.recipe.key, environment.packages_digest],
        "programs": programs([c.command for c in f.checks], environment),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:20]


def load(store: Store, key: str, test_check: str | None) -> Baseline | None:
    """A cached baseline, or None when there is none (or it cannot be read)."""
    checks = store.baseline_rows("checks", key)
    tests = store.baseline_rows("tests", key)
    if checks is None or tests is None:
        return None
    records = tuple(test_from_row(r) for r in tests)
    results = tuple(check_from_row(r) for r in checks)
    return Baseline(
        key=key,
        checks=results,
        tests=records,
        report_read=bool(records),
        cached=True,
        test_check=test_check,
    )


def save(store: Store, baseline: Baseline) -> None:
    # tests first: the checks file is what makes a baseline visible
    tests = test_rows(baseline.key, baseline.tests)
    store.write_baseline("tests", baseline.key, tests, table_schema("tests"))
    checks = check_rows(baseline.key, baseline.checks)
    store.write_baseline("checks", baseline.key, checks, table_schema("checks"))


def establish(
    bench: Bench,
    repo: Repository,
    environment: Environment,
    *,
    store: Store,
    worktree: Path,
    refresh: bool = False,
    sandbox: Sandbox | None = None,
    wait: bool = True,
    ready: Callable[[], None] = lambda: None,
) -> Baseline | None:
    """The baseline from the cache (unless `refresh`), or by running the checks in a
    worktree at base, in an instance of the environment of its own: once per key, under
    a lock, however many pilots in parallel want it. Without `wait`, None at once where
    another pilot is running them (their lock is held): a pilot goes on with its arm
    and its checks, and reads the baseline when it needs it, rather than wait with
    nothing to do. `ready` is called before the checks run (not when they are read).
    Raises `EnvironmentFailure`."""
    key = baseline_key(bench, repo.checked_base, environment)
    test_check = bench.file.tests.check if bench.file.tests else None
    cached = None if refresh else load(store, key, test_check)
    if cached is not None:
        return cached
    with _held(store.baselines / key, wait) as held:
        if not held:
            return None
        cached = None if refresh else load(store, key, test_check)  # run meanwhile?
        if cached is not None:
            return cached
        ready()
        return _run_at_base(bench, repo, environment, store, key, worktree, sandbox)


@contextmanager
def _held(path: Path, wait: bool) -> Iterator[bool]:
    """The baseline's lock, waited for, or taken only if free: whether it is held."""
    if wait:
        with locked(path):
            yield True
    else:
        with locked_if_free(path) as free:
            yield free


def _run_at_base(
    bench: Bench,
    repo: Repository,
    environment: Environment,
    store: Store,
    key: str,
    worktree: Path,
    sandbox: Sandbox | None,
) -> Baseline:
    test_check = bench.file.tests.check if bench.file.tests else None
    logs = store.baseline_artifacts(key)
    logs.mkdir(parents=True, exist_ok=True)
    add_worktree(repo.mirror, repo.checked_base, worktree)
    instance = None
    try:
        instance = instantiate(
            environment,
            where=env_copy_of(worktree),
            tree=worktree,
            log=logs / "environment.log",
            bound=sandbox is not None and sandbox.binds,
        )
        if sandbox is not None:
            sandbox = sandbox.with_read_only(instance.binds, instance.writable)
            sandbox.make()
        confined = Confinement(sandbox=sandbox)
        runs = run_checks(bench, phase="base", instance=instance, logs=logs, confinement=confined)
    finally:
        remove(instance, read_only=sandbox is not None and sandbox.binds)
        remove_worktree(worktree)
    test_run = next((r.tests for r in runs if r.tests is not None), None)
    cases = test_run.cases if test_run is not None and test_run.cases is not None else ()
    baseline = Baseline(
        key=key,
        checks=tuple(r.result for r in runs),
        tests=tuple(TestRecord(phase="base", attempt=0, case=c) for c in cases),
        report_read=bool(cases),
        cached=False,
        test_check=test_check,
    )
    if all(c.status != "timeout" for c in baseline.checks):
        save(store, baseline)
    return baseline
