"""Reading a store as polars frames, narrowed by explicit filters on the runs.

The filters (bench, arm, executor, model, origin, run_set, since, until) select runs;
every other table is narrowed to the rows of those runs through their run ids.
Analysis reads runs through `runs_frame`, which keeps the latest attempt of each unit
of a run set (`latest_attempts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import polars as pl

from benchkit.errors import StoreError, UsageError
from benchkit.records import Run
from benchkit.store.parquet import rows_frame
from benchkit.store.reads import read_table, scan_table
from benchkit.store.rows import run_row
from benchkit.store.schema import TABLES, table_schema
from benchkit.store.store import Store

Wanted = str | Sequence[str] | None
Moment = datetime | date | str | None  # a str: ISO
KEYS = ("bench", "arm", "executor", "model", "origin", "run_set")  # a filter's columns


@dataclass(frozen=True, kw_only=True)
class RunFilter:
    """Which runs to keep: each given column among the values, started in [since, until)."""

    bench: Wanted = None
    arm: Wanted = None
    executor: Wanted = None
    model: Wanted = None
    origin: Wanted = None
    run_set: Wanted = None
    since: Moment = None
    until: Moment = None

    def conditions(self) -> list[pl.Expr]:
        found = []
        for column in KEYS:
            wanted = getattr(self, column)
            if wanted is not None:
                values = [wanted] if isinstance(wanted, str) else list(wanted)
                found.append(pl.col(column).is_in(values))
        for name, bound, after in (("since", self.since, True), ("until", self.until, False)):
            if bound is not None:
                bound = _moment(name, bound)
                moment = bound if isinstance(bound, datetime) else datetime.combine(bound, time())
                moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
                started = pl.col("started_at")
                found.append(started >= moment if after else started < moment)
        return found


def _moment(name: str, given: object) -> datetime | date:
    """A bound as given: a date, a datetime, or its ISO text (`2026-12-01`)."""
    if isinstance(given, datetime | date):
        return given
    if isinstance(given, str):
        try:
            return datetime.fromisoformat(given)
        except ValueError:
            pass
    raise UsageError(name, "", f"not a date or an ISO date and time: {given!r}")


def oldest_first(runs: pl.DataFrame) -> pl.DataFrame:
    """Runs by `started_at`, those without one first. A store's files are written in
    that order, so this is most often a check, not a sort: sorting a million rows
    copies every column."""
    if runs["started_at"].is_sorted(nulls_last=False):
        return runs
    return runs.sort("started_at", nulls_last=False, maintain_order=True)


def narrowed(runs: pl.DataFrame, chosen: RunFilter) -> pl.DataFrame:
    """Runs already read, narrowed by a filter, oldest first."""
    conditions = chosen.conditions()
    return oldest_first(runs.filter(*conditions) if conditions else runs)


def unmatched(runs: pl.DataFrame, chosen: RunFilter) -> dict[str, list[str]]:
    """Each column of the filter none of whose values a run has, with the values the
    runs have, sorted: why a filter kept no run. Empty when each matches some run
    (they match none together, or the time bounds left none)."""
    found: dict[str, list[str]] = {}
    for column in KEYS:
        wanted = getattr(chosen, column)
        if wanted is None or column not in runs.columns:
            continue
        values = {wanted} if isinstance(wanted, str) else set(wanted)
        held = {str(v) for v in runs[column].drop_nulls().unique().to_list()}
        if not values & held:
            found[column] = sorted(held)
    return found


def _known(name: str) -> None:
    if name not in TABLES:
        raise StoreError(name, "", f"no such table (tables: {', '.join(TABLES)})")


def _scan(name: str, store: Store | Path | str | None, chosen: RunFilter) -> pl.LazyFrame:
    _known(name)
    folder = Store.at(store).checked().path
    conditions = chosen.conditions()
    rows = scan_table(folder, name)
    if not conditions:
        return rows
    if name == "runs":
        return rows.filter(*conditions)
    runs = scan_table(folder, "runs").filter(*conditions)
    return rows.join(runs.select("run_id"), on="run_id", how="semi")


def scan(
    name: str = "runs",
    store: Store | Path | str | None = None,
    *,
    bench: Wanted = None,
    arm: Wanted = None,
    executor: Wanted = None,
    model: Wanted = None,
    origin: Wanted = None,
    run_set: Wanted = None,
    since: Moment = None,
    until: Moment = None,
) -> pl.LazyFrame:
    """A table of the store as a lazy polars frame, narrowed to the runs the filters
    select (each a value or a list of values; `since` and `until` bound `started_at`).
    Past 64 runs' own files in a table (not yet compacted), those are read as the
    frame is made, the compacted parts as it is collected."""
    chosen = RunFilter(
        bench=bench,
        arm=arm,
        executor=executor,
        model=model,
        origin=origin,
        run_set=run_set,
        since=since,
        until=until,
    )
    return _scan(name, store, chosen)


def table(
    name: str,
    store: Store | Path | str | None = None,
    *,
    bench: Wanted = None,
    arm: Wanted = None,
    executor: Wanted = None,
    model: Wanted = None,
    origin: Wanted = None,
    run_set: Wanted = None,
    since: Moment = None,
    until: Moment = None,
) -> pl.DataFrame:
    """Any table of a store (`runs`, `checks`, `tests`, `sites`, `sessions`, `commits`,
    `ci`, `ab`, `probes`) as a polars DataFrame, narrowed like `scan`."""
    chosen = RunFilter(
        bench=bench,
        arm=arm,
        executor=executor,
        model=model,
        origin=origin,
        run_set=run_set,
        since=since,
        until=until,
    )
    return _read(name, store, chosen)


def _read(name: str, store: Store | Path | str | None, chosen: RunFilter) -> pl.DataFrame:
    """One read of each table it needs, narrowed in memory."""
    _known(name)
    folder = Store.at(store).checked().path
    rows = read_table(folder, name)
    conditions = chosen.conditions()
    if not conditions:
        return rows
    if name == "runs":
        return rows.filter(*conditions)
    runs = read_table(folder, "runs").filter(*conditions)
    return rows.join(runs.select("run_id"), on="run_id", how="semi")


def runs(
    store: Store | Path | str | None = None,
    *,
    bench: Wanted = None,
    arm: Wanted = None,
    executor: Wanted = None,
    model: Wanted = None,
    origin: Wanted = None,
    run_set: Wanted = None,
    since: Moment = None,
    until: Moment = None,
) -> pl.DataFrame:
    """The `runs` table of a store, oldest first, narrowed like `scan`; `.to_pandas()`
    gives pandas."""
    chosen = RunFilter(
        bench=bench,
        arm=arm,
        executor=executor,
        model=model,
        origin=origin,
        run_set=run_set,
        since=since,
        until=until,
    )
    return oldest_first(_read("runs", store, chosen))


def as_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts, as `to_dicts` gives them, made a column at a time:
    polars turns a list or struct column into Python values faster a column at a time
    than a row at a time."""
    names = frame.columns
    if not names:
        return [{} for _ in range(frame.height)]
    values = [frame.get_column(name).to_list() for name in names]
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


def pick_runs(runs: pl.DataFrame, run_ids: Sequence[str]) -> pl.DataFrame:
    """The runs with these ids, in this order; an id may be a unique prefix."""
    chosen = []
    for wanted in run_ids:
        found = runs.filter(pl.col("run_id").str.starts_with(wanted))
        if found.height != 1:
            what = "no run" if found.height == 0 else f"{found.height} runs"
            verb = "has" if found.height == 0 else "have"
            raise StoreError("", "", f"{what} in the store {verb} an id starting {wanted!r}")
        chosen.append(found)
    return pl.concat(chosen, how="diagonal_relaxed") if chosen else runs.clear()


RunsLike = pl.DataFrame | pl.LazyFrame | Sequence[Run]
"""Runs as `bk.runs()` gives them, or as `bk.pilot()` returns them."""


UNIT = ("run_set", "bench", "arm", "executor", "model", "max_cost", "trial")
"""The columns of a run set's unit: each is run once, but retried."""


def latest_attempts(rows: pl.LazyFrame) -> pl.LazyFrame:
    """The runs without the earlier attempts of a unit of a run set (one that crashed,
    or failed and was retried); runs of no set (older, imported) are kept as they are."""
    names = rows.collect_schema().names()
    if not {*UNIT, "attempt"} <= set(names):
        return rows
    attempt = pl.col("attempt")
    last = attempt == attempt.max().over(UNIT)
    return rows.filter(pl.col("run_set").is_null() | attempt.is_null() | last)


def _latest(rows: pl.LazyFrame) -> tuple[pl.LazyFrame, int | None]:
    """The rows without earlier attempts (`latest_attempts`), and how many they are
    where the look counted them (None where not): the window that keeps each unit's
    latest (over seven columns, a tenth of a second on a million runs) is skipped when
    no unit was run more than once, most stores' case, as one look at the `attempt`
    column says (the count read with it)."""
    if "attempt" not in rows.collect_schema().names():
        return rows, None
    given, most = rows.select(pl.len(), pl.col("attempt").max()).collect().row(0)
    if isinstance(most, int) and most > 1:
        return latest_attempts(rows), None
    return rows, int(given)


def runs_frame(given: RunsLike, *, latest: bool = True) -> pl.LazyFrame:
    """Runs as a lazy frame of `runs` rows, whichever form they were given in; with
    `latest`, only the latest attempt of each unit of a run set."""
    return _latest(_as_frame(given))[0] if latest else _as_frame(given)


def counted_runs(given: RunsLike) -> tuple[pl.LazyFrame, int]:
    """`runs_frame(given)` and how many runs it holds: one look at the runs for both
    where no unit was run more than once."""
    rows, count = _latest(_as_frame(given))
    return rows, int(rows.select(pl.len()).collect().item()) if count is None else count


def _as_frame(given: RunsLike) -> pl.LazyFrame:
    """Runs as a lazy frame of `runs` rows, whichever form they were given in."""
    if isinstance(given, pl.DataFrame | pl.LazyFrame):
        return given.lazy()
    records = list(given)
    checks = dict.fromkeys(name for run in records for name in run.check_names)
    schema = table_schema("runs", checks)
    rows = [dict.fromkeys(schema) | run_row(run) for run in records]
    return rows_frame(rows, schema).lazy()


SITES_BY = {  # a site's row as the `sites` table keeps who covered it
    "run_id": pl.String,
    "covered": pl.Boolean,
    "covered_session": pl.Int32,
    "covered_step": pl.Int32,
    "covered_kind": pl.String,
}


def run_sites(given: RunsLike, store: Store | Path | str | None = None) -> pl.DataFrame:
    """The sites of some runs with who first covered each (`SITES_BY`): their own, as
    `bk.pilot` gave them, or the store's for runs given as a frame."""
    if isinstance(given, pl.DataFrame | pl.LazyFrame):
        ids = runs_frame(given, latest=False).select("run_id").collect()["run_id"]
        found = table("sites", store)
        absent = [c for c in SITES_BY if c not in found.columns]  # a store from before them
        found = found.with_columns(pl.lit(None, SITES_BY[c]).alias(c) for c in absent)
        return found.filter(pl.col("run_id").is_in(ids.to_list())).select(list(SITES_BY))
    rows = [
        {"run_id": r.run_id, "covered": s.covered, "covered_session": s.session}
        | {"covered_step": s.step, "covered_kind": s.by}
        for r in given
        if isinstance(r, Run)
        for s in r.sites
    ]
    return pl.DataFrame(rows, schema=SITES_BY)
