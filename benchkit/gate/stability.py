"""What K runs of a test suite at base and with the human reference say about each
test: failing every time, passing every time, or varying. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchkit.gate.verdict import TestRun


@dataclass(frozen=True, kw_only=True)
class Outcomes:
    """Each test's outcomes over the runs of one side, by `FILE::ID`."""

    runs: int
    by_test: dict[str, list[str]]

    def failing_every_run(self) -> list[str]:
        return sorted(t for t, o in self.by_test.items() if _all(o, self.runs, failing=True))

    def passing_every_run(self) -> list[str]:
        return sorted(t for t, o in self.by_test.items() if _all(o, self.runs, failing=False))

    def varied(self) -> dict[str, int]:
        """Tests that failed in some runs and passed in others: how often they failed."""
        found = {}
        for test, outcomes in self.by_test.items():
            failed = sum(o in ("failed", "error") for o in outcomes)
            if 0 < failed < self.runs and "passed" in outcomes:
                found[test] = failed
        return dict(sorted(found.items()))


def _all(outcomes: list[str], runs: int, *, failing: bool) -> bool:
    wanted = ("failed", "error") if failing else ("passed",)
    return len(outcomes) == runs and all(o in wanted for o in outcomes)


def outcomes(runs: Sequence[TestRun]) -> Outcomes:
    by_test: dict[str, list[str]] = {}
    for run in runs:
        for case in run.cases or ():
            by_test.setdefault(case.label, []).append(case.outcome)
    return Outcomes(runs=len(runs), by_test=by_test)
