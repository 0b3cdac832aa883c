"""The gate, as data in and data out: one test per rule."""

from __future__ import annotations

import pytest

from benchkit.gate.intervals import wilson
from benchkit.gate.junit import CaseResult, Outcome
from benchkit.gate.summary import RunnerSummary
from benchkit.gate.verdict import GateResult, TestRun, files_to_rerun, judge, run_problem


def case(file: str | None, name: str, outcome: Outcome = "passed") -> CaseResult:
    message = "boom" if outcome in ("failed", "error") else None
    return CaseResult(file=file, name=name, outcome=outcome, duration_s=0.01, message=message)


def run(*cases: CaseResult, exit_code: int | None = None, **kw: object) -> TestRun:
    if exit_code is None:
        exit_code = 1 if any(c.failing for c in cases) else 0
    return TestRun(cases=cases, exit_code=exit_code, **kw)  # type: ignore[arg-type]


def judged(*args: object, **kw: object) -> GateResult:
    """`judge` on the after runs of this module, which leave out the tests a rule does
    not need: a test left out is not removed here (that rule has its own tests)."""
    return judge(*args, allow_removed=True, **kw)  # type: ignore[arg-type]


BASE = run(
    case("t/test_a.py", "a1"),
    case("t/test_a.py", "a2"),
    case("t/test_b.py", "b1"),
    case("t/test_old.py", "old1", "failed"),
    case("t/test_old.py", "old2"),
)


def test_all_green_is_a_pass() -> None:
    after = run(case("t/test_a.py", "a1"), case("t/test_b.py", "b1"))
    result = judged(BASE, after, {})
    assert result.verdict == "pass"
    assert result.reasons == ()


def test_a_file_failing_at_base_is_preexisting_and_not_charged() -> None:
    after = run(case("t/test_a.py", "a1"), case("t/test_old.py", "old1", "failed"))
    assert files_to_rerun(BASE, after) == []
    result = judged(BASE, after, {})
    assert result.verdict == "pass"
    assert result.preexisting_files == ("t/test_old.py",)
    assert result.first_failures == ()


def test_a_preexisting_file_with_a_new_failure_is_judged_again() -> None:
    after = run(case("t/test_old.py", "old1", "failed"), case("t/test_old.py", "old2", "failed"))
    assert files_to_rerun(BASE, after) == ["t/test_old.py"]
    rerun = run(case("t/test_old.py", "old1", "failed"), case("t/test_old.py", "old2", "failed"))
    result = judged(BASE, after, {"t/test_old.py": [rerun]})
    assert result.regression_files == ("t/test_old.py",)
    assert result.regressions == 1  # old2 passed at base; old1 did not


def test_a_file_that_passes_alone_is_flaky() -> None:
    after = run(case("t/test_a.py", "a1", "failed"), case("t/test_a.py", "a2"))
    rerun = run(case("t/test_a.py", "a1"), case("t/test_a.py", "a2"))
    result = judged(BASE, after, {"t/test_a.py": [rerun]})
    assert result.verdict == "flaky-pass"
    assert result.flaky_files == ("t/test_a.py",)
    assert result.regressions == 0
    assert [(f.file, f.test) for f in result.first_failures] == [("t/test_a.py", "a1")]


def test_a_file_that_fails_again_alone_is_a_regression() -> None:
    after = run(
        case("t/test_a.py", "a1", "failed"),
        case("t/test_a.py", "a2", "failed"),
        case("t/test_a.py", "a_new", "failed"),
    )
    rerun = run(
        case("t/test_a.py", "a1", "failed"),
        case("t/test_a.py", "a2"),
        case("t/test_a.py", "a_new", "failed"),
    )
    result = judged(BASE, after, {"t/test_a.py": [rerun]})
    assert result.verdict == "fail"
    assert result.regression_files == ("t/test_a.py",)
    assert result.regressions == 2  # a1 and a2 passed at base; a_new did not exist
    assert "regression in t/test_a.py" in result.reasons


def test_a_failure_that_names_no_file_fails_the_gate() -> None:
    after = run(case("t/test_a.py", "a1"), case(None, "tests", "error"))
    result = judged(BASE, after, {})
    assert result.verdict == "fail"
    assert result.reasons == ("1 failing test(s) name no file, e.g. 'tests'",)


@pytest.mark.parametrize(
    ("after", "reason"),
    [
        (
            TestRun(cases=None, problem="junit.xml not written", exit_code=139),
            "tests did not run: the test command exited 139 (junit.xml not written)",
        ),
        (
            TestRun(
                cases=None,
                problem=".bench/junit.xml not written",
                exit_code=4,
                runner="pytest",
                error="ImportError: cannot import name 'x' from 'helpers'",
            ),
            "tests did not run: pytest exited 4 (usage error): ImportError: cannot import "
            "name 'x' from 'helpers' (.bench/junit.xml not written)",
        ),
        (
            TestRun(cases=None, problem="report.xml not written", exit_code=0, runner="vitest"),
            "no test report: vitest exited 0 (report.xml not written)",
        ),
        (
            TestRun(cases=(case("t/test_a.py", "a1"),), exit_code=None, timed_out=True),
            "the test run timed out",
        ),
        (TestRun(cases=None, exit_code=None, missing=True), "the test command could not start"),
    ],
)
def test_a_crash_a_timeout_or_no_runner_fails_the_gate(after: TestRun, reason: str) -> None:
    result = judged(BASE, after, {})
    assert result.verdict == "fail"
    assert result.reasons[0] == reason


def test_a_rerun_that_runs_no_test_is_not_a_pass() -> None:
    after = run(case("t/test_a.py", "a1", "failed"))
    nothing = run(exit_code=5)  # pytest: no tests collected
    only_skips = run(case("t/test_a.py", "a1", "skipped"))
    for rerun in (nothing, only_skips):
        result = judged(BASE, after, {"t/test_a.py": [rerun]})
        assert result.verdict == "fail"
        assert result.missing_files == ("t/test_a.py",)
        assert result.reasons == ("the rerun of t/test_a.py ran no test",)


def test_a_file_that_cannot_run_alone_is_missing() -> None:
    after = run(case("t/test_a.py", "a1", "failed"))
    for reruns in ({}, {"t/test_a.py": [TestRun(cases=None, exit_code=None, missing=True)]}):
        result = judged(BASE, after, reruns)
        assert result.verdict == "fail"
        assert result.missing_files == ("t/test_a.py",)
        assert result.reasons == ("t/test_a.py cannot be run alone",)


def test_a_failed_exit_with_a_clean_report_fails_the_gate() -> None:
    after = run(case("t/test_a.py", "a1"), exit_code=1)
    result = judged(BASE, after, {})
    assert result.verdict == "fail"
    assert result.reasons == ("the runner exited 1 but its report names no failure",)


def test_a_report_that_leaves_out_a_file_fails_whatever_the_reruns_showed() -> None:
    # jest-junit dropped the file that failed to load; jest's own summary counts it.
    summary = RunnerSummary(runner="jest", failed_tests=1, failed_files=2)
    after = run(case("t/test_a.py", "a1", "failed"), summary=summary)
    rerun = run(case("t/test_a.py", "a1"))
    result = judged(BASE, after, {"t/test_a.py": [rerun]})
    assert result.flaky_files == ("t/test_a.py",)
    assert result.verdict == "fail"
    assert result.reasons == ("jest's summary counts 2 failed files, the report names 1",)
    more_tests = RunnerSummary(runner="pytest", failed_tests=3, failed_files=None)
    result = judged(
        BASE, run(case("t/test_a.py", "a1", "failed"), summary=more_tests), {"t/test_a.py": [rerun]}
    )
    assert result.reasons == ("pytest's summary counts 3 failed, the report names 1",)


def test_k_reruns_count_passes_and_fails_with_an_interval() -> None:
    after = run(case("t/test_a.py", "a1", "failed"))
    passing, failing = run(case("t/test_a.py", "a1")), run(case("t/test_a.py", "a1", "failed"))
    result = judged(BASE, after, {"t/test_a.py": [passing, failing, passing, failing, passing]})
    assert result.verdict == "flaky-pass"
    [stats] = result.reruns
    # every observation counts: the failing full run, then the five reruns alone
    assert (stats.attempts, stats.passes, stats.fails) == (5, 3, 3)
    assert stats.fail_rate == wilson(3, 6)
    always = judged(BASE, after, {"t/test_a.py": [failing] * 5})
    assert always.regression_files == ("t/test_a.py",)
    low, high = always.reruns[0].fail_rate or (0.0, 0.0)
    assert (low, high) == wilson(6, 6) and high == 1.0 and low == pytest.approx(0.61, abs=0.01)
    never = judged(BASE, after, {"t/test_a.py": [passing] * 3}).reruns[0]
    assert (never.passes, never.fails) == (3, 1)
    low, high = wilson(0, 3) or (1.0, 0.0)
    assert low == 0.0 and high == pytest.approx(0.56, abs=0.01)  # exactly 0, not 5.55e-17


def test_without_a_base_report_every_failing_file_is_new() -> None:
    after = run(case("t/test_old.py", "old1", "failed"))
    assert files_to_rerun(None, after) == ["t/test_old.py"]
    assert files_to_rerun(TestRun(cases=None), after) == ["t/test_old.py"]


def test_wilson_interval() -> None:
    assert wilson(0, 0) is None
    low, high = wilson(2, 5) or (0.0, 0.0)
    assert round(low, 3) == 0.118 and round(high, 3) == 0.769
    none_failed = wilson(0, 5)
    assert none_failed is not None
    assert none_failed[0] == 0.0
    assert none_failed[1] == pytest.approx(0.4345, abs=1e-4)
    assert wilson(5, 5)[1] == 1.0  # type: ignore[index]
    with pytest.raises(ValueError):
        wilson(6, 5)


def test_a_report_with_no_test_fails_the_gate() -> None:
    after = TestRun(cases=(), problem="junit.xml names no test", exit_code=5, runner="pytest")
    result = judged(BASE, after, {})
    assert result.verdict == "fail"
    assert result.reasons == (
        "the test run ran no test: pytest exited 5 (no tests collected) (junit.xml names no test)",
    )


def test_a_test_known_flaky_at_base_is_flaky_without_a_rerun() -> None:
    after = run(case("t/test_a.py", "a1", "failed"), case("t/test_b.py", "b1"))
    known = frozenset({("t/test_a.py", "a1")})
    assert files_to_rerun(BASE, after, known) == []
    result = judged(BASE, after, {}, known_flaky=known)
    assert (result.verdict, result.flaky_files, result.reruns) == (
        "flaky-pass",
        ("t/test_a.py",),
        (),
    )


def test_tests_that_did_not_run_at_base_leave_the_bench_unable_to_judge() -> None:
    interrupted = TestRun(
        cases=(case("t/test_a.py", "t.test_a", "error"),),
        exit_code=2,
        summary=RunnerSummary(
            runner="pytest", failed_tests=1, failed_files=None, errors=1, interrupted=True
        ),
    )
    problem = run_problem(interrupted)
    assert problem == "pytest was interrupted: 1 error(s) during collection, so no test ran"
    result = judged(interrupted, run(case("t/test_b.py", "b1")), {}, unjudgeable=problem)
    assert (result.verdict, result.reasons) == (
        "error",
        (f"the tests did not run at base: {problem}",),
    )
    # after the arm only, the same is the arm's fault
    assert judged(BASE, interrupted, {}).verdict == "fail"
    assert run_problem(TestRun(cases=())) == "the test run ran no test: the test command exited 0"
    # the base's own line, not said twice
    no_report = TestRun(cases=None, problem="r.xml not written", exit_code=4, runner="pytest")
    said = judged(None, run(), {}, unjudgeable=run_problem(no_report)).reasons
    assert said == (
        "the tests did not run at base: pytest exited 4 (usage error) (r.xml not written)",
    )
    assert run_problem(BASE) is None


def test_an_error_in_a_teardown_is_no_missing_test() -> None:
    # pytest: "2 passed, 1 error" for a test whose fixture raised after it passed; its
    # report holds that test once, as an error, and the other one as passed
    summary = RunnerSummary(
        runner="pytest", failed_tests=1, failed_files=None, passed=2, skipped=0, errors=1
    )
    after = run(
        case("t/test_a.py", "test_a", "error"), case("t/test_a.py", "test_b"), summary=summary
    )
    assert run_problem(after) is None
    short = RunnerSummary(runner="jest", failed_tests=0, failed_files=0, passed=3, skipped=0)
    assert run_problem(run(case("t/a.test.ts", "x"), summary=short)) == (
        "jest's summary counts 3 tests, the report holds 1"
    )


def test_a_test_that_passed_at_base_and_is_gone_is_removed_and_fails() -> None:
    after = run(case("t/test_a.py", "a1"), case("t/test_a.py", "a2"))  # b1 and old2 gone
    result = judge(BASE, after, {})
    assert result.removed == ("t/test_b.py::b1", "t/test_old.py::old2")
    assert result.verdict == "fail"
    assert result.reasons == (
        "2 test(s) that passed at base are gone: t/test_b.py::b1, t/test_old.py::old2",
    )
    allowed = judge(BASE, after, {}, allow_removed=True)
    assert (allowed.verdict, allowed.removed) == ("pass", result.removed)


def test_the_tests_of_a_file_that_fails_after_are_not_counted_gone() -> None:
    # t/test_b.py no longer loads: one error case names the file, b1 is not in the run
    everything = [case("t/test_a.py", "a1"), case("t/test_a.py", "a2")]
    after = run(*everything, case("t/test_old.py", "old1", "failed"), case("t/test_old.py", "old2"))
    broken = run(*after.cases or (), case("t/test_b.py", "t/test_b.py", "error"))
    rerun = run(case("t/test_b.py", "t/test_b.py", "error"))
    result = judge(BASE, broken, {"t/test_b.py": [rerun]})
    assert result.removed == ()
    assert result.regression_files == ("t/test_b.py",)


def test_a_new_failing_test_in_a_file_whose_tests_of_base_pass_is_no_regression() -> None:
    after = run(*BASE.cases or (), case("t/test_a.py", "a3", "failed"))
    rerun = run(case("t/test_a.py", "a3", "failed"))
    result = judge(BASE, after, {"t/test_a.py": [rerun]})
    assert (result.verdict, result.new_failing_files, result.regression_files) == (
        "fail",
        ("t/test_a.py",),
        (),
    )
    assert result.reasons == ("new failing test(s), none run at base, in t/test_a.py",)
    # beside a test of base that fails too, the file is a regression
    broken = run(case("t/test_a.py", "a1", "failed"), *(after.cases or ())[1:])
    again = run(case("t/test_a.py", "a1", "failed"), case("t/test_a.py", "a3", "failed"))
    assert judge(BASE, broken, {"t/test_a.py": [again]}).regression_files == ("t/test_a.py",)


def test_a_failing_file_with_no_test_at_base_is_new_failing_not_a_regression() -> None:
    after = run(*BASE.cases or (), case("t/test_new.py", "n1", "failed"))
    rerun = run(case("t/test_new.py", "n1", "failed"))
    result = judge(BASE, after, {"t/test_new.py": [rerun]})
    assert (result.verdict, result.new_failing_files, result.regression_files) == (
        "fail",
        ("t/test_new.py",),
        (),
    )
    assert result.regressions == 0
    assert result.reasons == ("new failing test file t/test_new.py",)
    assert [f.test for f in result.first_failures] == ["n1"]
