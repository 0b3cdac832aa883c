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


def _count(text: str, word: str) -> int:
    found = re.search(rf"(\d+) {word}", text)
    return int(found.group(1)) if found else 0


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    matches = pattern.findall(text)
    return matches[-1] if matches else None


def read_summary(log: str) -> RunnerSummary | None:
    """The failures a runner's last closing lines report, if the log has any."""
    text = ANSI.sub("", log)
    for runner, files_line, tests_line in (
        ("jest", JEST_SUITES, JEST_TESTS),
        ("vitest", VITEST_FILES, VITEST_TESTS),
    ):
        files = _last(files_line, text)
        if files is not None:
            tests = _last(tests_line, text) or ""
            return RunnerSummary(
                runner=runner,
                failed_tests=_count(tests, "failed"),
                failed_files=_count(files, "failed"),
                passed=_count(tests, "passed"),
                skipped=_count(tests, "skipped") + _count(tests, "todo"),
            )
    pytest = _last(PYTEST, text)
    if pytest is not None:
        errors = _count(pytest, "errors?")
        return RunnerSummary(
            runner="pytest",
            failed_tests=_count(pytest, "failed") + errors,
            failed_files=None,
            passed=_count(pytest, "passed"),
            skipped=_count(pytest, "skipped") + _count(pytest, "deselected"),
            errors=errors,
        )
    interrupted = _last(PYTEST_INTERRUPTED, text)
    if interrupted is not None:
        count = int(interrupted)
        return RunnerSummary(runner="pytest", failed_tests=count, failed_files=None, errors=count)
    if BUN_RAN.search(text):
        fail, passed, skipped = (_last(p, text) for p in (BUN_FAIL, BUN_PASS, BUN_SKIP))
        return RunnerSummary(
            runner="bun",
            failed_tests=int(fail or 0),
            failed_files=None,
            passed=int(passed or 0),
            skipped=int(skipped or 0),
        )
    return None
