"""Report adapters: what an arm says it did (cost, sessions, why it stopped).

Each adapter is a pure function from the texts an arm left (its stdout, its report
file) to an `ArmReport`. benchkit never invents a figure: what a report does not
say stays `None`, and a cost it does not give is recorded as `missing`.

- `claude-code`: the result message of `claude -p --output-format json` (one JSON
  object) or `stream-json` (one JSON object per line, the last of type `result`):
  `total_cost_usd`, `num_turns`, `duration_ms`, `session_id`, and `subtype` /
  `is_error` for why it stopped (`error_max_turns`, `error_during_execution`, a
  budget stop).
- `jsonpath`: a JSON report file of the tool's own and the JSONPath of each figure.
- `none`: nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from benchkit.bench.arm_file import ClaudeCodeReport, JsonPathReport, Report
from benchkit.records import MOST_USD, NO_REPORT, ArmReport, SessionReport

_R = TypeVar("_R", ArmReport, SessionReport)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _integer(value: Any) -> int | None:
    number = _number(value)
    if number is None or not math.isfinite(number):  # NaN, Infinity: no count
        return None
    return int(number) if number == int(number) else None


def _result_message(stdout: str) -> dict[str, Any] | None:
    """The last `"type": "result"` object: a whole-text JSON object or a JSONL line."""
    try:
        whole = json.loads(stdout)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and whole.get("type") == "result":
        return whole
    if isinstance(whole, list):  # some versions print the whole conversation as a list
        results = [m for m in whole if isinstance(m, dict) and m.get("type") == "result"]
        return results[-1] if results else None
    found = None
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(message, dict) and message.get("type") == "result":
            found = message
    return found


def read_claude_code(stdout: str) -> ArmReport:
    """The result message of Claude Code in print mode (json or stream-json)."""
    message = _result_message(stdout)
    if message is None:
        return ArmReport(problem="no result message in the output")
    subtype = str(message.get("subtype") or "")
    is_error = bool(message.get("is_error")) or (subtype not in ("", "success"))
    text = message.get("result") if isinstance(message.get("result"), str) else None
    error = (subtype if subtype not in ("", "success") else text) if is_error else None
    if is_error and error == subtype and text:
        error = f"{subtype}: {text}"
    duration_ms = _number(message.get("duration_ms"))
    given = message.get("total_cost_usd", message.get("cost_usd"))
    cost = _number(given)
    turns = _integer(message.get("num_turns"))
    budget = "budget" in subtype or "budget" in (text or "").lower()
    session = SessionReport(
        session=0,
        session_id=message.get("session_id")
        if isinstance(message.get("session_id"), str)
        else None,
        status=subtype or None,
        cost_usd=cost,
        turns=turns,
        duration_s=duration_ms / 1000 if duration_ms is not None else None,
    )
    return ArmReport(
        cost_usd=cost,
        sessions=1,
        turns=turns,
        duration_s=session.duration_s,
        over_budget=True if budget else None,
        error=error,
        session_list=(session,),
        problem=_not_number("total_cost_usd", given, cost),
    )


def _not_number(name: str, given: Any, read: float | None) -> str | None:
    """Why a figure the report gives was not read: it is not a number."""
    if given is None or read is not None:
        return None
    return f"{name} {given!r} is not a number: recorded as missing"


def _find(path: str, document: Any) -> list[Any]:
    from jsonpath_ng.ext.parser import parse  # a heavy import, only for this adapter

    return [match.value for match in parse(path).find(document)]


def _first(path: str | None, document: Any) -> Any:
    if path is None:
        return None
    found = _find(path, document)
    return found[0] if found else None


def _count(path: str | None, document: Any) -> tuple[int | None, Any]:
    """A count: the number at the path, or how many things the path finds (a filter
    such as `$.sessions[?(@.status == 'accepted')]` finding none counts 0); beside it,
    the value found when it is no whole number (`"many"`, `2.5`), else None."""
    if path is None:
        return None, None
    found = _find(path, document)
    if len(found) == 1 and not isinstance(found[0], dict | list):
        read = _integer(found[0])
        return read, (found[0] if read is None and found[0] is not None else None)
    if len(found) == 1 and isinstance(found[0], list):
        return len(found[0]), None
    if not found and "[?" not in path:
        return None, None
    return len(found), None


def read_jsonpath(text: str | None, spec: JsonPathReport) -> ArmReport:
    """Figures picked out of a tool's own JSON report by JSONPath."""
    if text is None:
        return ArmReport(problem=f"no report file at {spec.file}")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return ArmReport(problem=f"{spec.file}: not JSON: {exc}")
    items = _first(spec.session_list, document)
    sessions = tuple(
        SessionReport(
            session=i,
            session_id=str(item[spec.session_id])
            if item.get(spec.session_id) is not None
            else None,
            status=str(item[spec.session_status])
            if item.get(spec.session_status) is not None
            else None,
            cost_usd=_number(item.get(spec.session_cost)),
            turns=_integer(item.get(spec.session_turns)),
            duration_s=_number(item.get(spec.session_duration)),
        )
        for i, item in enumerate(items if isinstance(items, list) else [])
        if isinstance(item, dict)
    )
    flaky = _first(spec.flaky_files, document)
    over = _first(spec.over_budget, document)
    error = _first(spec.error, document)
    given = _first(spec.cost, document)
    cost = _number(given)
    problems = [p] if (p := _not_number("cost", given, cost)) else []

    def counted(name: str, path: str | None) -> int | None:
        value, bad = _count(path, document)
        if bad is not None:
            problems.append(f"{name} {bad!r} is not a count: recorded as missing")
        return value

    n = counted("sessions", spec.sessions) if spec.sessions else None
    accepted = counted("sessions_accepted", spec.sessions_accepted)
    rejected = counted("sessions_rejected", spec.sessions_rejected)
    rounds = _first(spec.feedback_rounds, document)
    if rounds is not None and _integer(rounds) is None:
        problems.append(f"feedback_rounds {rounds!r} is not a count: recorded as missing")
    return ArmReport(
        cost_usd=cost,
        sessions=n if spec.sessions else (len(sessions) if spec.session_list else None),
        sessions_accepted=accepted,
        sessions_rejected=rejected,
        feedback_rounds=_integer(rounds),
        problem="; ".join(problems) or None,
        over_budget=over if isinstance(over, bool) else None,
        flaky_files=tuple(str(f) for f in flaky) if isinstance(flaky, list) else None,
        error=str(error) if error not in (None, "", False) else None,
        session_list=sessions,
    )


def _claude_code(spec: Report, stdout: str, file_text: str | None) -> ArmReport:
    assert isinstance(spec, ClaudeCodeReport)
    if spec.file is None:
        return read_claude_code(stdout)
    if file_text is None:
        return ArmReport(problem=f"no report file at {spec.file}")
    return read_claude_code(file_text)


def _jsonpath(spec: Report, stdout: str, file_text: str | None) -> ArmReport:
    assert isinstance(spec, JsonPathReport)
    return read_jsonpath(file_text, spec)


def _none(spec: Report, stdout: str, file_text: str | None) -> ArmReport:
    return NO_REPORT


ADAPTERS: dict[str, Callable[[Report, str, str | None], ArmReport]] = {
    "claude-code": _claude_code,
    "jsonpath": _jsonpath,
    "none": _none,
}


def read_report(spec: Report, *, stdout: str, file_text: str | None) -> ArmReport:
    """What the arm's report says, by the adapter its file names; a figure no tool
    could have given (see `figures_checked`) left out, and said in its `problem`."""
    return figures_checked(ADAPTERS[spec.adapter](spec, stdout, file_text))


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
