"""JUnit XML test reports, parsed with junitparser into one record per test case.

Each case is mapped to its test file, by the first rule that applies:

1. a `file` attribute on the case (pytest's xunit1 family; jest-junit with
   `addFileAttribute`);
2. a classname that is a path to a test file (vitest);
3. a suite name that is a path to a test file (vitest; jest-junit with
   `suiteNameTemplate: "{filepath}"`);
4. a pytest dotted classname (`tests.unit.test_calc.TestGroup` ->
   `tests/unit/test_calc.py`), or, for a collection error, the dotted module in the
   case's name.

A case that no rule maps has no file (jest-junit's default output names none): the
gate cannot rerun it alone, and says so.

A test is its file plus its full id inside the file: for pytest, the class path and the
name with its parameters (`TestA::TestInner::test_x[1-a]`, from a dotted classname
past the module); for vitest and jest, the name as the report gives it (a describe
path joined with ` > ` stays one string: it is never split).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal
from xml.etree.ElementTree import ParseError

Outcome = Literal["passed", "failed", "error", "skipped"]
FAILING: tuple[Outcome, ...] = ("failed", "error")

TEST_FILE = re.compile(r"^[\w.@/+-]+\.(py|[cm]?[jt]sx?|mjs|cjs|rb|go|rs|php)$")
PYTEST_MODULE = re.compile(r"^(test_\w*|\w*_test)$")
MESSAGE_CHARS = 500
GENERIC_MESSAGES = (None, "", "collection failure")
PYTEST_EXCEPTION = re.compile(r"^E\s+(\w+(?:Error|Exception)\b.*)$", re.MULTILINE)


class ReportError(ValueError):
    """A report that is empty or not JUnit XML."""


@dataclass(frozen=True, kw_only=True)
class CaseResult:
    """One test case of a report."""

    file: str | None
    name: str
    outcome: Outcome
    duration_s: float
    message: str | None
    test_id: str = ""  # the full id inside the file; empty: the name is all there is
    xfail: bool = False  # skipped as an expected failure (pytest's xfail)

    @property
    def full_id(self) -> str:
        return self.test_id or self.name

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING

    @property
    def key(self) -> tuple[str | None, str]:
        """What tells one test from every other: its file and its full id."""
        return self.file, self.full_id

    @property
    def label(self) -> str:
        """`FILE::ID`, as a bench names a test."""
        return f"{self.file or '?'}::{self.full_id}"


def _path(text: str | None) -> str | None:
    if not text:
        return None
    text = text.strip().removeprefix("./")
    return text if TEST_FILE.match(text) else None


def _pytest_module(dotted: str | None) -> str | None:
    """`tests.unit.test_calc.TestGroup` -> `tests/unit/test_calc.py`."""
    if not dotted or "/" in dotted or " " in dotted:
        return None
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if PYTEST_MODULE.match(parts[end - 1]):
            return "/".join(parts[:end]) + ".py"
    return None


def pytest_id(classname: str | None, name: str) -> str:
    """The class path past the module in a pytest classname, then the name:
    `tests.test_m.TestA.TestB` and `test_x[1]` -> `TestA::TestB::test_x[1]`."""
    if not classname or "/" in classname or " " in classname:
        return name
    parts = classname.split(".")
    module = next(
        (end for end in range(len(parts), 0, -1) if PYTEST_MODULE.match(parts[end - 1])), None
    )
    if module is None:
        return name
    return "::".join([*parts[module:], name])


def file_of(
    *, file_attr: str | None, classname: str | None, suite: str | None, name: str
) -> str | None:
    """The test file of one case, by the rules in this module's docstring."""
    if file_attr:
        return file_attr.strip().removeprefix("./")
    return (
        _path(classname)
        or _path(suite)
        or _pytest_module(classname)
        or (None if classname else _pytest_module(name))
    )


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:MESSAGE_CHARS] or None


def _exception_line(text: str | None) -> str | None:
    """The last `E   SomeError: ...` line of a pytest traceback, if it has one."""
    found = PYTEST_EXCEPTION.findall(text or "")
    return found[-1].strip()[:MESSAGE_CHARS] if found else None


def _message(message: str | None, text: str | None) -> str | None:
    """A failure's message: its own, unless pytest only said `collection failure` (an
    import error, say), whose exception line then says what happened."""
    if message in GENERIC_MESSAGES or not message:
        return _exception_line(text) or _first_line(message) or _first_line(text)
    return _first_line(message)


def parse_report(
    text: str, test_id: Callable[[str | None, str], str] = pytest_id
) -> list[CaseResult]:
    """Every test case of a JUnit XML report; `test_id(classname, name)` gives a case's
    full id inside its file (the runner's rule)."""
    from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestSuite

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
            outcome: Outcome = "passed"
            message = None
            xfail = False
            for result in case.result:
                if isinstance(result, Skipped):
                    outcome = "skipped"
                    xfail = result.type == "pytest.xfail"
                elif isinstance(result, Error):
                    outcome = "error"
                elif isinstance(result, Failure):
                    outcome = "failed"
                message = _message(result.message, result.text)
            name = (case.name or "").strip()
            cases.append(
                CaseResult(
                    file=file_of(
                        file_attr=case._elem.get("file"),
                        classname=case.classname,
                        suite=suite.name,
                        name=name,
                    ),
                    name=name,
                    outcome=outcome,
                    duration_s=_seconds(case._elem.get("time"), name),
                    message=message,
                    test_id=test_id(case.classname, name),
                    xfail=xfail,
                )
            )
    return cases


def _seconds(given: str | None, case: str) -> float:
    """A case's `time` attribute: none is 0; one that is no number of seconds makes the
    report one that cannot be read (a runner that wrote it is broken)."""
    if given is None or not given.strip():
        return 0.0
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ReportError(f"testcase {case!r}: time {given!r} is not a number of seconds")
    return seconds


def failed_count(cases: Iterable[CaseResult]) -> int:
    return sum(c.failing for c in cases)


def failing_files(cases: Sequence[CaseResult]) -> list[str]:
    """The files with a failing case, in report order (cases with no file left out)."""
    return list(dict.fromkeys(c.file for c in cases if c.failing and c.file))


def in_tree(cases: Iterable[CaseResult], roots: Sequence[str]) -> tuple[CaseResult, ...]:
    """The cases with each path under a root (the tree the tests ran in, as given and
    resolved) in their messages written from the tree (`/…/tree/calc.py` is `calc.py`,
    the tree itself `.`): a message then reads the same for every pilot, at base as
    after, and holds no pilot's throwaway folder. A root is only rewritten where it
    starts a path (not inside `/srv/m/…/tree`) and ends one (not `tree2`, `tree.bak`)."""
    known = sorted({r.rstrip("/") for r in roots if r.strip("/")}, key=len, reverse=True)
    if not known:
        return tuple(cases)
    roots = "|".join(re.escape(r) for r in known)
    under = re.compile(
        rf"(?<![\w.~/-])(?:{roots})(?:(?P<under>/(?=[\w.~+@-]))|/?(?![\w~+@-]|\.[\w.-]))"
    )
    return tuple(
        replace(c, message=under.sub(_from_tree, c.message)) if c.message else c for c in cases
    )


def _from_tree(match: re.Match[str]) -> str:
    return "" if match.group("under") else "."
