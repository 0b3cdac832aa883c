"""Report adapters: what an arm says it did (cost, tokens, sessions and the files
each edited, why it stopped).

Each adapter is a pure function from the texts an arm left (its stdout, its report
file) to an `ArmReport`, in a module of its own named after the tool; `ADAPTERS`
names them as an arm file's `[report] adapter` does. benchkit never invents a
figure: what a report does not say stays `None`, and a cost it does not give is
`missing` (or computed from its tokens by a price table: `benchkit.arms.cost`).

- `claude-code`, `codex`, `aider`, `gemini-cli`, `opencode`: the agent CLIs' own
  output, read from stdout (or from a file in the worktree).
- `jsonpath`: a JSON report file of the tool's own and the JSONPath of each figure.
- `none`: nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from benchkit.arm_report import MOST_USD, NO_REPORT, ArmReport, SessionReport
from benchkit.arms.reports.aider import read_aider
from benchkit.arms.reports.claude_code import read_claude_code
from benchkit.arms.reports.codex import read_codex
from benchkit.arms.reports.gemini_cli import read_gemini_cli
from benchkit.arms.reports.jsonpath import read_jsonpath
from benchkit.arms.reports.opencode import read_opencode
from benchkit.bench.arm_file import AgentReport, JsonPathReport, Report

_R = TypeVar("_R", ArmReport, SessionReport)
__all__ = [
    "ADAPTERS",
    "AGENTS",
    "figures_checked",
    "read_aider",
    "read_claude_code",
    "read_codex",
    "read_gemini_cli",
    "read_jsonpath",
    "read_opencode",
    "read_report",
]

AGENTS: dict[str, Callable[[str], ArmReport]] = {
    "claude-code": read_claude_code,
    "codex": read_codex,
    "aider": read_aider,
    "gemini-cli": read_gemini_cli,
    "opencode": read_opencode,
}
"""The agent CLIs whose own output benchkit reads, by adapter name."""


def _agent(spec: Report, stdout: str, file_text: str | None) -> ArmReport:
    assert isinstance(spec, AgentReport)
    if spec.file is None:
        return AGENTS[spec.adapter](stdout)
    if file_text is None:
        return ArmReport(problem=f"no report file at {spec.file}")
    return AGENTS[spec.adapter](file_text)


def _jsonpath(spec: Report, stdout: str, file_text: str | None) -> ArmReport:
    assert isinstance(spec, JsonPathReport)
    return read_jsonpath(file_text, spec)


def _none(spec: Report, stdout: str, file_text: str | None) -> ArmReport:
    return NO_REPORT


ADAPTERS: dict[str, Callable[[Report, str, str | None], ArmReport]] = {
    **dict.fromkeys(AGENTS, _agent),
    "jsonpath": _jsonpath,
    "none": _none,
}


def read_report(spec: Report, *, stdout: str, file_text: str | None) -> ArmReport:
    """What the arm's report says, by the adapter its file names; a figure no tool
    could have given (see `figures_checked`) left out, and said in its `problem`.
    An output no adapter can read (truncated, not JSON) is a problem said, never an
    error raised."""
    try:
        report = ADAPTERS[spec.adapter](spec, stdout, file_text)
    except UNREADABLE as exc:  # an output no one foresaw: said, never raised
        said = f"the {spec.adapter} output cannot be read: {type(exc).__name__}: {exc}"
        return ArmReport(problem=said[:300])
    return figures_checked(report)


# what an adapter reading shapes it did not foresee (a number where a list was, a
# number too large for a float) may raise, and a run says instead
UNREADABLE = (ValueError, TypeError, AttributeError, KeyError, OverflowError, RecursionError)


COSTS = ("cost_usd",)
COUNTS = ("sessions", "sessions_accepted", "sessions_rejected", "feedback_rounds", "turns")
TIMES = ("duration_s",)


def _not_a(name: str, value: float | None) -> str | None:
    """What a reported figure is not, when it cannot be one; None when it can."""
    if value is None:
        return None
    if name in COSTS and not (math.isfinite(value) and 0 <= value <= MOST_USD):
        return "a cost in USD"
    if name in COUNTS and value < 0:
        return "a count"
    if name in TIMES and not (math.isfinite(value) and value >= 0):
        return "a time in seconds"
    return None


def _checked(record: _R, where: str, problems: list[str]) -> _R:
    """The record with each figure that cannot be one set to None, and why appended."""
    changes: dict[str, Any] = {}
    for name in (*COSTS, *COUNTS, *TIMES):
        value = getattr(record, name, None)
        what = _not_a(name, value)
        if what:
            problems.append(f"{where}{name} {value} is not {what}: recorded as missing")
            changes[name] = None
    return replace(record, **changes) if changes else record


def figures_checked(report: ArmReport) -> ArmReport:
    """The report with each figure no tool could have given (a cost below 0, past
    `MOST_USD` or not finite; a count below 0; a time below 0) left out, recorded as
    missing, and why in its `problem`: benchkit never keeps what a tool could not
    have spent or done."""
    problems = [report.problem] if report.problem else []
    checked = _checked(report, "", problems)
    sessions = tuple(_checked(s, f"session {s.session}'s ", problems) for s in report.session_list)
    if len(problems) == (1 if report.problem else 0):
        return report
    return replace(checked, session_list=sessions, problem="; ".join(problems))
