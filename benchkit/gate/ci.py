"""CI on an arm's change: the forge's checks as the GitHub CLI gives them, and the
words of the pilot table's CI column. Pure: text in, records and words out.

A pull request's checks come from `gh pr checks URL --json ...`, each in a bucket
(pass, fail, pending, skipping, cancel); a fork's push from `gh run list -R FORK
--commit SHA --json ...`, each run a status (queued, in_progress, completed) and a
conclusion, put in the same buckets here. The column reads `1 pass, 0 fail (fork
PR)`, `fail at typecheck` (the first check to fail), `pending (timed out after 10
min)` or `none`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

Bucket = Literal["pass", "fail", "pending", "skipping", "cancel"]
BUCKETS: tuple[Bucket, ...] = ("pass", "fail", "pending", "skipping", "cancel")
CiStatus = Literal["ok", "fail", "pending", "none"]
CI_STATUSES: tuple[CiStatus, ...] = ("ok", "fail", "pending", "none")
PR_FIELDS = "name,state,bucket,workflow,startedAt,completedAt,link"
RUN_FIELDS = "name,status,conclusion,workflowName,url,startedAt,updatedAt"
NO_CHECKS = "no checks reported"  # what gh says of a pull request with none


@dataclass(frozen=True, kw_only=True)
class CiCheck:
    """One check the forge ran on the arm's change (a job of a workflow, or a fork's
    workflow run), as `gh` said."""

    name: str
    workflow: str | None
    state: str  # the forge's word: SUCCESS, FAILURE, IN_PROGRESS; a run's status/conclusion
    bucket: Bucket
    started_at: datetime | None
    completed_at: datetime | None
    link: str | None


class CiReadError(ValueError):
    """What gh printed is not the JSON it prints."""


def _when(text: object) -> datetime | None:
    if not isinstance(text, str) or not text or text.startswith("0001-01-01"):
        return None  # gh gives the zero time for a check not started
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _items(text: str, what: str) -> list[dict[str, Any]]:
    try:
        found = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CiReadError(f"{what}: not JSON: {exc}") from None
    if not isinstance(found, list) or not all(isinstance(i, dict) for i in found):
        raise CiReadError(f"{what}: not a JSON list of objects")
    return found


def pr_checks(text: str) -> tuple[CiCheck, ...]:
    """The checks of `gh pr checks URL --json PR_FIELDS`."""
    checks = []
    for item in _items(text, "gh pr checks"):
        said = str(item.get("bucket") or "pending").lower()
        known = [b for b in BUCKETS if b == said]
        bucket: Bucket = known[0] if known else "pending"  # an unknown one: not done
        checks.append(
            CiCheck(
                name=str(item.get("name") or "?"),
                workflow=item.get("workflow") or None,
                state=str(item.get("state") or ""),
                bucket=bucket,
                started_at=_when(item.get("startedAt")),
                completed_at=_when(item.get("completedAt")),
                link=item.get("link") or None,
            )
        )
    return tuple(checks)


RUN_BUCKETS: dict[str, Bucket] = {  # a completed run's conclusion, as a check's bucket
    "success": "pass",
    "failure": "fail",
    "timed_out": "fail",
    "startup_failure": "fail",
    "action_required": "fail",
    "cancelled": "cancel",
    "skipped": "skipping",
    "neutral": "skipping",
    "stale": "skipping",
}


def fork_runs(text: str) -> tuple[CiCheck, ...]:
    """The workflow runs of `gh run list -R FORK --commit SHA --json RUN_FIELDS`."""
    checks = []
    for item in _items(text, "gh run list"):
        status, conclusion = str(item.get("status") or ""), str(item.get("conclusion") or "")
        done = status == "completed"
        checks.append(
            CiCheck(
                name=str(item.get("name") or item.get("workflowName") or "?"),
                workflow=item.get("workflowName") or None,
                state=f"{status}/{conclusion}" if conclusion else status,
                bucket=RUN_BUCKETS.get(conclusion, "fail") if done else "pending",
                started_at=_when(item.get("startedAt")),
                completed_at=_when(item.get("updatedAt")) if done else None,
                link=item.get("url") or None,
            )
        )
    return tuple(checks)


def pending(checks: Sequence[CiCheck]) -> bool:
    return any(c.bucket == "pending" for c in checks)


def minutes(seconds: float) -> str:
    """`10 min`, `1.5 min`, `45 s`: a wait as the CI column says it."""
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def _earliest(item: tuple[int, CiCheck]) -> tuple[bool, float, int]:
    """The check that ended first (one still unended last), then as gh listed them."""
    n, check = item
    ended = check.completed_at
    return (ended is None, ended.timestamp() if ended else 0.0, n)


@dataclass(frozen=True, kw_only=True)
class CiWords:
    said: str
    status: CiStatus


def ci_words(
    checks: Sequence[CiCheck], where: str, *, waited: float | None = None, why_none: str = ""
) -> CiWords:
    """The CI column: `fail at typecheck` (the first check to fail or be cancelled,
    by when it ended), `pending (timed out after 10 min)` (`waited`: the seconds
    benchkit asked for), `none` (with `why_none`), else `2 pass, 0 fail (fork PR)`
    with the checks skipped; `where` says what was checked (`fork PR`, `PR`, `fork`)."""
    if not checks:
        return CiWords(said=f"none ({why_none})" if why_none else "none", status="none")
    failed = [c for c in checks if c.bucket in ("fail", "cancel")]
    if failed:
        first = min(enumerate(failed), key=_earliest)[1]
        word = "cancelled" if first.bucket == "cancel" else "fail"
        return CiWords(said=f"{word} at {first.name}", status="fail")
    if pending(checks):
        after = f" (timed out after {minutes(waited)})" if waited is not None else ""
        return CiWords(said=f"pending{after}", status="pending")
    passed = sum(c.bucket == "pass" for c in checks)
    skipped = sum(c.bucket == "skipping" for c in checks)
    said = f"{passed} pass, 0 fail" + (f", {skipped} skipped" if skipped else "")
    return CiWords(said=f"{said} ({where})", status="ok")


COUNTED = re.compile(r"(\d+)\s*(pass|fail|cancel|pending|skip)", re.IGNORECASE)
WORDS: tuple[tuple[CiStatus, re.Pattern[str]], ...] = (  # a cell's first word, by status
    ("fail", re.compile(r"(fail|cancel|red\b|error)", re.IGNORECASE)),
    ("pending", re.compile(r"(pending|queued|in progress|running)\b", re.IGNORECASE)),
    ("none", re.compile(r"(none|no checks|no ci)\b", re.IGNORECASE)),
    ("ok", re.compile(r"(ok|pass|success|green)", re.IGNORECASE)),
)


def status_of_words(text: str) -> CiStatus | None:
    """The status a CI cell written by hand reads as, or None where it reads as none:
    counts in any order (`1 pass 0 fail (fork PR)`: ok; `0 fail, 2 pass, 1 cancelled`:
    fail; a pending count: pending), else its first word (`fail at typecheck`: fail;
    `pending ...`; `none`; `ok`, `passed`, `green`)."""
    said = text.strip()
    counts: dict[str, int] = {}
    for number, word in COUNTED.findall(said):
        counts[word.lower()] = counts.get(word.lower(), 0) + int(number)
    if counts:
        if counts.get("fail", 0) or counts.get("cancel", 0):
            return "fail"
        if counts.get("pending", 0):
            return "pending"
        return "ok" if counts.get("pass", 0) else None
    for status, word in WORDS:
        if word.match(said):
            return status
    return None
