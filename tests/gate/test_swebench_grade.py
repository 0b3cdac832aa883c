"""SWE-bench 5.0's grading rules, with data: what passes, what fails, what is kept,
and when a test run cannot be graded."""

from __future__ import annotations

import pytest

from benchkit.gate.junit import CaseResult, parse_report
from benchkit.gate.swebench import grade, graded_run, status_map, usable

F2P = ["t.py::test_fix_a", "t.py::test_fix_b"]
P2P = ["t.py::test_old"]


def test_every_fail_to_pass_and_pass_to_pass_passing_is_full() -> None:
    statuses = {
        "t.py::test_fix_a": "PASSED",
        "t.py::test_fix_b": "XFAIL",
        "t.py::test_old": "PASSED",
    }
    graded = grade(statuses, F2P, P2P)
    assert (graded.grade, graded.resolved) == ("FULL", True)
    assert graded.f2p_success == tuple(F2P) and graded.p2p_success == tuple(P2P)


def test_some_fail_to_pass_is_partial_and_a_broken_pass_to_pass_is_no() -> None:
    half = {"t.py::test_fix_a": "PASSED", "t.py::test_fix_b": "FAILED", "t.py::test_old": "PASSED"}
    graded = grade(half, F2P, P2P)
    assert (graded.grade, graded.f2p_failure) == ("PARTIAL", ("t.py::test_fix_b",))
    broken = {**half, "t.py::test_fix_b": "PASSED", "t.py::test_old": "ERROR"}
    graded = grade(broken, F2P, P2P)
    assert (graded.grade, graded.p2p_failure, graded.resolved) == ("NO", ("t.py::test_old",), False)


def test_a_skipped_fail_to_pass_fails_but_a_skipped_pass_to_pass_is_kept() -> None:
    """5.0: skipping every FAIL_TO_PASS test is no resolution (4.1 scored it FULL)."""
    statuses = {
        "t.py::test_fix_a": "SKIPPED",
        "t.py::test_fix_b": "SKIPPED",
        "t.py::test_old": "SKIPPED",
    }
    graded = grade(statuses, F2P, P2P)
    assert graded.grade == "NO"
    assert graded.f2p_failure == tuple(F2P) and graded.p2p_success == tuple(P2P)


def test_a_missing_test_fails_and_empty_lists_rate_one() -> None:
    graded = grade({"t.py::test_old": "PASSED"}, F2P, P2P)
    assert (graded.grade, graded.f2p_failure) == ("NO", tuple(F2P))
    assert grade({"t.py::x": "PASSED"}, [], []).grade == "FULL"


def test_a_truncated_parametrized_id_matches_the_ids_it_begins_when_they_agree() -> None:
    cut = "t.py::test_p[log(photon"
    agree = {"t.py::test_p[log(photon)]": "PASSED", "t.py::test_p[log(photon)-2]": "XFAIL"}
    assert grade(agree, [cut], []).grade == "FULL"
    disagree = {"t.py::test_p[log(photon)]": "PASSED", "t.py::test_p[log(photon)-2]": "FAILED"}
    assert grade(disagree, [cut], []).grade == "NO"  # no key: missing, a failure


@pytest.mark.parametrize(
    ("statuses", "exit_code", "timed_out", "want"),
    [
        ({"t.py::a": "PASSED"}, 0, False, True),
        ({"t.py::a": "FAILED"}, 1, False, True),
        ({"t.py::a": "PASSED"}, 1, False, False),  # failed while no test did
        ({"t.py::a": "PASSED"}, 0, True, False),
        ({}, 0, False, False),  # no result
    ],
)
def test_a_run_is_graded_only_when_its_results_describe_it(
    statuses: dict[str, str], exit_code: int, timed_out: bool, want: bool
) -> None:
    assert usable(statuses, exit_code, timed_out) is want


XFAIL_REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_x" name="test_a" file="tests/test_x.py" time="0.1"/>
<testcase classname="tests.test_x" name="test_b" file="tests/test_x.py" time="0.1">
  <skipped type="pytest.xfail" message="known bug"/></testcase>
<testcase classname="tests.test_x" name="test_c" file="tests/test_x.py" time="0.1">
  <skipped type="pytest.skip" message="not here">tests/test_x.py:9: not here</skipped></testcase>
</testsuite></testsuites>
"""


def test_pytests_xfail_is_told_from_a_skip_in_a_junit_report() -> None:
    cases = parse_report(XFAIL_REPORT)
    assert status_map(cases) == {
        "tests/test_x.py::test_a": "PASSED",
        "tests/test_x.py::test_b": "XFAIL",
        "tests/test_x.py::test_c": "SKIPPED",
    }
    graded = graded_run(
        cases,
        exit_code=0,
        timed_out=False,
        fail_to_pass=["tests/test_x.py::test_b"],
        pass_to_pass=["tests/test_x.py::test_a", "tests/test_x.py::test_c"],
    )
    assert graded is not None and graded.grade == "FULL"


def test_a_run_of_no_case_is_not_graded() -> None:
    none: list[CaseResult] = []
    assert graded_run(none, exit_code=4, timed_out=False, fail_to_pass=F2P, pass_to_pass=[]) is None
