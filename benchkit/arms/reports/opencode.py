"""OpenCode, `opencode run --format json`: one JSON event a line, each with `type`,
`timestamp` and `sessionID`: `step_start`, `text`, `tool_use` (a tool `part` whose
`state.input` names the file an `edit`, `write` or `patch` changed), `step_finish`
(its `part` has `cost` in dollars and `tokens{input, output, reasoning,
cache{read, write}}`: `input` the uncached ones) and `error{error{name, data}}`.
The cost is OpenCode's estimate from its own model prices."""

from __future__ import annotations

from typing import Any

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.reports.values import count, edited, joined, json_lines, mapping, number, text

EDIT_TOOLS = ("edit", "write", "patch", "multiedit")


def step_tokens(tokens: Any) -> Tokens:
    tokens = mapping(tokens)
    cache = mapping(tokens.get("cache"))
    fresh, read, written = (
        count(tokens.get("input")),
        count(cache.get("read")),
        count(cache.get("write")),
    )
    out, reasoning = count(tokens.get("output")), count(tokens.get("reasoning"))
    return Tokens(
        input=None if fresh is None else fresh + (read or 0) + (written or 0),
        cached=read,
        cache_write=written,
        output=None if out is None else out + (reasoning or 0),
    )


def error_of(event: dict[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        said = text(data.get("message")) if isinstance(data, dict) else None
        return said or text(error.get("name")) or "an error"
    return text(error) or "an error"


def read_opencode(stdout: str) -> ArmReport:
    """What `opencode run --format json` printed."""
    lines = json_lines(stdout)
    events = lines.events
    if not events:
        why = "no JSON events in the output (is `--format json` given?)"
        return ArmReport(problem=joined([why, lines.problem]))
    session_id = next((text(e.get("sessionID")) for e in events if e.get("sessionID")), None)
    tokens, steps, costs, files = Tokens(), 0, [], []
    error: str | None = None
    for event in events:
        part = mapping(event.get("part"))
        kind = event.get("type")
        if kind == "step_finish":
            steps += 1
            tokens = tokens + step_tokens(part.get("tokens"))
            costs.append(number(part.get("cost")))
        elif kind == "tool_use" and part.get("tool") in EDIT_TOOLS:
            given = mapping(mapping(part.get("state")).get("input"))
            path = given.get("filePath") or given.get("file_path")
            if isinstance(path, str):
                files.append(path)
        elif kind == "error":
            error = error_of(event)
    # a step without its cost leaves the run's unknown: a part of it is no total
    cost = sum(c for c in costs if c is not None) if costs and None not in costs else None
    session = SessionReport(
        session=0,
        session_id=session_id,
        status="error" if error else "completed",
        cost_usd=cost,
        turns=steps,
        tokens=tokens,
        files=edited(files),
        files_from="tool",
    )
    missing = "a step without its cost" if None in costs else None
    return ArmReport.of_session(session, error=error, problem=joined([lines.problem, missing]))
