"""Revert probes: do the new tests catch the change? `benchkit probe`.

In a worktree at head, the given source files (by default every non-test file
changed between base and head) are restored to their base content; everything else,
the new tests above all, stays as at head. Then the tests run. A test that passed at
head and now fails on an assertion **discriminates** the change; one that still
passes **does not**; one that now errors, or is no longer collected (an import or
collection error), **proves nothing**. `each` reverts one file at a time.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit.analysis.markdown import markdown_table
from benchkit.change.testrun import CommandRun, bench_environment, report_path, run_at
from benchkit.errors import UsageError
from benchkit.gate.junit import CaseResult
from benchkit.store.schema import SCHEMA_VERSION
from benchkit.store.store import Store
from benchkit.workspace.git import git
from benchkit.workspace.repository import mirror_repository, resolve_ref

TEST_GLOBS = ("tests/*", "test/*", "*/tests/*", "test_*.py", "*_test.py", "*.test.*", "*.spec.*")
DISCRIMINATES = "discriminates"
DOES_NOT = "does not discriminate"
PROVES_NOTHING = "error: proves nothing"
FAILS_AT_HEAD = "fails at head: proves nothing"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    test: str
    at_head: str
    reverted: str
    verdict: str
    message: str | None


@dataclass(frozen=True, kw_only=True)
class ProbeSet:
    reverted: tuple[str, ...]
    verdicts: tuple[Verdict, ...]


@dataclass(frozen=True, kw_only=True)
class ProbeResult:
    probe_id: str
    base_sha: str
    head_sha: str
    command: tuple[str, ...]
    sets: tuple[ProbeSet, ...]
    python: str | None = None  # version and path of the Python that ran the tests
    unjudged: str | None = None  # why the tests at head cannot be judged, when they cannot

    def to_markdown(self) -> str:
        rows = [
            [", ".join(s.reverted), v.test, v.at_head, v.reverted, v.verdict]
            for s in self.sets
            for v in s.verdicts
        ]
        head = (
            f"Probe of {self.head_sha[:12]} against {self.base_sha[:12]}: "
            f"`{shlex.join(self.command)}` (python: {self.python or 'none found'})\n\n"
        )
        if self.unjudged:
            head += f"The tests at head cannot be judged {self.unjudged}: nothing is proven.\n\n"
        return head + markdown_table(["reverted", "test", "at head", "reverted", "verdict"], rows)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def is_test_file(path: str, globs: Sequence[str] = TEST_GLOBS) -> bool:
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def judge(test: str, head: CaseResult | None, reverted: CaseResult | None) -> Verdict:
    """What one test's outcomes at head and with the source reverted prove. Pure."""
    at_head = head.outcome if head else "absent"
    now = reverted.outcome if reverted else "absent"
    message = reverted.message if reverted else None
    if at_head != "passed":
        verdict = FAILS_AT_HEAD
    elif now == "failed":
        verdict = DISCRIMINATES
    elif now == "passed":
        verdict = DOES_NOT
    elif now == "skipped":
        verdict = "skipped when reverted: proves nothing"
    else:  # an error, or not collected at all
        verdict = PROVES_NOTHING
        message = message or "not collected with the files reverted"
    return Verdict(test=test, at_head=at_head, reverted=now, verdict=verdict, message=message)


def _file_error(run: CommandRun, test: str) -> CaseResult | None:
    """For a test that is gone from a run: the error of its file, if the file failed to
    be collected (an import error, say)."""
    file = test.split("::")[0]
    return next((c for c in run.cases or () if c.file == file and c.outcome == "error"), None)


def _by_test(run: CommandRun) -> dict[str, CaseResult]:
    return {c.label: c for c in run.cases or ()}


def _restore(
    base_sha: str, files: Sequence[str], present_at_base: set[str]
) -> Callable[[Path], None]:
    def prepare(worktree: Path) -> None:
        for path in files:
            if path in present_at_base:
                git("checkout", base_sha, "--", path, cwd=worktree)
            else:
                (worktree / path).unlink(missing_ok=True)  # new at head: absent at base

    return prepare


def probe(
    base: str,
    head: str,
    command: Sequence[str] | None = None,
    *,
    revert: Sequence[str] | None = None,
    each: bool = False,
    test_globs: Sequence[str] = TEST_GLOBS,
    repo: Path | str = ".",
    store: Store | Path | str | None = None,
    bench: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ProbeResult:
    """In a worktree at head, restore source files (default: every changed non-test
    file) to base, keep the tests, and judge them; recorded in the `probes` table."""
    repo, store = Path(repo), Store.at(store).checked()
    mirror = mirror_repository(repo)
    base_sha = resolve_ref(mirror, repo, base, "--base")
    head_sha = resolve_ref(mirror, repo, head, "--head")
    changed = git("diff", "--name-only", "--no-renames", base_sha, head_sha, cwd=mirror).split()
    tests = [f for f in changed if is_test_file(f, test_globs)]
    sources = list(revert) if revert else [f for f in changed if f not in tests]
    if not sources:
        raise UsageError(repo, "--revert", "no source file changed between base and head")
    unknown = [f for f in sources if f not in changed]
    if unknown:
        raise UsageError(repo, "--revert", f"not changed between base and head: {unknown[0]}")
    if command is None:
        command = [
            "python",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml={report}",
            *tests,
        ]
    if report_path(command) is None:
        raise UsageError(repo, "command", "the probe needs a JUnit report: put {report} in it")
    at_base = set(git("ls-tree", "-r", "--name-only", base_sha, cwd=mirror).split())
    probe_id = f"probe-{datetime.now(UTC):%Y%m%dT%H%M%S}-{head_sha[:8]}"
    logs = store.make().artifacts(probe_id)  # the inputs all checked first
    environment, bench_env = bench_environment(bench, mirror, head_sha, head_sha)  # at head
    env = {**bench_env, **(env or {})}  # the bench's [env], then the caller's
    at_head = run_at(
        mirror, head_sha, command, logs=logs, name="head", env=env, environment=environment
    )
    head_cases = _by_test(at_head)
    watched = [t for t in head_cases if t.split("::")[0] in tests] or list(head_cases)
    groups = [[f] for f in sources] if each else [sources]
    sets = []
    for n, group in enumerate(groups, start=1):
        run = run_at(
            mirror,
            head_sha,
            command,
            logs=logs,
            name=f"reverted-{n}",
            env=env,
            environment=environment,
            prepare=_restore(base_sha, group, at_base),
        )
        now = _by_test(run)
        sets.append(
            ProbeSet(
                reverted=tuple(group),
                verdicts=tuple(
                    judge(t, head_cases.get(t), now.get(t) or _file_error(run, t)) for t in watched
                ),
            )
        )
    result = ProbeResult(
        probe_id=probe_id,
        base_sha=base_sha,
        head_sha=head_sha,
        command=tuple(command),
        sets=tuple(sets),
        python=at_head.python,
        unjudged=at_head.unjudged(empty=True),
    )
    write_probe(store, result)
    store.compact_when_due()
    return result


def write_probe(store: Store, result: ProbeResult) -> None:
    """The probe's rows in the store's `probes` table."""
    store.write_rows("probes", result.probe_id, probe_rows(result))


def probe_rows(result: ProbeResult) -> list[dict[str, Any]]:
    return [
        {
            "probe_id": result.probe_id,
            "schema_version": SCHEMA_VERSION,
            "base_sha": result.base_sha,
            "head_sha": result.head_sha,
            "reverted": list(s.reverted),
            "test": v.test,
            "at_head": v.at_head,
            "reverted_outcome": v.reverted,
            "verdict": v.verdict,
            "message": v.message,
        }
        for s in result.sets
        for v in s.verdicts
    ]
