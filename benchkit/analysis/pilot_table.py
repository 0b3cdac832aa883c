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
from benchkit.analysis.text import cap_words, money, resolved_word, tampering
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
    """How many sessions, and how they ended: `1: 1 accepted; 0 feedback rounds`, `4:
    3 rejected on tests, 1 stopped at the budget` (the sessions' reasons where the
    tool, or a published table, gave them; else the counts, with the sessions the
    counts leave out of a run stopped at its cap)."""
    count = row.get("sessions")
    if count is None:
        return NONE
    reasons = row.get("session_reasons")
    parts = [str(reasons)] if reasons else _ended(row, count)
    rounds = row.get("feedback_rounds")
    said = f"{count}: {', '.join(parts)}" if parts else str(count)
    if rounds is not None:
        said += f"; {rounds} feedback round{'s' if rounds != 1 else ''}"
    return said


def _ended(row: Mapping[str, Any], count: int) -> list[str]:
    """The sessions accepted and rejected (a count of 0 left out, unless all are), and
    those the counts leave: the last stopped at the budget where the run went over
    its cap, the others not judged."""
    known = {
        word: row[key]
        for key, word in (("sessions_accepted", "accepted"), ("sessions_rejected", "rejected"))
        if row.get(key) is not None
    }
    parts = [f"{n} {word}" for word, n in known.items() if n]
    left = count - sum(known.values()) if len(known) == 2 else 0
    if left > 0 and row.get("over_budget"):  # the one that crossed the cap
        parts.append("1 stopped at the budget")
        left -= 1
    if left > 0:
        parts.append(f"{left} not judged")
    if not parts and known:
        parts = [f"{n} {word}" for word, n in known.items()]
    return parts


def cost_cell(cost: float | None) -> str:
    return NONE if cost is None else money(cost)


def wall_cell(seconds: float | None) -> str:
    """Seconds, as a pilot table gives them: `1.5 s`, `234 s`."""
    if seconds is None:
        return NONE
    return f"{seconds:.1f} s" if seconds < 60 else f"{round(seconds)} s"


def gate_cell(row: Mapping[str, Any], *, regressions: bool = False) -> str:
    """The gate's verdict on the tests, with `regressions` its regressions (`fail, 1
    regression`: the run page's; the pilot table's are in its coverage column) and
    every reason it gave; `-` when it did not judge."""
    verdict = row.get("test_verdict")
    if verdict is None:
        return NONE
    cell = str(verdict)
    count = row.get("regressions")
    if regressions and count is not None and verdict != "error":  # error: no base tests
        cell += f", {count} regression{'' if count == 1 else 's'}"
    reasons = row.get("test_reasons")
    if reasons:  # every reason of the gate reaches the table
        cell += f" ({reasons})"
    if said := resolved_word(row):
        cell += f"; resolved: {said}"
    if touched := tampering(row):
        cell += f"; tampered: {touched}"
    return cell


def coverage_cell(row: Mapping[str, Any]) -> str:
    """Sites covered of the human's, unrelated changes (`-`: not known, never 0), and
    the regressions where known: `10/51, 0 unrelated, no regressions` (`-, 3
    regressions` for a run whose sites are not known)."""
    total = row.get("sites_total")
    unrelated = _value(row.get("sites_unrelated"))
    cell = NONE if total is None else f"{row.get('sites_covered')}/{total}, {unrelated} unrelated"
    regressions = row.get("regressions")
    if regressions is not None and row.get("test_verdict") != "error":  # error: no base tests
        cell += f", {regressions or 'no'} regression{'' if regressions == 1 else 's'}"
    return cell


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
    (an estimate, not the tool's word), its cap, and whether it went over:
    `$1.02 on a $1 cap, over budget`."""
    cell = cost_cell(row.get("cost_usd"))
    if row.get("cost_source") == "computed" and row.get("cost_usd") is not None:
        cell += " computed"
    cap = row.get("max_cost")
    if cap is not None and row.get("cost_usd") is not None:
        cell += f" on a {cap_words(cap)} cap"
    return f"{cell}, over budget" if row.get("over_budget") else cell


def ci_cell(row: Mapping[str, Any]) -> str:
    """CI on the change in words (`1 pass, 0 fail (fork PR)`), else its status."""
    return _value(row.get("ci") or row.get("ci_status"))


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
        ci_cell(row),
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
