"""The budget stop as a counterfactual, data in, data out: the seed's two cases to
the cent, each rule, and the runs it cannot replay; and who covered a run's sites."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.analysis.budget import budget, replay
from benchkit.analysis.text import covered_by
from benchkit.arm_report import ArmCommit, SessionReport
from benchkit.arms.attribution import by_session, first_steps
from benchkit.errors import UsageError
from benchkit.records import SiteResult
from benchkit.store.store import Store
from tests.store.test_schema import a_full_run


def test_the_seeds_two_cases_come_back_to_the_cent() -> None:
    # three sessions at $0.30 on a $1 cap: the fourth is not started with $0.10 left
    assert replay([0.30] * 4, 1.0, "mean").started == 3
    assert replay([0.30] * 4, 1.0, "mean").spend == pytest.approx(0.90)
    assert replay([0.30] * 4, 1.0, "none").crossed  # today's: it started, and crossed
    # $0.10 a session on a $0.25 cap: 2 rounds, $0.20, where today's rule spent $0.30
    tenth = replay([0.10] * 3, 0.25, "mean")
    assert (tenth.started, round(tenth.spend, 2), tenth.crossed) == (2, 0.20, False)
    today = replay([0.10] * 3, 0.25, "none")
    assert (today.started, round(today.spend, 2), today.crossed) == (3, 0.30, True)


def test_each_rule_stops_where_it_says() -> None:
    costs = [0.05, 0.40, 0.10, 0.10]  # on $0.70: $0.25 left before the third
    assert replay(costs, 0.70, "last").started == 2  # the last cost $0.40 > $0.25
    assert replay(costs, 0.70, "mean").started == 3  # $0.225; then $0.15 < $0.183
    assert replay(costs, 0.70, "none").started == 4
    assert replay([0.5, 0.5, 0.5], 1.0, "none").started == 2  # nothing left: no third
    assert replay([0.25, 0.25], 0.5, "mean").started == 2  # $0.25 left, mean $0.25: a tie starts
    assert replay([], 1.0, "mean").started == 0


def test_runs_it_cannot_replay_say_why(tmp_path: Path) -> None:
    full = a_full_run()
    sessions = [SessionReport(session=n, status="accepted", cost_usd=0.2) for n in range(3)]
    runs = [
        replace(full, run_id="none", report=replace(full.report, session_list=())),
        replace(
            full,
            run_id="unpriced",
            report=replace(full.report, session_list=(sessions[0], SessionReport(session=1))),
        ),
        replace(full, run_id="three", report=replace(full.report, session_list=tuple(sessions))),
    ]
    Store(tmp_path).record(runs[0])
    for run in runs[1:]:
        Store(tmp_path).record(run)
    for given, store in ((runs, None), (benchkit.runs(tmp_path), tmp_path)):
        replayed = budget(given, cap=0.5, rule="mean", store=store, latest=False)
        rows = {r["run_id"]: r for r in replayed.frame.to_dicts()}
        assert rows["none"]["note"] == "no sessions recorded"
        assert rows["unpriced"]["note"] == "session 2 has no cost"
        three = rows["three"]
        assert (three["started"], three["lost_accepted"], three["note"]) == (2, [2], None)
        assert three["lost_sites"] == 0  # its one covered site: session 0's (a_full_run)
        text = str(replayed)
        assert "| none | b | a | 0 | - (no sessions recorded) | - | - | - | - | - |" in text
        assert text.strip().endswith(
            "Under the mean rule on a $0.50 cap, 1 run replayed: 2 of 3 sessions started, "
            "$0.40 of $0.60 spent, 0 over the cap (recorded: 1), 1 accepted session lost; "
            "2 not replayed (see each run's note)."
        )
    elsewhere = tmp_path / "other"
    Store(elsewhere).record(replace(full, run_id="other"))
    with pytest.raises(UsageError, match="holds none of the runs given: name their store"):
        budget(benchkit.runs(tmp_path), cap=1.0, store=elsewhere)
    frame = pl.DataFrame({"run_id": ["a"], "bench": ["demo"], "arm": ["x"]})
    with pytest.raises(UsageError, match="no rule 'median'"):
        budget(frame, cap=1.0, rule="median")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"a cap is more than \$0, not 0"):
        budget(frame, cap=0)


def test_sites_go_to_the_session_whose_commit_first_covered_them() -> None:
    def site(n: int, file: str, covered: bool = True) -> SiteResult:
        return SiteResult(
            site=n, file=file, kind="lines", start=n, length=1, covered=covered, matched=False
        )

    sites = [site(0, "a.py"), site(1, "a.py"), site(2, "b.py"), site(3, "b.py", covered=False)]
    sessions = [
        SessionReport(session=0, kind="mechanical"),
        SessionReport(session=1, kind="agent"),
    ]
    commits = [ArmCommit(step=i, sha=f"{i}" * 40, subject="", files=(), session=i) for i in (0, 1)]
    first = first_steps([frozenset({2}), frozenset({0, 1, 2})])  # b.py's by the rules first
    found = by_session(sites, sessions, commits, first)
    assert [(s.session, s.step, s.by) for s in found] == [
        (1, 1, "agent"),
        (1, 1, "agent"),
        (0, 0, "mechanical"),
        (None, None, None),  # not covered: nobody's
    ]
    rows: list[dict[str, object]] = [
        {"covered": s.covered, "covered_session": s.session, "covered_step": s.step}
        | {"covered_kind": s.by}
        for s in found
    ]
    assert covered_by(rows) == "the rules covered 1 site, session 2 covered 2"
    # no commits: the tool's own list of each session's files
    edited = [
        SessionReport(session=0, files=("b.py",), files_from="tool"),
        SessionReport(session=1, files=("a.py", "b.py"), files_from="tool"),
    ]
    assert [s.session for s in by_session(sites, edited)] == [1, 1, 0, None]
    assert [s.session for s in by_session(sites, edited[:1])] == [None, None, 0, None]
    assert [s.session for s in by_session(sites, [SessionReport(session=0)])] == [0, 0, 0, None]
    assert [s.session for s in by_session(sites, [])] == [None] * 4
    steps_only = [{"covered": True, "covered_session": None, "covered_step": 4}] * 2
    assert covered_by([*steps_only, {"covered": True}]) == (
        "commit 5 covered 2 sites, 1 by no session known"
    )
    assert covered_by([{"covered": True}]) is None
