"""The gate: test results at base and after the arm, turned into a verdict.

Pure functions over test records. The rules:

- A failing file whose failing tests all failed at base too is **preexisting**:
  listed, not charged. (A file that fails at base and gains a new failing test is
  judged like any other.)
- Every other failing file is rerun alone (once, or `K` times): a file that passes
  at least once alone is **flaky**; one that never does is a **regression** file.
- A rerun that runs no test is not a pass; a file that cannot be run alone is
  **missing**, never a pass. Both fail the gate.
- A failing run that names no test file (a crash, a timeout, a missing report, a
  collection error outside any file) fails the gate.
- The report must account for the whole run: when the runner's exit status or its
  own summary says more failed than the report names, the gate fails with that
  reason, whatever the reruns showed.
- No run is no pass: a test run that was interrupted, collected nothing, ran no
  test, or whose report holds fewer cases than the runner's own summary ran, cannot
  pass. At base, it leaves the bench unable to judge any arm: the verdict is `error`
  ("the tests did not run at base: ..."), which is neither a pass nor the arm's fault.
  After the arm only, the arm broke the suite: `fail`.
- Tests the bench knows to be flaky at base (its lock file) that fail after the arm
  are flaky, not charged.
- A test that passed at base and is gone after the arm (its file deleted, the test
  renamed away or no longer collected, in a file that does not fail) is **removed**:
  the gate fails on it as on a regression, unless the bench allows it
  (`allow_removed`).
- A failing file in which every test that passed at base still passes (a file the arm
  added, or new tests in a file that was there: the arm's own, or a held-out test the
  human added) is **new failing**: the gate fails on it, but nothing in it that passed
  at base fails, so nothing in it regressed. A file that no longer loads fails its
  tests of base: a regression.

A test is its file plus its full id (class path and parameters for pytest), so two
tests of the same name in two classes are two tests. `regressions` counts the tests
that passed at base and fail after the arm, in regression files (flaky files
excluded). A rerun file's statistics count every observation of it: the failing full
run, then each rerun alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from benchkit.gate.intervals import wilson
from benchkit.gate.junit import CaseResult, failing_files
from benchkit.gate.runners import RUNNERS
from benchkit.gate.summary import RunnerSummary

Verdict = Literal["pass", "flaky-pass", "fail", "error"]
Attempt = Literal["pass", "fail", "no-test", "missing"]
FIRST_FAILURES = 5


@dataclass(frozen=True, kw_only=True)
class TestRun:
    """One run of a test command as the gate sees it."""

    __test__ = False  # not a pytest class

    cases: tuple[CaseResult, ...] | None  # None: no readable report
    problem: str | None = None  # why there are no cases
    exit_code: int | None = 0
    timed_out: bool = False
    missing: bool = False  # the command could not start
    summary: RunnerSummary | None = None
    runner: str | None = None  # the runner's name, where known
    error: str | None = None  # what the runner said went wrong, when it left no test


@dataclass(frozen=True, kw_only=True)
class FirstFailure:
    file: str | None
    test: str
    message: str | None


@dataclass(frozen=True, kw_only=True)
class FileReruns:
    """How one failing file fared when rerun alone."""

    file: str
    attempts: int  # reruns alone
    passes: int  # of the reruns
    fails: int  # every failing observation: the full run's, and the reruns'
    no_tests: int
    missing: bool

    @property
    def fail_rate(self) -> tuple[float, float] | None:
        """Wilson 95% interval of the failure rate over every observation that ran
        tests: the failing full run and the reruns."""
        return wilson(self.fails, self.passes + self.fails)


@dataclass(frozen=True, kw_only=True)
class GateResult:
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    preexisting_files: tuple[str, ...] = ()
    flaky_files: tuple[str, ...] = ()
    regression_files: tuple[str, ...] = ()
    missing_files: tuple[str, ...] = ()
    new_failing_files: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()  # FILE::ID of tests that passed at base, gone after
    regressions: int = 0
    first_failures: tuple[FirstFailure, ...] = ()
    reruns: tuple[FileReruns, ...] = field(default=())


def _failing_keys(run: TestRun | None) -> set[tuple[str | None, str]]:
    if run is None or run.cases is None:
        return set()
    return {c.key for c in run.cases if c.failing}


def _passing_keys(run: TestRun | None) -> set[tuple[str | None, str]]:
    if run is None or run.cases is None:
        return set()
    return {c.key for c in run.cases if c.outcome == "passed"}


def accounting_problems(run: TestRun) -> list[str]:
    """Why a test run cannot be judged test by test: empty when it can."""
    if run.missing:
        return ["the test command could not start"]
    if run.timed_out:
        return ["the test run timed out"]
    if run.cases is None:
        return [f"{NOT_RUN if run.exit_code else 'no test report: '}{ended(run)}"]
    if not run.cases:
        return [f"the test run ran no test: {ended(run)}"]
    failing = [c for c in run.cases if c.failing]
    problems = []
    summary = run.summary
    if summary is not None and summary.interrupted:
        problems.append(
            f"{summary.runner} was interrupted: {summary.errors or 'an'} error(s) "
            "during collection, so no test ran"
        )
    if all(c.outcome in ("skipped", "error") for c in run.cases) and not problems:
        problems.append("no test ran: every case was skipped or could not run")
    unnamed = [c for c in failing if c.file is None]
    if unnamed:
        problems.append(f"{len(unnamed)} failing test(s) name no file, e.g. {unnamed[0].name!r}")
    if run.exit_code not in (0, None) and not failing:
        problems.append(f"the runner exited {run.exit_code} but its report names no failure")
    if summary is not None:
        if summary.failed_tests > len(failing):
            problems.append(
                f"{summary.runner}'s summary counts {summary.failed_tests} failed, "
                f"the report names {len(failing)}"
            )
        files = len(failing_files(run.cases))
        if summary.failed_files is not None and summary.failed_files > files:
            problems.append(
                f"{summary.runner}'s summary counts {summary.failed_files} failed files, "
                f"the report names {files}"
            )
        if summary.ran > len(run.cases) and not problems:
            problems.append(
                f"{summary.runner}'s summary counts {summary.ran} tests, "
                f"the report holds {len(run.cases)}"
            )
    return problems


NOT_RUN = "tests did not run: "


def ended(run: TestRun) -> str:
    """How a test run that left no test to judge ended, in one line: the runner's exit
    status and what it means, the runner's own error, and what became of its report
    (`pytest exited 4 (usage error): ImportError: ... (.bench/junit.xml not written)`)."""
    who = run.runner or "the test command"
    runner = RUNNERS.get(run.runner or "")
    meaning = runner.exits.get(run.exit_code) if runner and run.exit_code is not None else None
    said = f"{who} exited {run.exit_code}" + (f" ({meaning})" if meaning else "")
    if run.error:
        said += f": {run.error}"
    return f"{said} ({run.problem})" if run.problem else said


def files_to_rerun(
    base: TestRun | None, after: TestRun, known_flaky: frozenset[tuple[str, str]] = frozenset()
) -> list[str]:
    """The failing files after the arm with a failure that failed neither at base nor
    is known to be flaky, in report order."""
    if after.cases is None:
        return []
    excused = _failing_keys(base) | known_flaky
    return [
        f
        for f in failing_files(after.cases)
        if any(c.failing and c.file == f and c.key not in excused for c in after.cases)
    ]


def judge_attempt(file: str, attempt: TestRun, at_base: set[tuple[str | None, str]]) -> Attempt:
    """One rerun of one file alone."""
    if attempt.missing:
        return "missing"
    if attempt.timed_out or attempt.cases is None:
        return "fail"
    mine = [c for c in attempt.cases if c.file in (file, None)]
    if not any(c.outcome != "skipped" for c in mine):
        return "no-test"
    new = [c for c in attempt.cases if c.failing and c.key not in at_base]
    if new or (attempt.exit_code not in (0, None) and not any(c.failing for c in mine)):
        return "fail"
    return "pass"


def run_problem(run: TestRun | None) -> str | None:
    """Why a test run cannot be judged (at base: cannot be judged against), in one
    line, or None."""
    if run is None:
        return "no test run"
    return "; ".join(accounting_problems(run)) or None


def judge(
    base: TestRun | None,
    after: TestRun,
    reruns: Mapping[str, Sequence[TestRun]],
    *,
    unjudgeable: str | None = None,
    known_flaky: frozenset[tuple[str, str]] = frozenset(),
    allow_removed: bool = False,
) -> GateResult:
    """The verdict on one run's tests; `reruns` holds each rerun file's attempts.
    `unjudgeable` says why the tests at base cannot be judged against (`run_problem` of the base);
    `known_flaky` holds the (file, id) of tests the bench knows to be flaky at base;
    `allow_removed`: a test gone after the arm is listed, not failed."""
    if unjudgeable is not None:
        return GateResult(
            verdict="error",
            reasons=(f"the tests did not run at base: {unjudgeable.removeprefix(NOT_RUN)}",),
        )
    reasons = accounting_problems(after)
    if after.cases is None:
        return GateResult(verdict="fail", reasons=tuple(reasons))
    at_base = _failing_keys(base)
    excused = at_base | known_flaky
    passed_at_base = _passing_keys(base)
    new_files = files_to_rerun(base, after, known_flaky)
    settled = [f for f in failing_files(after.cases) if f not in new_files]
    known = [  # files whose new failures are all tests known to be flaky
        f
        for f in settled
        if any(c.failing and c.file == f and c.key not in at_base for c in after.cases)
    ]
    preexisting = [f for f in settled if f not in known]

    flaky, regression, missing, stats = [], [], [], []
    for file in new_files:
        attempts = [judge_attempt(file, a, excused) for a in reruns.get(file, ())]
        record = FileReruns(
            file=file,
            attempts=len(attempts),
            passes=attempts.count("pass"),
            fails=1 + attempts.count("fail"),  # the full run's failure is one too
            no_tests=attempts.count("no-test"),
            missing=not attempts or "missing" in attempts,
        )
        stats.append(record)
        if record.missing:
            missing.append(file)
            reasons.append(f"{file} cannot be run alone")
        elif record.passes:
            flaky.append(file)
        elif record.fails > 1:
            regression.append(file)
        else:
            missing.append(file)
            reasons.append(f"the rerun of {file} ran no test")
    at_base_cases = base.cases if base and base.cases else ()
    files_at_base = {c.file for c in at_base_cases}
    passing_after = _passing_keys(after)
    new_failing = [  # every test of it that passed at base passes still: only new ones fail
        f
        for f in regression
        if all(
            c.key in passing_after for c in at_base_cases if c.file == f and c.outcome == "passed"
        )
    ]
    regression = [f for f in regression if f not in new_failing]
    if regression:
        reasons.append(f"regression in {', '.join(regression)}")
    new_files = [f for f in new_failing if f not in files_at_base]
    if new_files:
        reasons.append(f"new failing test file {', '.join(new_files)}")
    new_tests = [f for f in new_failing if f in files_at_base]
    if new_tests:
        reasons.append(f"new failing test(s), none run at base, in {', '.join(new_tests)}")
    removed = gone_after(base, after)
    if removed and not allow_removed:
        reasons.append(removed_reason(removed))

    charged = [
        c for c in after.cases if c.failing and c.key not in excused and c.file not in preexisting
    ]
    order = {f: i for i, f in enumerate([*regression, *new_failing, *missing, *flaky])}
    charged.sort(key=lambda c: order.get(c.file or "", -1))
    regressions = sum(c.file in regression and c.key in passed_at_base for c in charged)
    flaky += known
    verdict: Verdict = "fail" if reasons else ("flaky-pass" if flaky else "pass")
    return GateResult(
        verdict=verdict,
        reasons=tuple(reasons),
        preexisting_files=tuple(preexisting),
        flaky_files=tuple(flaky),
        regression_files=tuple(regression),
        missing_files=tuple(missing),
        new_failing_files=tuple(new_failing),
        removed=tuple(removed),
        regressions=regressions,
        first_failures=tuple(
            FirstFailure(file=c.file, test=c.full_id, message=c.message)
            for c in charged[:FIRST_FAILURES]
        ),
        reruns=tuple(stats),
    )


def removed_reason(removed: Sequence[str]) -> str:
    """The gate's reason for tests gone after the arm: how many, the first named."""
    shown = ", ".join(removed[:FIRST_FAILURES])
    more = f" and {len(removed) - FIRST_FAILURES} more" if len(removed) > FIRST_FAILURES else ""
    return f"{len(removed)} test(s) that passed at base are gone: {shown}{more}"


def gone_after(base: TestRun | None, after: TestRun) -> list[str]:
    """`FILE::ID` of the tests that passed at base and are not in the run after the
    arm at all, in base's order; a file that fails after (one that no longer loads, say)
    is judged as failing, so its tests are not counted gone."""
    if base is None or base.cases is None or after.cases is None:
        return []
    present = {c.key for c in after.cases}
    failing = set(failing_files(after.cases))
    return [
        c.label
        for c in base.cases
        if c.outcome == "passed" and c.key not in present and c.file not in failing
    ]


def resolved(
    after: TestRun, gate: GateResult, must_pass: Sequence[str], keep_passing: Sequence[str]
) -> bool | None:
    """Whether a run resolved the bench's task: every test it names (`FILE::ID`)
    passed in the full run after the arm (a pass alone does not count) and nothing
    regressed. None when the bench names no test, or its tests cannot be judged."""
    named = [*must_pass, *keep_passing]
    if not named or gate.verdict == "error":
        return None
    outcomes = {c.label: c.outcome for c in after.cases or ()}
    return all(outcomes.get(t) == "passed" for t in named) and not gate.regression_files
