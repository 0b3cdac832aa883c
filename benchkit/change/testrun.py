"""One test command run at one commit, in a fresh worktree, and what it reported.

The command runs with the caller's environment as it is (the active virtualenv, the
caller's PATH), the worktree's code first on `PYTHONPATH`; or, when asked, in an
instance of a bench's environment. The Python its `python` names is recorded.
Its test counts come from its JUnit report when it writes one (`{report}` in the
command, or a `--junitxml` path it names), else from the closing summary of pytest,
vitest, jest or bun test in its output. Tests that could not run (an import error)
are counted apart from those that failed, and their messages kept.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchkit.bench.find import find_bench
from benchkit.errors import BenchError
from benchkit.gate.junit import CaseResult
from benchkit.gate.runners import runner_of
from benchkit.gate.summary import RunnerSummary
from benchkit.workspace import proc
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.checks import read_report
from benchkit.workspace.commands import allowed_env, substitute
from benchkit.workspace.environment import (
    Instance,
    ensure,
    env_copy_of,
    instantiate,
    recipe,
    remove,
)
from benchkit.workspace.git import add_worktree, remove_worktree
from benchkit.workspace.proc import ProcError
from benchkit.workspace.processes import callers_environ
from benchkit.workspace.recipe import EnvironmentFailure, Recipe
from benchkit.workspace.repository import Repository
from benchkit.workspace.venv import importable_root, interpreter

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
    problem: str | None = None  # why its report gave no cases, when it named one
    python: str | None = None  # version and path of the Python that `python` named
    error_lines: tuple[str, ...] = ()  # the runner's own lines on tests that could not run
    not_found: bool = False  # the command could not start (no such program)

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
        summary = self.summary
        from_summary = summary.failed_tests - (summary.errors or 0) if summary else None
        return self._count(("failed",), from_summary)

    @property
    def errors(self) -> int | None:
        """Tests that could not run: errors in collection, imports or fixtures."""
        return self._count(("error",), self.summary.errors if self.summary else None)

    def error_messages(self) -> list[str]:
        """What went wrong with the tests that could not run, one line each."""
        found = [
            f"{c.file or c.name}: {c.message}" for c in self.cases or () if c.outcome == "error"
        ]
        return found or list(self.error_lines)

    @property
    def skipped(self) -> int | None:
        return self._count(("skipped",), self.summary.skipped if self.summary else None)

    def unjudged(self, *, empty: bool = False) -> str | None:
        """Why this run's tests cannot be judged one by one (it gave no test cases: no
        report, one that cannot be read, a command that could not start; with `empty`,
        a report that names no test too); None when they can."""
        if self.cases or (self.cases is not None and not empty):
            return None
        if self.not_found:
            how = "the command could not start"
        else:
            how = "timed out" if self.timed_out else f"exit {self.exit_code}"
        missing = "no JUnit report" if self.cases is None else "its report names no test"
        return f"({how}): {self.problem or missing}"

    def outcomes(self) -> dict[str, str]:
        """Each test (`file::name`) and its outcome; empty without a JUnit report."""
        return {c.label: c.outcome for c in self.cases or ()}


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


ERROR_LINE = re.compile(r"^ERROR (\S.*)$", re.MULTILINE)  # pytest's short summary
PYTHON_NAME = re.compile(r"^python[\d.]*$")


def command_env(
    worktree: Path, instance: Instance | None, extra: Mapping[str, str]
) -> dict[str, str]:
    """What the command sees: the caller's environment as it is, with the worktree's
    code first on PYTHONPATH; or the allow-list and a bench environment's instance."""
    if instance is None:
        env = callers_environ()
        given = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
        env["PYTHONPATH"] = os.pathsep.join([str(importable_root(worktree)), *given])
    else:
        env = allowed_env() | instance.variables()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update({k: v.replace("{worktree}", str(worktree)) for k, v in extra.items()})
    return env


def _interpreter(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, instance: Instance | None
) -> str | None:
    """What ran the tests: a node environment's node, else the command's Python."""
    if instance is not None and instance.environment.recipe.kind == "node":
        return instance.environment.recipe.described_python
    return python_of(argv, env, cwd)


def python_of(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> str | None:
    """The version and path of the Python a command runs: its own first word when that
    is a python, else the `python` its PATH names; None when there is none."""
    python = argv[0] if PYTHON_NAME.match(Path(argv[0]).name) else "python"
    try:
        return " ".join(interpreter(python, env, cwd))
    except (ProcError, OSError):
        return None


def bench_environment(
    bench: str | Path | None, mirror: Path, base_sha: str, head_sha: str
) -> tuple[Recipe | None, dict[str, str]]:
    """A bench's environment for a command at two commits (its dependency files read at
    `base_sha`) and its `[env]`; None and nothing for the caller's own. Raises
    `BenchError`."""
    if bench is None:
        return None, {}
    found = find_bench(bench)
    repo = Repository(mirror=mirror, base_sha=base_sha, human_sha=head_sha)
    return recipe(found, repo), dict(found.file.env)


def run_at(
    mirror: Path,
    sha: str,
    command: Sequence[str],
    *,
    logs: Path,
    name: str,
    env: Mapping[str, str] | None = None,
    environment: Recipe | None = None,
    timeout_s: float = 1800.0,
    prepare: Callable[[Path], None] | None = None,
) -> CommandRun:
    """Run a test command in a fresh worktree at `sha` (after `prepare`, if given), with
    the caller's environment, or in an instance of the given bench environment."""
    worktree = cache_dir() / "worktrees" / f"{name}-{uuid.uuid4().hex[:8]}"
    worktree.parent.mkdir(parents=True, exist_ok=True)
    add_worktree(mirror, sha, worktree)
    instance = None
    try:
        if environment is not None:
            log = logs / f"{name}-environment.log"
            try:
                built = ensure(environment, log=log)
                instance = instantiate(built, where=env_copy_of(worktree), tree=worktree, log=log)
            except EnvironmentFailure as exc:
                raise BenchError(log, "environment", str(exc)) from None
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
        if report_file is not None:
            report_file.unlink(missing_ok=True)  # a stale report must not pass for this run's
        log = logs / f"{name}.log"
        log.unlink(missing_ok=True)
        variables = command_env(worktree, instance, env or {})
        argv = [argv] if isinstance(argv, str) else argv
        finished = proc.run(argv, cwd=worktree, env=variables, log_path=log, timeout_s=timeout_s)
        output = log.read_text(errors="replace")
        runner = runner_of(None, output)
        cases, problem = None, None
        if report_file is not None:
            cases, problem = read_report(report_file, runner, worktree, output)
            if report_file.exists():
                shutil.copyfile(report_file, logs / f"{name}.xml")
        return CommandRun(
            sha=sha,
            exit_code=finished.exit_code,
            timed_out=finished.timed_out,
            duration_s=round(finished.duration_s, 3),
            cases=cases,
            summary=runner.read_summary(output) if runner else None,
            problem=problem,
            log_path=str(log),
            python=_interpreter(argv, variables, worktree, instance),
            error_lines=tuple(ERROR_LINE.findall(output)[:5]),
            not_found=finished.not_found,
        )
    finally:
        remove(instance)
        remove_worktree(worktree)
