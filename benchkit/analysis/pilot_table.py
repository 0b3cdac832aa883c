"""The pilot table in GitHub markdown, for pull-request bodies. Pure: rows in, text out.

The pilot table has one row per run, labelled as the caller likes (`before`,
`after`, an arm's name): executor; the local checks, each `ok` or `fail` with its
count (`10 errors`, `1 fail`); flaky files; sessions; cost; wall time; CI where
known; coverage of the human reference with unrelated changes and regressions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchkit.analysis.markdown import NONE, Markdown, markdown_table

CHECKS = ("install", "typecheck", "lint", "test", "build")
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


def coverage_cell(row: Mapping[str, Any]) -> str:
    total = row.get("sites_total")
    if total is None:
        return NONE
    regressions = row.get("regressions")
    verdict = row.get("test_verdict")
    if regressions:
        tests = f"{regressions} regression{'s' if regressions != 1 else ''}"
    elif verdict == "fail":
        tests = "tests fail"
    elif verdict in ("error", None):  # error: the tests did not run at base
        tests = "tests not judged"
    else:
        tests = "no regressions"
    reasons = row.get("test_reasons")
    if reasons:  # every reason of the gate reaches the table
        tests += f" ({reasons})"
    return f"{row.get('sites_covered')}/{total}, {row.get('sites_unrelated')} unrelated, {tests}"


def pilot_row(row: Mapping[str, Any], label: str) -> list[str]:
    flaky = row.get("flaky_files") or []
    cost = row.get("cost_usd")
    return [
        label,
        str(row.get("executor") or NONE),
        *[check_cell(row.get(f"{c}_status"), row.get(f"{c}_count"), c) for c in CHECKS],
        ", ".join(flaky) if flaky else "none",
        sessions_cell(row),
        cost_cell(cost),
        wall_cell(row.get("wall_s")),
        str(row.get("ci_status") or NONE),
        coverage_cell(row),
    ]


PILOT_HEADER = (
    "run",
    "executor",
    *CHECKS,
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
