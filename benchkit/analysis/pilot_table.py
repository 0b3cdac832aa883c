"""The pilot table in GitHub markdown, for pull-request bodies. Pure: rows in, text out.

The pilot table has one row per run, labelled as the caller likes (`before`,
`after`, an arm's name; a simulated or imported run, or one that did not finish, says
so after its label): the run id, the bench and its base commit, the arm with its
executor and model; the local checks, each `ok` or `fail` with its count (`10
errors`, `1 fail`); the gate's verdict with its regressions; flaky files; sessions;
cost, with a budget stop; wall time; CI where known; coverage of the human reference
with unrelated changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchkit.analysis.markdown import NONE, Markdown, markdown_table
from benchkit.analysis.text import resolved_word, tampering
from benchkit.records import CHECKS

COUNT_WORDS = {"test": "fail"}  # `1 fail`; every other check counts errors


def check_cell(status: str | None, count: int | None, check: str) -> str:
    """`ok`, or `fail` with its count: `fail (10 errors)`, `fail (1 fail)`."""
    if status is None:
        return NONE
    if status != "fail":
        return status
    if count is None:
        return "fail"
    word = COUNT_WORDS.get(check, "error" if count == 1 else "errors")
    return f"fail ({count} {word})"


def sessions_cell(row: Mapping[str, Any]) -> str:
    count = row.get("sessions")
    if count is None:
        return NONE
    parts = [
        f"{row[key]} {word}"
        for key, word in (("sessions_accepted", "accepted"), ("sessions_rejected", "rejected"))
        if row.get(key) is not None
    ]
    rounds = row.get("feedback_rounds")
    if rounds is not None:
        parts.append(f"{rounds} feedback round{'s' if rounds != 1 else ''}")
    return f"{count} ({', '.join(parts)})" if parts else str(count)


def cost_cell(cost: float | None) -> str:
    if cost is None:
        return NONE
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"


def wall_cell(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s"


def gate_cell(row: Mapping[str, Any]) -> str:
    """The gate's verdict on the tests, with its regressions (`fail, 1 regression`)
    and every reason it gave; `-` when it did not judge."""
    verdict = row.get("test_verdict")
    if verdict is None:
        return NONE
    regressions = row.get("regressions")
    cell = str(verdict)
    if regressions is not None and verdict != "error":  # error: the tests did not run at base
        cell += f", {regressions} regression{'' if regressions == 1 else 's'}"
    reasons = row.get("test_reasons")
    if reasons:  # every reason of the gate reaches the table
        cell += f" ({reasons})"
    if said := resolved_word(row):
        cell += f"; resolved: {said}"
    if touched := tampering(row):
        cell += f"; tampered: {touched}"
    return cell


def coverage_cell(row: Mapping[str, Any]) -> str:
    total = row.get("sites_total")
    if total is None:
        return NONE
    unrelated = row.get("sites_unrelated")
    return (
        f"{row.get('sites_covered')}/{total}, {NONE if unrelated is None else unrelated} unrelated"
    )


def _value(value: object) -> str:
    return NONE if value is None or value == "" else str(value)


def label_cell(row: Mapping[str, Any], label: str) -> str:
    """The label, then what the row's figures are: a simulated or imported run, and a
    run that did not finish (`failed: patch`, `interrupted`), whose dashes would
    otherwise read as a run with nothing to show."""
    said = [str(row["origin"])] if row.get("origin") in ("simulated", "imported") else []
    status, kind = row.get("status"), row.get("failure_kind")
    if status not in (None, "", "ok"):
        said.append(f"{status}: {kind}" if kind not in (None, "", status) else str(status))
    return f"{label} ({', '.join(said)})" if said else label


def arm_cell(row: Mapping[str, Any]) -> str:
    """The arm with its executor and model: `tool-v2 (cli, small)`."""
    setup = [str(row[k]) for k in ("executor", "model") if row.get(k) not in (None, "")]
    return f"{_value(row.get('arm'))} ({', '.join(setup)})" if setup else _value(row.get("arm"))


def budget_cell(row: Mapping[str, Any]) -> str:
    """A run's cost: `computed` where a price table made it from the tool's tokens
    (an estimate, not the tool's word), and whether it went over its cap."""
    cell = cost_cell(row.get("cost_usd"))
    if row.get("cost_source") == "computed" and row.get("cost_usd") is not None:
        cell += " computed"
    return f"{cell}, over budget" if row.get("over_budget") else cell


def pilot_row(row: Mapping[str, Any], label: str) -> list[str]:
    flaky = row.get("flaky_files") or []
    sha = row.get("base_sha")
    return [
        label_cell(row, label),
        _value(row.get("run_id")),
        _value(row.get("bench")),
        str(sha)[:10] if sha else NONE,
        arm_cell(row),
        *[check_cell(row.get(f"{c}_status"), row.get(f"{c}_count"), c) for c in CHECKS],
        gate_cell(row),
        ", ".join(flaky) if flaky else "none",
        sessions_cell(row),
        budget_cell(row),
        wall_cell(row.get("wall_s")),
        _value(row.get("ci_status")),
        coverage_cell(row),
    ]


PILOT_HEADER = (
    "run",
    "run id",
    "bench",
    "base",
    "arm (executor, model)",
    *CHECKS,
    "gate",
    "flaky files",
    "sessions",
    "cost",
    "wall",
    "CI",
    "coverage vs human",
)


def pilot_table(rows: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> Markdown:
    """The pilot table: one row per run, with the given labels."""
    body = [pilot_row(row, label) for row, label in zip(rows, labels, strict=True)]
    return Markdown(markdown_table(PILOT_HEADER, body))
