"""One test command run at one commit, in a fresh worktree, and what it reported.

The command's test counts come from its JUnit report when it writes one (`{report}`
in the command, or a `--junitxml` path it names), else from the closing summary of
pytest, vitest, jest or bun test in its output.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchkit.gate.junit import CaseResult, ReportError, parse_report
from benchkit.gate.summary import RunnerSummary, read_summary
from benchkit.workspace import proc
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.commands import allowed_env, substitute
from benchkit.workspace.git import add_worktree, remove_worktree

REPORT_FLAG = re.compile(r"^--junit-?xml(?:=(.+))?$")


@dataclass(frozen=True, kw_only=True)
class CommandRun:
    """What one run of a test command at one commit reported."""

    sha: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    cases: tuple[CaseResult, ...] | None
    summary: RunnerSummary | None
    log_path: str

    @property
    def source(self) -> str:
        if self.cases is not None:
            return "junit"
        return "summary" if self.summary is not None else "none"

    def _count(self, outcomes: tuple[str, ...], from_summary: int | None) -> int | None:
        if self.cases is not None:
            return sum(c.outcome in outcomes for c in self.cases)
        return from_summary

    @property
    def passed(self) -> int | None:
        return self._count(("passed",), self.summary.passed if self.summary else None)

    @property
    def failed(self) -> int | None:
        return self._count(("failed", "error"), self.summary.failed_tests if self.summary else None)

    @property
    def skipped(self) -> int | None:
        return self._count(("skipped",), self.summary.skipped if self.summary else None)

    def outcomes(self) -> dict[str, str]:
        """Each test (`file::name`) and its outcome; empty without a JUnit report."""
        return {f"{c.file or '?'}::{c.name}": c.outcome for c in self.cases or ()}


def report_path(command: Sequence[str]) -> str | None:
    """The JUnit report a command names: `{report}`, or a `--junitxml` path."""
    for i, arg in enumerate(command):
        if "{report}" in arg:
            return "{report}"
        match = REPORT_FLAG.match(arg)
        if match:
            value = match.group(1) or (command[i + 1] if i + 1 < len(command) else None)
            return value
    return None


def command_env(worktree: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """What the command sees: the allow-list of the checks, benchkit's python first on
    PATH, and PYTHONPATH set to the worktree, so the code tested is the worktree's."""
    env = allowed_env()
    env["PYTHONPATH"] = str(worktree)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update({k: v.replace("{worktree}", str(worktree)) for k, v in extra.items()})
    return env


def run_at(
    mirror: Path,
    sha: str,
    command: Sequence[str],
    *,
    logs: Path,
    name: str,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 1800.0,
    prepare: Callable[[Path], None] | None = None,
) -> CommandRun:
    """Run a test command in a fresh worktree at `sha` (after `prepare`, if given)."""
    worktree = cache_dir() / "worktrees" / f"{name}-{uuid.uuid4().hex[:8]}"
    worktree.parent.mkdir(parents=True, exist_ok=True)
    add_worktree(mirror, sha, worktree)
    try:
        if prepare is not None:
            prepare(worktree)
        report = report_path(command)
        report_file = (
            worktree / ".benchkit-report.xml"
            if report == "{report}"
            else (worktree / report if report else None)
        )
        argv = substitute(
            list(command), {"report": str(report_file or ""), "worktree": str(worktree)}
        )
        log = logs / f"{name}.log"
        log.unlink(missing_ok=True)
        finished = proc.run(
            argv,
            cwd=worktree,
            env=command_env(worktree, env or {}),
            log_path=log,
            timeout_s=timeout_s,
        )
        cases = None
        if report_file is not None and report_file.exists():
            try:
                cases = tuple(parse_report(report_file.read_text(errors="replace")))
            except ReportError:
                cases = None
            kept = logs / f"{name}.xml"
            shutil.copyfile(report_file, kept)
        return CommandRun(
            sha=sha,
            exit_code=finished.exit_code,
            timed_out=finished.timed_out,
            duration_s=round(finished.duration_s, 3),
            cases=cases,
            summary=read_summary(log.read_text(errors="replace")),
            log_path=str(log),
        )
    finally:
        remove_worktree(mirror, worktree)
