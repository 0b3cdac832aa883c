"""jest's own JSON report (`jest --json --outputFile FILE`): every test file it ran,
the ones that failed to load included, which its JUnit report (jest-junit) names
only by a made-up case. Pure: text in, cases out.

A file's result holds its path (absolute: made relative to the tree), its status,
its message, and one assertion result per test (ancestor titles, title, status,
duration in ms, failure messages). A file whose suite failed to run has no
assertion result and a message: it is one `error` case named by the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchkit.gate.junit import MESSAGE_CHARS, CaseResult, Outcome, ReportError
from benchkit.gate.summary import ANSI

OUTCOMES: dict[str, Outcome] = {
    "passed": "passed",
    "failed": "failed",
    "pending": "skipped",
    "skipped": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
}
SEPARATOR = " \u203a "  # how jest prints a test: its describe blocks, then its title


def looks_like_json(text: str) -> bool:
    return text.lstrip().startswith("{")


def _relative(path: str, root: Path | None) -> str:
    if root is not None:
        try:
            return Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return path.removeprefix("./")


def _first_line(text: str | None) -> str | None:
    lines = [line.strip() for line in ANSI.sub("", text or "").splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith("●")]
    return (useful or lines or [""])[0][:MESSAGE_CHARS] or None


def parse_jest_json(text: str, root: Path | None = None) -> list[CaseResult]:
    """Every test of a jest JSON report, a file that failed to load as one `error`
    case; raises `ReportError` for a report that is empty or not jest's JSON."""
    if not text.strip():
        raise ReportError("the report is empty")
    try:
        report: dict[str, Any] = json.loads(text)
        files: list[dict[str, Any]] = report["testResults"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"not jest's JSON report: {exc}") from None
    try:
        return _cases(files, root)
    except (TypeError, AttributeError, ValueError) as exc:
        raise ReportError(f"not jest's JSON report: {exc}") from None


def _cases(files: list[dict[str, Any]], root: Path | None) -> list[CaseResult]:
    cases: list[CaseResult] = []
    for result in files:
        file = _relative(str(result.get("name") or result.get("testFilePath") or ""), root)
        tests = result.get("assertionResults") or []
        if not tests and (result.get("status") == "failed" or result.get("message")):
            cases.append(
                CaseResult(
                    file=file,
                    name=file,
                    outcome="error",
                    duration_s=0.0,
                    message=_first_line(result.get("message")) or "the test file failed to run",
                )
            )
            continue
        for test in tests:
            title = str(test.get("title") or "")
            path = [*test.get("ancestorTitles", []), title]
            failures = test.get("failureMessages") or []
            cases.append(
                CaseResult(
                    file=file,
                    name=title,
                    outcome=OUTCOMES.get(str(test.get("status")), "failed"),
                    duration_s=float(test.get("duration") or 0) / 1000,
                    message=_first_line(failures[0]) if failures else None,
                    test_id=SEPARATOR.join(str(p) for p in path),
                )
            )
    return cases
