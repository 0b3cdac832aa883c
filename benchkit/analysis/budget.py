"""The budget stop as a counterfactual: every run's recorded sessions replayed, in
order, under a stopping rule, to say what a rule would have spent and lost.

A tool that works in feedback rounds starts a session while its cap allows. Today's
rule (`none`) starts one whenever anything is left, so the last session can cross
the cap: after three sessions at $0.30 on a $1 cap, the fourth starts with $0.10
left. The `mean` rule does not start a session when what is left is below the mean
cost of the run's sessions so far; `last`, below the last session's cost. The
replay is pure: the recorded costs in, what would have run out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import polars as pl

from benchkit.analysis.markdown import NONE, Markdown, markdown_table
from benchkit.analysis.text import cap_words, money
from benchkit.errors import UsageError
from benchkit.records import Run
from benchkit.store.query import RunsLike, run_sites, runs_frame, table
from benchkit.store.store import Store

Rule = Literal["mean", "last", "none"]
RULES: tuple[Rule, ...] = get_args(Rule)
TIE = 1e-9  # dollars: costs are sums of floats ($1 - $0.90 is $0.0999...); a tie starts


@dataclass(frozen=True, kw_only=True)
class Replayed:
    """One run's sessions under a rule: how many it would have started, what it would
    have spent, and whether that crossed the cap."""

    started: int
    spend: float
    crossed: bool


def replay(costs: Sequence[float], cap: float, rule: Rule) -> Replayed:
    """The sessions a rule starts, in order, with these costs: the first always; each
    next one only while something is left of the cap (`none`), and not when what is
    left is below the mean cost so far (`mean`) or the last one's (`last`)."""
    spent, started = 0.0, 0
    for n, cost in enumerate(costs):
        left = cap - spent
        if n and left <= TIE:
            break
        if n and rule == "mean" and left < sum(costs[:n]) / n - TIE:
            break
        if n and rule == "last" and left < costs[n - 1] - TIE:
            break
        spent += cost
        started += 1
    return Replayed(started=started, spend=spent, crossed=spent > cap + TIE)


@dataclass(frozen=True, kw_only=True)
class Budget:
    """The replay of some runs under one rule and cap: `frame` has a row a run; its
    markdown a table and the sum."""

    frame: pl.DataFrame
    cap: float
    rule: Rule

    def to_markdown(self) -> Markdown:
        header = (
            "run",
            "bench",
            "arm",
            "sessions recorded",
            f"started ({self.rule})",
            "spend",
            "recorded spend",
            f"over the {cap_words(self.cap)} cap",
            "accepted sessions lost",
            "sites lost",
        )
        body = [_row(r) for r in self.frame.to_dicts()]
        return Markdown(f"{markdown_table(header, body)}\n\n{self.summary()}\n")

    def summary(self) -> str:
        """The sum over the runs it could replay, and the runs it could not."""
        rows = self.frame.to_dicts()
        done = [r for r in rows if r["started"] is not None]
        said = (
            f"Under the {self.rule} rule on a {cap_words(self.cap)} cap, "
            f"{len(done)} run{'' if len(done) == 1 else 's'} replayed"
        )
        if done:
            started = sum(r["started"] for r in done)
            recorded = sum(r["sessions"] for r in done)
            spend = sum(r["spend"] for r in done)
            was = sum(r["recorded_spend"] for r in done)
            crossed = sum(r["crossed"] for r in done)
            crossed_was = sum(r["recorded_spend"] > self.cap + TIE for r in done)
            lost = sum(len(r["lost_accepted"]) for r in done)
            said += (
                f": {started} of {recorded} sessions started, {money(spend)} of {money(was)} "
                f"spent, {crossed} over the cap (recorded: {crossed_was}), {lost} accepted "
                f"session{'' if lost == 1 else 's'} lost"
            )
        skipped = len(rows) - len(done)
        if skipped:
            said += f"; {skipped} not replayed (see each run's note)"
        return said + "."

    def __str__(self) -> str:
        return str(self.to_markdown())

    def _repr_markdown_(self) -> str:
        return str(self.to_markdown())


def _row(r: Mapping[str, Any]) -> list[str]:
    lost = r["lost_accepted"] or []
    sites = r["lost_sites"]
    if r["started"] is None:
        cells = [NONE] * 5 + [NONE if sites is None else str(sites)]
        cells[0] = f"{NONE} ({r['note']})"
    else:
        cells = [
            str(r["started"]),
            money(r["spend"]),
            money(r["recorded_spend"]),
            "yes" if r["crossed"] else "no",
            f"{len(lost)} (session {', '.join(str(s + 1) for s in lost)})" if lost else "0",
            NONE if sites is None else str(sites),
        ]
    return [str(r["run_id"]), str(r["bench"]), str(r["arm"]), str(r["sessions"]), *cells]


def _sessions_of(runs: RunsLike, ids: list[str], store: Store | Path | str | None) -> pl.DataFrame:
    """Each run's recorded sessions: from the runs themselves when `bk.pilot` gave
    them, else from the store (which must hold the runs)."""
    columns = {"run_id": pl.String, "session": pl.Int32, "status": pl.String}
    if not isinstance(runs, pl.DataFrame | pl.LazyFrame):
        rows = [
            {"run_id": r.run_id, "session": s.session, "status": s.status, "cost_usd": s.cost_usd}
            for r in runs
            if isinstance(r, Run)
            for s in r.report.session_list
        ]
        return pl.DataFrame(rows, schema={**columns, "cost_usd": pl.Float64})
    held = set(table("runs", store)["run_id"].to_list()) if ids else set()
    if ids and not held.intersection(ids):
        where = Store.at(store).path
        raise UsageError("store", "", f"{where} holds none of the runs given: name their store")
    found = table("sessions", store)
    return found.filter(pl.col("run_id").is_in(ids)) if found.height else found


def replayed(
    run: Mapping[str, Any],
    sessions: pl.DataFrame,
    covered_by: pl.Series,
    cap: float,
    rule: Rule,
) -> dict[str, Any]:
    """One run's row: its recorded sessions (in order) replayed under the rule, the
    accepted ones it would not have started, and the sites (`covered_by`: the session
    that first covered each of its covered sites) those sessions covered first; or a
    note saying why it cannot be replayed. Pure."""
    costs, statuses = sessions["cost_usd"].to_list(), sessions["status"].to_list()
    row: dict[str, Any] = {**run, "sessions": len(costs), "note": None, "lost_accepted": []}
    row |= dict.fromkeys(("started", "spend", "recorded_spend", "crossed", "lost_sites"))
    if not costs:
        return row | {"note": "no sessions recorded"}
    if None in costs:
        return row | {"note": f"session {costs.index(None) + 1} has no cost"}
    done = replay(costs, cap, rule)
    never = sessions["session"].to_list()[done.started :]  # the sessions it would not start
    row |= {
        "started": done.started,
        "spend": done.spend,
        "recorded_spend": sum(costs),
        "crossed": done.crossed,
        "lost_accepted": [
            s
            for s, status in zip(sessions["session"], statuses, strict=True)
            if s in never and (status or "").strip().lower() == "accepted"
        ],
    }
    if covered_by.is_not_null().any():
        row["lost_sites"] = int(covered_by.is_in(never).sum())
    return row


BUDGET_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "run_id": pl.String,
    "bench": pl.String,
    "arm": pl.String,
    "sessions": pl.Int64,
    "started": pl.Int64,
    "spend": pl.Float64,
    "recorded_spend": pl.Float64,
    "crossed": pl.Boolean,
    "lost_accepted": pl.List(pl.Int64),
    "lost_sites": pl.Int64,
    "note": pl.String,
}


def budget(
    runs: RunsLike,
    *,
    cap: float = 1.0,
    rule: Rule = "mean",
    store: Store | Path | str | None = None,
    latest: bool = True,
) -> Budget:
    """Replay every run's recorded sessions, in order, under a stopping rule (`mean`,
    `last` or `none`) and a cap in USD: per run, the sessions it would have started,
    its spend, whether it crossed the cap, and the accepted sessions (and the sites
    they first covered) it would have lost. The runs as `bk.runs()` or `bk.pilot()`
    gave them (with `latest`, only each unit's latest attempt); for a frame, their
    sessions and sites are read from `store`, which must hold them."""
    if rule not in RULES:
        raise UsageError("rule", "", f"no rule {rule!r} (known: {', '.join(RULES)})")
    if not cap > 0:
        raise UsageError("cap", "", f"a cap is more than $0, not {cap!r}")
    frame = runs_frame(runs, latest=latest).select("run_id", "bench", "arm").collect()
    ids = frame["run_id"].to_list()
    sessions = _sessions_of(runs, ids, store).sort("session")
    sites = run_sites(runs, store).filter(pl.col("covered"))
    by_run = {k[0]: g for k, g in sessions.group_by("run_id")}  # once, not a filter a run
    covered = {k[0]: g["covered_session"] for k, g in sites.group_by("run_id")}
    none = sessions.clear()
    rows = [
        replayed(
            run,
            by_run.get(run["run_id"], none),
            covered.get(run["run_id"], pl.Series([], dtype=pl.Int32)),
            cap,
            rule,
        )
        for run in frame.to_dicts()
    ]
    return Budget(frame=pl.DataFrame(rows, schema=BUDGET_SCHEMA), cap=cap, rule=rule)
