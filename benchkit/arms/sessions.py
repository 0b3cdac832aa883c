"""The sessions' edits: the files each session of an arm edited, as its tool says,
or as the arm's commits show. Pure.

A tool names the files it edits as it was given them (Claude Code, Codex and
Gemini CLI by absolute path); a run names them by their path in the repository.
Where the tool says nothing of its edits and the arm committed, the commits are the
sessions' edits: all of them the one session's, or one a session when there are as
many commits as sessions (an arm that commits per session).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePath

from benchkit.arm_report import ArmCommit, ArmReport
from benchkit.workspace.git import Commit


def in_repository(path: str, worktree: Sequence[PurePath]) -> str:
    """A file a tool named, by its path in the repository when it is in the worktree
    (as benchkit named it, or its real path, the one a tool's working folder has)."""
    given = PurePath(path)
    for root in worktree:
        if given.is_absolute() and given.is_relative_to(root):
            return given.relative_to(root).as_posix()
    return given.as_posix().removeprefix("./")


def commits_of(found: Sequence[Commit], sessions: int) -> tuple[ArmCommit, ...]:
    """The arm's commits as steps, each with its session where the sessions tell."""

    def session(step: int) -> int | None:
        if sessions == 1:
            return 0
        return step if sessions == len(found) else None

    return tuple(
        ArmCommit(step=i, sha=c.sha, subject=c.subject, files=c.files, session=session(i))
        for i, c in enumerate(found)
    )


def with_edits(
    report: ArmReport, commits: Sequence[ArmCommit], worktree: Sequence[PurePath]
) -> ArmReport:
    """The report with each session's files named in the repository, and taken from
    the commits where its tool said nothing of them."""
    sessions = []
    for s in report.session_list:
        files = tuple(dict.fromkeys(in_repository(f, worktree) for f in s.files))
        mine = [c for c in commits if c.session == s.session]
        if s.files_from is None and mine:
            files = tuple(dict.fromkeys(f for c in mine for f in c.files))
            sessions.append(replace(s, files=files, files_from="commits"))
        else:
            sessions.append(replace(s, files=files))
    return replace(report, session_list=tuple(sessions)) if sessions else report


BUDGET_WORDS = ("budget", "over_budget", "stopped_by_budget", "budget_exceeded", "max_budget")
STOPPED_AT_BUDGET = "stopped at the budget"


def _ended(status: str) -> str:
    """A session's status as the sessions column says it (`stopped at the budget`)."""
    word = status.strip().lower().replace("-", "_").replace(" ", "_")
    return STOPPED_AT_BUDGET if word in BUDGET_WORDS else status.strip()


JUDGED = ("accepted", "rejected")  # a feedback round's verdicts on a session's work


def session_reasons(report: ArmReport) -> str | None:
    """How the sessions of feedback rounds ended, counted in the order each way first
    came, with the tool's reasons: `3 rejected on tests, 1 stopped at the budget`;
    None where no session was judged, stopped at the budget or given a reason (an
    agent CLI's own `success` is its session's status, not a round's verdict)."""
    statuses = [(s.status or "").strip().lower() for s in report.session_list]
    rounds = any(w in JUDGED or _ended(w) == STOPPED_AT_BUDGET for w in statuses if w)
    if not rounds and not any(s.reason for s in report.session_list):
        return None
    counted: dict[str, int] = {}
    for s in report.session_list:
        if not s.status:
            continue
        way = _ended(s.status) + (f" on {s.reason.strip()}" if s.reason else "")
        counted[way] = counted.get(way, 0) + 1
    return ", ".join(f"{n} {way}" for way, n in counted.items()) or None
