"""The test runners benchkit knows, in one registry: how each one's reports are read,
its closing summary, its test ids, and how it runs given files alone.

A bench may name its runner (`[tests] runner = "pytest"`); otherwise the runner is
the one whose closing summary the log holds. Pure: texts in, records out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchkit.gate.junit import CaseResult, parse_report, pytest_id
from benchkit.gate.summary import (
    ANSI,
    RunnerSummary,
    bun_summary,
    jest_summary,
    pytest_summary,
    read_summary,
    vitest_summary,
)


def _as_named(classname: str | None, name: str) -> str:
    return name  # the describe path joined as the report gives it: never split


@dataclass(frozen=True, kw_only=True)
class Runner:
    """One test runner."""

    name: str
    summary: Callable[[str], RunnerSummary | None]  # its closing lines, ANSI stripped
    test_id: Callable[[str | None, str], str]  # a JUnit case's full id in its file
    alone: str  # a command that runs `{files}` alone and writes JUnit to `{report}`

    def read_summary(self, log: str) -> RunnerSummary | None:
        return self.summary(ANSI.sub("", log))

    def read_report(self, text: str) -> list[CaseResult]:
        """The cases of a JUnit report this runner wrote; raises `ReportError`."""
        return parse_report(text, test_id=self.test_id)


RUNNERS: dict[str, Runner] = {
    "pytest": Runner(
        name="pytest",
        summary=pytest_summary,
        test_id=pytest_id,
        alone="python -m pytest -q -p no:cacheprovider --junitxml {report} {files}",
    ),
    "vitest": Runner(
        name="vitest",
        summary=vitest_summary,
        test_id=_as_named,
        alone="npx vitest run --reporter=default --reporter=junit --outputFile {report} {files}",
    ),
    "jest": Runner(
        name="jest",
        summary=jest_summary,
        test_id=_as_named,
        alone="npx jest --ci --reporters=default --reporters=jest-junit {files}",
    ),
    "bun": Runner(
        name="bun",
        summary=bun_summary,
        test_id=_as_named,
        alone="bun test --reporter=junit --reporter-outfile {report} {files}",
    ),
}


def runner_of(named: str | None, log: str) -> Runner | None:
    """The runner a bench names, else the one whose closing lines the log holds."""
    if named is not None:
        return RUNNERS[named]
    found = read_summary(log)
    return RUNNERS.get(found.runner) if found else None
