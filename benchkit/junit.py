"""JUnit XML test reports, parsed with junitparser into one record per test case."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestSuite

Outcome = Literal["passed", "failed", "error", "skipped"]


class ReportError(ValueError):
    """A report that is empty or not JUnit XML."""


@dataclass(frozen=True, kw_only=True)
class CaseResult:
    file: str | None
    name: str
    outcome: Outcome
    duration_s: float
    message: str | None


def _file_of(classname: str | None, file_attr: str | None) -> str | None:
    """pytest writes `file` only in the xunit1 family; otherwise the classname is the
    module path with dots (`tests.test_x.TestY`), which maps back to `tests/test_x.py`."""
    if file_attr:
        return file_attr
    if not classname:
        return None
    parts = classname.split(".")
    while parts and parts[-1][:1].isupper():
        parts.pop()  # class names
    return "/".join(parts) + ".py" if parts else None


def parse_report(text: str) -> list[CaseResult]:
    """Every test case of a JUnit XML report."""
    if not text.strip():
        raise ReportError("the report is empty")
    try:
        xml = JUnitXml.fromstring(text)
    except (ParseError, JUnitXmlError, ValueError) as exc:
        raise ReportError(f"not JUnit XML: {exc}") from None
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    cases: list[CaseResult] = []
    for suite in suites:
        for case in suite:
            results = list(case.result)
            outcome: Outcome = "passed"
            message = None
            for result in results:
                if isinstance(result, Skipped):
                    outcome = "skipped"
                elif isinstance(result, Error):
                    outcome = "error"
                elif isinstance(result, Failure):
                    outcome = "failed"
                message = result.message
            cases.append(
                CaseResult(
                    file=_file_of(case.classname, case._elem.get("file")),
                    name=case.name or "",
                    outcome=outcome,
                    duration_s=float(case.time or 0.0),
                    message=message,
                )
            )
    return cases


def failed_count(cases: list[CaseResult]) -> int:
    return sum(c.outcome in ("failed", "error") for c in cases)
