"""Why an arm failed: a kind read from its exit, its report and its log, and whether
running it again may help. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchkit.arm_report import ArmReport

# Searched in this order, in the report's error and the log's tail (case-insensitive).
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "budget",
        re.compile(
            r"exceeded usd budget|budget (was )?(exceeded|exhausted|reached)|over (the )?budget|"
            r"error_max_budget|credit balance is too low|max[_ -]cost (exceeded|reached)"
        ),
    ),
    (
        "auth",
        re.compile(
            r"\b401\b|\b403\b|unauthori[sz]ed|authentication|invalid (x-)?api[ _-]?key|"
            r"api key|please run /login|not logged in|permission denied \(publickey\)"
        ),
    ),
    ("rate_limit", re.compile(r"\b429\b|\b529\b|rate[ _-]?limit|overloaded|too many requests")),
    (
        "turn_limit",
        re.compile(r"error_max_turns|max(imum)? (session )?turns|turn limit|fatalturnlimited"),
    ),
    (
        "context_overflow",
        re.compile(
            r"prompt is too long|context[ _-]?(length|window)|maximum context|"
            r"context_length_exceeded|too many tokens"
        ),
    ),
)
RETRYABLE = {
    "timeout": True,
    "interrupted": True,
    "rate_limit": True,
    "crash": False,
    "budget": False,
    "auth": False,
    "turn_limit": False,
    "context_overflow": False,
    "other": False,
}
LOG_TAIL = 4000


@dataclass(frozen=True, kw_only=True)
class Failure:
    kind: str
    retryable: bool
    detail: str


def classify(
    *,
    exit_code: int | None,
    timed_out: bool,
    interrupted: bool,
    report: ArmReport,
    log: str,
    missing: str | None = None,
) -> Failure | None:
    """The failure of an arm's command, or None when it succeeded; `missing`: the
    program that could not be started."""
    if interrupted:
        return Failure(kind="interrupted", retryable=True, detail="benchkit was interrupted")
    if missing is not None:
        return Failure(
            kind="other",
            retryable=False,
            detail=f"cannot start {missing}: not found or not executable",
        )
    if timed_out:
        return Failure(kind="timeout", retryable=True, detail="the arm timed out")
    if report.over_budget:
        return Failure(
            kind="budget", retryable=False, detail=report.error or "the arm stopped at its budget"
        )
    if exit_code == 0 and report.error is None:
        return None
    text = f"{report.error or ''}\n{log[-LOG_TAIL:]}".lower()
    for kind, pattern in PATTERNS:
        if pattern.search(text):
            return Failure(kind=kind, retryable=RETRYABLE[kind], detail=_detail(report, log, kind))
    if exit_code is not None and exit_code != 0:
        how = f"killed by signal {-exit_code}" if exit_code < 0 else f"exited {exit_code}"
        said = f": {report.error[:300]}" if report.error else ""
        return Failure(kind="crash", retryable=False, detail=f"the arm {how}{said}")
    return Failure(
        kind="other", retryable=False, detail=report.error or "the arm reported an error"
    )


def _detail(report: ArmReport, log: str, kind: str) -> str:
    if report.error:
        return report.error[:300]
    lines = [line for line in log.strip().splitlines() if line.strip()]
    return f"{kind}: {lines[-1][:300]}" if lines else kind
