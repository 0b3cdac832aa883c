"""Run sets: which pilots of a matrix a set still needs, decided from what it holds.

A set (`--set NAME`, `default` without it) is a growing collection of units, each
(bench, arm, executor, model, max_cost, trial). A matrix run in a set runs only its
units the set has not finished: the same command twice adds nothing, `--trials 3`
after two trials runs the third. A unit whose last attempt crashed or was
interrupted is attempted again; one that failed for a reason worth retrying is
attempted again with `retry_failed`. Its earlier attempts stay recorded, and analysis
takes the latest (`benchkit.store.query.latest_attempts`). A unit whose bench file,
arm file or benchkit changed since the set ran it is refused (`changed`).

Pure decisions over the set's recorded rows; `benchkit.run.launch` reads and runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from benchkit.run.plan import Plan, Unit

Row = Mapping[str, Any]

FINISHED = frozenset({"ok", "failed", "timeout"})  # a resumed set does not run these again


@dataclass(frozen=True, kw_only=True)
class Needed:
    """What a set still needs of a matrix: the plans to run (each with its attempt),
    and what it has of the others."""

    plans: list[Plan]
    recorded: tuple[str, ...]  # run ids of the units it has finished
    running: int  # units at work in another benchkit right now


def _unit(row: Row) -> Unit:
    return (
        row["bench"],
        row["arm"],
        row["executor"],
        row["model"],
        row["max_cost"],
        row["trial"],
    )


def _order(row: Row) -> tuple[int, str]:
    return row["attempt"] or 0, str(row["started_at"])


def latest(rows: Sequence[Row]) -> dict[Unit, Row]:
    """The latest attempt of each unit among a set's rows."""
    found: dict[Unit, Row] = {}
    for row in rows:
        unit = _unit(row)
        if unit not in found or _order(row) >= _order(found[unit]):
            found[unit] = row
    return found


def _unrecorded_model(plan: Plan) -> Unit | None:
    """The unit as a run recorded it before the model an arm file names was recorded
    as the run's (an empty model), when that is where the plan's model comes from."""
    named = plan.arm.model
    if not named or plan.spec.model != named:
        return None
    bench, arm, executor, _, max_cost, trial = plan.unit
    return bench, arm, executor, "", max_cost, trial


def needed(plans: Sequence[Plan], rows: Sequence[Row], *, retry_failed: bool = False) -> Needed:
    """The plans whose unit the set (its `rows`) has not finished, each as the next
    attempt at its unit; with `retry_failed`, also those whose latest attempt failed
    for a reason worth retrying (`retryable`); and every rerun (`rerun_of`)."""
    last = latest(rows)
    chosen, recorded, running = [], [], 0
    for p in plans:
        earlier = _unrecorded_model(p)
        row = last.get(p.unit)
        if row is None and earlier is not None and earlier in last:
            row = last[earlier]  # its next attempt is recorded as its unit was
            p = replace(p, spec=replace(p.spec, model=""))
        if row is None:
            chosen.append(p)
            continue
        status = row["status"]
        again = status not in FINISHED and status != "running"
        retry = retry_failed and status in ("failed", "timeout") and bool(row["retryable"])
        if again or retry or p.spec.rerun_of:
            spec = replace(p.spec, attempt=(row["attempt"] or 1) + 1)
            chosen.append(replace(p, spec=spec))
        elif status == "running":
            running += 1
        else:
            recorded.append(row["run_id"])
    return Needed(plans=chosen, recorded=tuple(recorded), running=running)


def changed(plans: Sequence[Plan], rows: Sequence[Row], version: str) -> str | None:
    """What changed since the set ran the plans' bench and arm (the bench file, the
    arm's file or patch and vars, the checks asked for, benchkit's version), in one
    line; None when nothing did. An older run that knew no digest is taken as it is."""
    newest: dict[tuple[str, str], Row] = {}
    for row in sorted(rows, key=lambda r: str(r["started_at"])):
        newest[row["bench"], row["arm"]] = row
    for p in plans:
        last = newest.get((p.bench.name, p.spec.arm))
        if last is None or p.spec.rerun_of:  # a rerun runs what is there now
            continue
        row = last
        what = f"{p.bench.name} {p.spec.arm}"
        if row["bench_digest"] and row["bench_digest"] != p.bench_digest:
            return f"{what}: the bench file {p.bench.path} changed since its runs in this set"
        if row["arm_digest"] and row["arm_digest"] != p.arm_digest:
            return f"{what}: the arm's file or vars changed since its runs in this set"
        asked = row["only_checks"]
        if asked is not None and list(asked) != list(p.spec.checks):
            was, now = ", ".join(asked) or "all", ", ".join(p.spec.checks) or "all"
            return f"{what}: its runs in this set ran checks {was}, this asks for {now}"
        if row["benchkit_version"] and row["benchkit_version"] != version:
            return (
                f"{what}: its runs in this set were made by benchkit "
                f"{row['benchkit_version']}, this is {version}"
            )
    return None


def fresh_name(name: str, taken: set[str]) -> str:
    """A set name like `name` that no run holds yet: `name-2`, `name-3`, ..."""
    stem = re.sub(r"-\d+$", "", name)
    number = 2
    while f"{stem}-{number}" in taken:
        number += 1
    return f"{stem}-{number}"
