"""SWE-bench's grade of a run: the bench's FAIL_TO_PASS and PASS_TO_PASS tests in the
test run after the arm, by the rules of SWE-bench 5.0 (`swebench.harness.grading`).

A test passed when it PASSED or is an expected failure (XFAIL); a FAIL_TO_PASS test
failed when it FAILED, ERRORed, was SKIPPED or is missing; a PASS_TO_PASS test is
kept when it passed or was skipped. A truncated parametrized id (more `[` than `]`)
matches the ids it begins when they agree on pass or fail. Each rate is 1 when its
list is empty; FULL when both are 1 (the only resolved grade), PARTIAL when
0 < FAIL_TO_PASS < 1 and PASS_TO_PASS is 1, else NO. A run whose tests left no
result, or whose command failed while no test failed or errored, gives no grade
(SWE-bench's "patch not successfully applied").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from benchkit.gate.junit import CaseResult

Status = Literal["PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"]
Grade = Literal["FULL", "PARTIAL", "NO"]
PASSING: frozenset[str] = frozenset({"PASSED", "XFAIL"})


@dataclass(frozen=True, kw_only=True)
class Graded:
    """A run's SWE-bench grade and its lists (SWE-bench's `tests_status`)."""

    grade: Grade
    f2p_success: tuple[str, ...]
    f2p_failure: tuple[str, ...]
    p2p_success: tuple[str, ...]
    p2p_failure: tuple[str, ...]

    @property
    def resolved(self) -> bool:
        return self.grade == "FULL"


_STATUS: dict[str, Status] = {"passed": "PASSED", "failed": "FAILED", "error": "ERROR"}


def status_of(case: CaseResult) -> Status:
    """A test case's status as SWE-bench's log parsers name it."""
    if case.outcome == "skipped":
        return "XFAIL" if case.xfail else "SKIPPED"
    return _STATUS[case.outcome]


def status_map(cases: Iterable[CaseResult]) -> dict[str, Status]:
    """`FILE::ID` to status, as SWE-bench's pytest parser makes it of `-rA` lines."""
    return {case.label: status_of(case) for case in cases}


def usable(statuses: Mapping[str, str], exit_code: int | None, timed_out: bool) -> bool:
    """Whether a test run can be graded: it left results, did not time out, and did
    not exit non-zero while no test failed or errored."""
    if not statuses or timed_out:
        return False
    failing = any(s in ("FAILED", "ERROR") for s in statuses.values())
    return exit_code in (None, 0) or failing


def _key(case: str, statuses: Mapping[str, str]) -> str | None:
    if case in statuses:
        return case
    if case.count("[") > case.count("]"):  # a parametrized id cut short
        found = [k for k in statuses if k.startswith(case)]
        if found and len({statuses[k] in PASSING for k in found}) == 1:
            return found[0]
    return None


def _passed(case: str, statuses: Mapping[str, str]) -> bool:
    key = _key(case, statuses)
    return key is not None and statuses[key] in PASSING


def _kept(case: str, statuses: Mapping[str, str]) -> bool:
    key = _key(case, statuses)
    return _passed(case, statuses) or (key is not None and statuses[key] == "SKIPPED")


def _failed(case: str, statuses: Mapping[str, str]) -> bool:
    key = _key(case, statuses)
    return key is None or statuses[key] in ("FAILED", "ERROR", "SKIPPED")


def _split(
    tests: Sequence[str],
    statuses: Mapping[str, str],
    good: Callable[[str, Mapping[str, str]], bool],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    success = tuple(t for t in tests if good(t, statuses))
    failure = tuple(t for t in tests if not good(t, statuses) and _failed(t, statuses))
    return success, failure


def _rate(success: Sequence[str], failure: Sequence[str]) -> float:
    total = len(success) + len(failure)
    return 1.0 if total == 0 else len(success) / total


def grade(
    statuses: Mapping[str, str], fail_to_pass: Sequence[str], pass_to_pass: Sequence[str]
) -> Graded:
    """The grade of one graded test run (see `usable`)."""
    f2p_success, f2p_failure = _split(fail_to_pass, statuses, _passed)
    p2p_success, p2p_failure = _split(pass_to_pass, statuses, _kept)
    f2p, p2p = _rate(f2p_success, f2p_failure), _rate(p2p_success, p2p_failure)
    if f2p == 1 and p2p == 1:
        verdict: Grade = "FULL"
    elif 0 < f2p < 1 and p2p == 1:
        verdict = "PARTIAL"
    else:
        verdict = "NO"
    return Graded(
        grade=verdict,
        f2p_success=f2p_success,
        f2p_failure=f2p_failure,
        p2p_success=p2p_success,
        p2p_failure=p2p_failure,
    )


def graded_run(
    cases: Sequence[CaseResult] | None,
    *,
    exit_code: int | None,
    timed_out: bool,
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
) -> Graded | None:
    """The grade of a test run after the arm; None when it cannot be graded."""
    statuses = status_map(cases or ())
    if not usable(statuses, exit_code, timed_out):
        return None
    return grade(statuses, fail_to_pass, pass_to_pass)
