"""What a test runner's own closing lines say: how many tests passed, failed, were
skipped, and how many files failed.

The gate compares this with the report, because some reporters leave out a test
file that failed to load (jest-junit does). Read from the last summary of pytest,
vitest, jest or bun test in a log; `None` where the log holds none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# pytest: "2 failed, 3 passed, 1 skipped, 2 errors in 0.04s" (with or without ===)
PYTEST = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s\b.*$", re.MULTILINE)
PYTEST_INTERRUPTED = re.compile(r"Interrupted: (\d+) errors? during collection")
PYTEST_NO_TESTS = re.compile(r"^=*\s*no tests ran\b.* in [\d.]+s\b.*$", re.MULTILINE)
# jest: "Tests:       1 failed, 1 skipped, 4 passed, 6 total" / "Test Suites: 2 failed, ..."
JEST_TESTS = re.compile(r"^Tests:\s+(.*\d+ total)\s*$", re.MULTILINE)
JEST_SUITES = re.compile(r"^Test Suites:\s+(.*\d+ total)\s*$", re.MULTILINE)
# vitest: " Test Files  2 failed | 1 passed (3)" / "      Tests  1 failed | 4 passed (6)"
VITEST_FILES = re.compile(r"^\s*Test Files\s+(.*)\(\d+\)\s*$", re.MULTILINE)
VITEST_TESTS = re.compile(r"^\s*Tests\s+(.*)\(\d+\)\s*$", re.MULTILINE)
# bun test: " 3 pass" / " 1 fail" / "Ran 4 tests across 2 files."
BUN_FAIL = re.compile(r"^\s*(\d+) fail\s*$", re.MULTILINE)
BUN_PASS = re.compile(r"^\s*(\d+) pass\s*$", re.MULTILINE)
BUN_SKIP = re.compile(r"^\s*(\d+) skip\s*$", re.MULTILINE)
BUN_RAN = re.compile(r"^Ran \d+ tests? across \d+ files?\.", re.MULTILINE)


@dataclass(frozen=True, kw_only=True)
class RunnerSummary:
    runner: str
    failed_tests: int  # failed and errored tests, collection errors included
    failed_files: int | None  # where the runner counts files (jest, vitest)
    passed: int | None = None
    skipped: int | None = None
    errors: int | None = None  # of `failed_tests`, those that could not run (pytest)
    deselected: int = 0  # left out on purpose: not in the report either
    interrupted: bool = False  # the runner stopped before running its tests

    @property
    def ran(self) -> int:
        """The fewest cases a complete report of this run holds: the tests that passed,
        failed or were skipped. Errors are left out: pytest counts an error in a test's
        teardown beside the test's own pass, while its report holds the test once."""
        return (self.passed or 0) + self.failed_tests - (self.errors or 0) + (self.skipped or 0)


def _count(text: str, word: str) -> int:
    found = re.search(rf"(\d+) {word}", text)
    return int(found.group(1)) if found else 0


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    matches = pattern.findall(text)
    return matches[-1] if matches else None


def _files_and_tests(
    runner: str, files_line: re.Pattern[str], tests_line: re.Pattern[str], text: str
) -> RunnerSummary | None:
    files = _last(files_line, text)
    if files is None:
        return None
    tests = _last(tests_line, text) or ""
    return RunnerSummary(
        runner=runner,
        failed_tests=_count(tests, "failed"),
        failed_files=_count(files, "failed"),
        passed=_count(tests, "passed"),
        skipped=_count(tests, "skipped") + _count(tests, "todo"),
    )


def jest_summary(text: str) -> RunnerSummary | None:
    """jest's `Test Suites:` and `Tests:` lines."""
    return _files_and_tests("jest", JEST_SUITES, JEST_TESTS, text)


def vitest_summary(text: str) -> RunnerSummary | None:
    """vitest's `Test Files` and `Tests` lines."""
    return _files_and_tests("vitest", VITEST_FILES, VITEST_TESTS, text)


def pytest_summary(text: str) -> RunnerSummary | None:
    """pytest's closing line, and whether it was interrupted or ran no test."""
    interrupted = _last(PYTEST_INTERRUPTED, text)
    line = _last(PYTEST, text)
    if line is not None:
        errors = _count(line, "errors?")
        return RunnerSummary(
            runner="pytest",
            failed_tests=_count(line, "failed") + errors,
            failed_files=None,
            passed=_count(line, "passed"),
            skipped=_count(line, "skipped"),
            errors=errors,
            deselected=_count(line, "deselected"),
            interrupted=interrupted is not None,
        )
    if interrupted is not None:
        count = int(interrupted)
        return RunnerSummary(
            runner="pytest", failed_tests=count, failed_files=None, errors=count, interrupted=True
        )
    if PYTEST_NO_TESTS.search(text):
        return RunnerSummary(runner="pytest", failed_tests=0, failed_files=None, passed=0)
    return None


def bun_summary(text: str) -> RunnerSummary | None:
    """bun test's `N pass` / `N fail` lines and its `Ran N tests` line."""
    if not BUN_RAN.search(text):
        return None
    fail, passed, skipped = (_last(p, text) for p in (BUN_FAIL, BUN_PASS, BUN_SKIP))
    return RunnerSummary(
        runner="bun",
        failed_tests=int(fail or 0),
        failed_files=None,
        passed=int(passed or 0),
        skipped=int(skipped or 0),
    )


SUMMARIES = (jest_summary, vitest_summary, pytest_summary, bun_summary)  # in this order


def read_summary(log: str) -> RunnerSummary | None:
    """The last closing lines of whichever runner wrote the log, if it has any."""
    text = ANSI.sub("", log)
    for summary in SUMMARIES:
        found = summary(text)
        if found is not None:
            return found
    return None


# A test file that failed to load, as the runner's log names it with its first error
# line: jest's `FAIL f` then `● Test suite failed to run`; vitest's `FAIL f [ f ]`.
JEST_UNLOADED = re.compile(
    r"^\s*FAIL\s+(\S+).*\n\s*● Test suite failed to run\s*\n(?:\s*\n)*\s*(.+)$", re.MULTILINE
)
VITEST_UNLOADED = re.compile(r"^\s*FAIL\s+(\S+) \[ \1 \]\s*\n\s*(.+)$", re.MULTILINE)


def _unloaded(pattern: re.Pattern[str], text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in pattern.finditer(text)}


def jest_unloaded(text: str) -> dict[str, str]:
    """The files jest's log says failed to run, each with its first error line."""
    return _unloaded(JEST_UNLOADED, text)


def vitest_unloaded(text: str) -> dict[str, str]:
    """The files vitest's log lists among its failed suites, with their error line."""
    return _unloaded(VITEST_UNLOADED, text)


def none_unloaded(text: str) -> dict[str, str]:
    return {}


# The runner's own words when it could not run the tests: pytest's exception line
# (`E   ImportError: ...`, a conftest's, last of its traceback) or its usage error
# (`pytest: error: unrecognized arguments: ...`); a Node runner's first `...Error: ...`
# (vitest's startup error, a config that cannot load).
PYTEST_RAISED = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
PYTEST_USAGE = re.compile(r"^(?:.*?pytest\S*|\S*__main__\.py): (error: .+)$", re.MULTILINE)
ERROR_LINE = re.compile(r"^\s*((?:\w+\.)*\w*(?:Error|Exception)\b:? .+)$", re.MULTILINE)
_WHERE = re.compile(r"\s+\((?:/[^()]*)\)\s*$")  # a trailing (/absolute/path): the machine's


def _said(line: str | None) -> str | None:
    return _WHERE.sub("", line.strip())[:200] if line else None


def pytest_error(text: str) -> str | None:
    """What pytest said went wrong before any test ran: the last exception line of its
    traceback, else its usage error; None when it said neither."""
    raised = PYTEST_RAISED.findall(text)
    usage = PYTEST_USAGE.search(text)
    return _said(raised[-1] if raised else usage.group(1) if usage else None)


def first_error(text: str) -> str | None:
    """The first `...Error: ...` line of a log (a Node runner's startup error), with
    the line after it when it ends in a colon (`Error: Build failed with 1 error:`)."""
    found = ERROR_LINE.search(text)
    if found is None:
        return None
    said = found.group(1).strip()
    if said.endswith(":"):
        after = text[found.end() :].lstrip("\n").split("\n", 1)[0].strip()
        said = f"{said} {after}" if after else said
    return _said(said)
