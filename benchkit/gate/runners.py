"""The test runners benchkit knows, in one registry: how each one's reports are read,
its closing summary, its test ids, how it runs given files alone, and how a test
file that failed to load shows in its report (an `error` case named by the file).

Adding a runner is one entry here. Reports are JUnit XML, or the runner's own JSON
where that says more (jest's names every file, those that failed to load included).

A bench may name its runner (`[tests] runner = "pytest"`); otherwise the runner is
the one whose closing summary the log holds. Pure: texts in, records out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from benchkit.gate.jest import looks_like_json, parse_jest_json
from benchkit.gate.junit import CaseResult, ReportError, parse_report, pytest_id
from benchkit.gate.summary import (
    ANSI,
    RunnerSummary,
    bun_summary,
    first_error,
    jest_summary,
    jest_unloaded,
    none_unloaded,
    pytest_error,
    pytest_summary,
    read_summary,
    vitest_summary,
    vitest_unloaded,
)


def _as_named(classname: str | None, name: str) -> str:
    return name  # the describe path joined as the report gives it: never split


def _never(case: CaseResult) -> bool:
    return False


def _named_by_its_file(case: CaseResult) -> bool:
    """vitest's JUnit: a file that failed to load is one failed case named by it."""
    return case.outcome == "failed" and case.name == case.file


def _suite_failed_to_run(case: CaseResult) -> bool:
    """jest-junit: a file that failed to load is a case "Test suite failed to run"."""
    return case.outcome in ("failed", "error") and "suite failed to run" in case.name.lower()


def _no_json(text: str, root: Path | None) -> list[CaseResult]:
    raise ReportError("a JSON report, but this runner writes JUnit XML")


@dataclass(frozen=True, kw_only=True)
class Runner:
    """One test runner."""

    name: str
    summary: Callable[[str], RunnerSummary | None]  # its closing lines, ANSI stripped
    test_id: Callable[[str | None, str], str]  # a JUnit case's full id in its file
    alone: str  # a command that runs `{files}` alone and writes its report to `{report}`
    failed_to_load: Callable[[CaseResult], bool] = _never  # such a JUnit case
    read_json: Callable[[str, Path | None], list[CaseResult]] = _no_json  # its own JSON
    unloaded: Callable[[str], dict[str, str]] = none_unloaded  # by its log: file, error
    said: Callable[[str], str | None] = first_error  # its own error, when no test ran
    exits: Mapping[int, str] = field(default_factory=dict)  # what its exit statuses mean

    def error(self, log: str) -> str | None:
        """What the runner said went wrong, from its log (ANSI stripped): one line."""
        return self.said(ANSI.sub("", log))

    def read_summary(self, log: str) -> RunnerSummary | None:
        return self.summary(ANSI.sub("", log))

    def read_report(self, text: str, root: Path | None = None) -> list[CaseResult]:
        """The cases of a report this runner wrote, JUnit or its own JSON (paths in it
        made relative to `root`, the tree); a file that failed to load is an `error`
        case. Raises `ReportError`."""
        if looks_like_json(text):
            return self.read_json(text, root)
        cases = parse_report(text, test_id=self.test_id)
        return [replace(c, outcome="error") if self.failed_to_load(c) else c for c in cases]

    def with_unloaded(self, cases: tuple[CaseResult, ...], log: str) -> tuple[CaseResult, ...]:
        """The cases, and an `error` case for each file the log says failed to load
        that the report does not name as failing (jest-junit leaves such files out)."""
        named = {c.file for c in cases if c.failing}
        missing = {f: m for f, m in self.unloaded(ANSI.sub("", log)).items() if f not in named}
        extra = [
            CaseResult(file=f, name=f, outcome="error", duration_s=0.0, message=f"{m} (by the log)")
            for f, m in missing.items()
        ]
        return (*cases, *extra)


RUNNERS: dict[str, Runner] = {
    "pytest": Runner(
        name="pytest",
        summary=pytest_summary,
        test_id=pytest_id,
        alone="python -m pytest -q -p no:cacheprovider --junitxml {report} {files}",
        said=pytest_error,
        exits={
            2: "interrupted",
            3: "internal error",
            4: "usage error",
            5: "no tests collected",
        },
    ),
    "vitest": Runner(
        name="vitest",
        summary=vitest_summary,
        test_id=_as_named,
        alone="npx vitest run --reporter=default --reporter=junit --outputFile {report} {files}",
        failed_to_load=_named_by_its_file,
        unloaded=vitest_unloaded,
    ),
    "jest": Runner(
        name="jest",
        summary=jest_summary,
        test_id=_as_named,
        alone="npx jest --ci --json --outputFile {report} {files}",
        failed_to_load=_suite_failed_to_run,
        read_json=parse_jest_json,
        unloaded=jest_unloaded,
    ),
    "bun": Runner(
        name="bun",
        summary=bun_summary,
        test_id=_as_named,
        alone="bun test --reporter=junit --reporter-outfile {report} {files}",
    ),
}


def runner_of(named: str | None, log: str, command: Sequence[str] = ()) -> Runner | None:
    """The runner a bench names, else the one whose closing lines the log holds, else
    the one the command's words name (`python -m pytest`, `npx vitest run`)."""
    if named is not None:
        return RUNNERS[named]
    found = read_summary(log)
    if found is not None:
        return RUNNERS.get(found.runner)
    words = {PurePosixPath(w).name for w in command}
    return next((r for name, r in RUNNERS.items() if name in words), None)
