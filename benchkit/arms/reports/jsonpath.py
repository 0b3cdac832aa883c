"""A tool's own JSON report file, and the JSONPath of each figure in it."""

from __future__ import annotations

import json
from typing import Any

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.reports.values import count, integer, not_number, number
from benchkit.bench.arm_file import JsonPathReport


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
        read = integer(found[0])
        return read, (found[0] if read is None and found[0] is not None else None)
    if len(found) == 1 and isinstance(found[0], list):
        return len(found[0]), None
    if not found and "[?" not in path:
        return None, None
    return len(found), None


def _text(value: Any) -> str | None:
    """A string the report gives, or None (a number or a list is not a name)."""
    return value.strip() or None if isinstance(value, str) else None


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
            cost_usd=number(item.get(spec.session_cost)),
            turns=integer(item.get(spec.session_turns)),
            duration_s=number(item.get(spec.session_duration)),
            kind=_text(item.get(spec.session_kind)),
            reason=_text(item.get(spec.session_reason)),
        )
        for i, item in enumerate(items if isinstance(items, list) else [])
        if isinstance(item, dict)
    )
    flaky = _first(spec.flaky_files, document)
    over = _first(spec.over_budget, document)
    error = _first(spec.error, document)
    given = _first(spec.cost, document)
    cost = number(given)
    problems = [p] if (p := not_number("cost", given, cost)) else []

    def counted(name: str, path: str | None) -> int | None:
        value, bad = _count(path, document)
        if bad is not None:
            problems.append(f"{name} {bad!r} is not a count: recorded as missing")
        return value

    def whole(name: str, path: str | None) -> int | None:
        value = _first(path, document)
        read = count(value)
        if value is not None and read is None:
            problems.append(f"{name} {value!r} is not a count: recorded as missing")
        return read

    n = counted("sessions", spec.sessions) if spec.sessions else None
    accepted = counted("sessions_accepted", spec.sessions_accepted)
    rejected = counted("sessions_rejected", spec.sessions_rejected)
    rounds = _first(spec.feedback_rounds, document)
    if rounds is not None and integer(rounds) is None:
        problems.append(f"feedback_rounds {rounds!r} is not a count: recorded as missing")
    model = _first(spec.model, document)
    return ArmReport(
        pr_url=_text(_first(spec.pr_url, document)),
        pushed_repository=_text(_first(spec.pushed_repository, document)),
        pushed_branch=_text(_first(spec.pushed_branch, document)),
        pushed_sha=_text(_first(spec.pushed_sha, document)),
        cost_usd=cost,
        tokens=Tokens(
            input=whole("input_tokens", spec.input_tokens),
            cached=whole("cached_input_tokens", spec.cached_input_tokens),
            output=whole("output_tokens", spec.output_tokens),
        ),
        model=model if isinstance(model, str) and model else None,
        sessions=n if spec.sessions else (len(sessions) if spec.session_list else None),
        sessions_accepted=accepted,
        sessions_rejected=rejected,
        feedback_rounds=integer(rounds),
        problem="; ".join(problems) or None,
        over_budget=over if isinstance(over, bool) else None,
        flaky_files=tuple(str(f) for f in flaky) if isinstance(flaky, list) else None,
        error=str(error) if error not in (None, "", False) else None,
        session_list=sessions,
    )
