"""Validating a bench: its checks run K times at base and K times with the human
reference, in the bench's environment, and a lock file of what its tests really do.

A bench whose tests do not run at base (or with the human reference), or whose human
reference does not pass its own `must_pass`, is refused with the reason; a bench made
from a SWE-bench instance is not refused but recorded `invalid` in its lock, with the
reason (a task set holds such instances: their runs are no evidence either way). A
bench's test patch is part of both sides, as the checks after an arm see it.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from benchkit.bench.bench_file import Bench
from benchkit.bench.find import find_bench
from benchkit.bench.lock import Lock, Varied, bench_digest, lock_path, to_json
from benchkit.errors import BenchError, UsageError
from benchkit.gate.stability import Outcomes, outcomes
from benchkit.gate.verdict import TestRun, run_problem
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.checks import run_checks
from benchkit.workspace.environment import ensure, env_copy_of, instantiate, recipe, remove
from benchkit.workspace.git import add_worktree, remove_worktree
from benchkit.workspace.recipe import Environment, EnvironmentFailure
from benchkit.workspace.repository import Repository, prepare_repository, with_tests

SIDES = ("base", "human")


@dataclass(frozen=True, kw_only=True)
class Validation:
    """What `validate` found, and where it wrote the lock file."""

    bench: str
    lock: Lock
    path: Path

    def summary(self) -> str:
        lock = self.lock

        def listed(tests: tuple[str, ...] | list[str]) -> str:
            return "".join(f"\n  {t}" for t in tests) or " none"

        varied = [f"{v.test} ({v.side}: failed {v.failed} of {v.runs})" for v in lock.flaky]
        return (
            f"validated {self.bench}: {_runs(lock.reruns)} at base {lock.base_sha[:8]} and "
            f"{lock.reruns} with the human reference {lock.human_sha[:8]}\n"
            f"preexisting (fail at base every run):{listed(lock.preexisting)}\n"
            f"proposed must_pass (fail at base, pass with the human):{listed(lock.must_pass)}\n"
            f"added by the human (pass every run):{listed(lock.added_by_human)}\n"
            f"flaky (the outcome varied):{listed(varied)}\n"
            + (f"INVALID: {lock.invalid}\n" if lock.invalid else "")
            + f"lock file: {self.path}"
        )


def _runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"


def _side(
    bench: Bench, repo: Repository, sha: str, environment: Environment, runs: int, logs: Path
) -> list[TestRun]:
    worktree = (
        cache_dir() / "worktrees" / f"validate-{bench.name}-{logs.name}-{uuid.uuid4().hex[:8]}"
    )
    add_worktree(repo.mirror, sha, worktree)
    instance = None
    logs.mkdir(parents=True, exist_ok=True)
    try:
        log = logs / "environment.log"
        try:
            instance = instantiate(environment, where=env_copy_of(worktree), tree=worktree, log=log)
        except EnvironmentFailure as exc:
            raise BenchError(bench.path, "environment", str(exc)) from None
        found = []
        for n in range(1, runs + 1):  # every check, as a pilot runs them: an install first
            done = run_checks(bench, phase="base", instance=instance, logs=logs / str(n))
            test_run = next((r.tests for r in done if r.tests is not None), None)
            found.append(test_run or TestRun(cases=None, problem="the test check ran no report"))
        return found
    finally:
        remove(instance)
        remove_worktree(worktree)


def _unrun(side: str, runs: list[TestRun]) -> str | None:
    """Why the tests did not run on a side (its first run that did not), or None."""
    for n, run in enumerate(runs, start=1):
        problem = run_problem(run)
        if problem:
            where = "at base" if side == "base" else "with the human reference"
            return f"the tests do not run {where} (run {n}): {problem}"
    return None


def validate(bench: str | Path, *, reruns: int = 3, out: Path | str | None = None) -> Validation:
    """Run the bench's tests `reruns` times at base and with the human reference, and
    write its lock file (beside the bench, or `out`); raises `BenchError` to refuse."""
    if reruns < 1:
        raise UsageError("reruns", "", f"must be at least 1, not {reruns}")
    found_bench = find_bench(bench)
    tests = found_bench.file.tests
    if tests is None:
        raise BenchError(found_bench.path, "tests", "validation needs [tests]: the test check")
    path = _lock_target(Path(out) if out is not None else lock_path(found_bench), out)
    repo = prepare_repository(found_bench)
    made = recipe(found_bench, repo)
    logs = cache_dir() / "validate" / f"{found_bench.name}-{uuid.uuid4().hex[:8]}"
    try:
        environment = ensure(made, log=logs / "environment.log")
    except EnvironmentFailure as exc:
        raise BenchError(found_bench.path, "environment", str(exc)) from None
    # a test patch held out is part of both sides, as the checks after an arm see it
    shas = {"base": repo.checked_base, "human": with_tests(repo, repo.human_sha)}
    runs = {
        side: _side(found_bench, repo, shas[side], environment, reruns, logs / side)
        for side in SIDES
    }
    unrun = next(filter(None, (_unrun(side, runs[side]) for side in SIDES)), None)
    base, human = outcomes(runs["base"]), outcomes(runs["human"])
    invalid = unrun or _must_pass_failed(human, tests.must_pass)
    if invalid is not None and found_bench.file.swebench is None:
        raise BenchError(found_bench.path, "tests" if unrun else "tests.must_pass", invalid)
    lock = Lock(
        bench_digest=bench_digest(found_bench),
        base_sha=repo.base_sha,
        human_sha=repo.human_sha,
        env_key=made.key,
        env_packages_digest=environment.packages_digest,
        reruns=reruns,
        preexisting=tuple(base.failing_every_run()),
        must_pass=tuple(t for t in human.passing_every_run() if t in base.failing_every_run()),
        added_by_human=tuple(t for t in human.passing_every_run() if t not in base.by_test),
        flaky=tuple(
            Varied(test=test, side=side, failed=failed, runs=reruns)
            for side, found in (("base", base), ("human", human))
            for test, failed in found.varied().items()
        ),
        invalid=invalid,  # a SWE-bench instance whose gold fails: recorded, not refused
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(lock))
    return Validation(bench=found_bench.name, lock=lock, path=path)


def _lock_target(path: Path, out: Path | str | None) -> Path:
    """Where the lock file goes, checked before any check runs: not a folder, and in a
    folder that is one (or can be made) and that benchkit may write."""
    option = "--out" if out is not None else ""
    if path.is_dir():
        raise UsageError(path, option, "a folder, not a lock file")
    parent = next(p for p in path.absolute().parents if p.exists())
    if not parent.is_dir():
        raise UsageError(path, option, f"cannot write the lock file: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(path, option, f"cannot write the lock file in {parent}")
    return path


def _must_pass_failed(human: Outcomes, must_pass: list[str]) -> str | None:
    """Why the human reference does not pass the bench's `must_pass` every run, or
    None when it does."""
    for test in must_pass:
        seen = human.by_test.get(test, [])
        passed = seen.count("passed")
        if passed < human.runs:
            return (
                f"the human reference does not pass {test} "
                f"(passed {passed} of {human.runs} runs{'' if seen else ': no such test'})"
            )
    return None
