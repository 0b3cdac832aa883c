"""Codex, `codex exec --json`: one JSON event a line. `thread.started{thread_id}`,
`turn.started`, `turn.completed{usage{input_tokens, cached_input_tokens,
output_tokens}}`, `turn.failed{error{message}}`, `item.started` / `item.updated` /
`item.completed{item{id, type, ...}}` (a `file_change` item lists its `changes`,
each a `path` and a `kind`), and `error{message}` when the stream fails. Tokens
only, no dollars: OpenAI's `input_tokens` count the cached ones too, and a turn's
`usage` is the thread's running total (codex-rs exec writes its last total), so the
last one is the run's."""

from __future__ import annotations

from typing import Any

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.reports.values import count, edited, items, joined, json_lines, mapping, text


def usage_tokens(usage: Any) -> Tokens:
    usage = mapping(usage)
    return Tokens(
        input=count(usage.get("input_tokens")),
        cached=count(usage.get("cached_input_tokens")),
        output=count(usage.get("output_tokens")),
    )


def message_of(event: dict[str, Any]) -> str | None:
    error = event.get("error")
    if isinstance(error, dict):
        return text(error.get("message")) or "the turn failed"
    return text(event.get("message")) or text(error)


def read_codex(stdout: str) -> ArmReport:
    """What `codex exec --json` printed."""
    lines = json_lines(stdout)
    events = lines.events
    if not events:
        why = "no JSON events in the output (is `--json` given?)"
        return ArmReport(problem=joined([why, lines.problem]))
    thread = next(
        (text(e.get("thread_id")) for e in events if e.get("type") == "thread.started"), None
    )
    tokens, turns, files = Tokens(), 0, []
    error: str | None = None
    for event in events:
        kind = event.get("type")
        if kind == "turn.completed":  # its usage: the thread's total so far
            tokens, turns, error = usage_tokens(event.get("usage")), turns + 1, None
        elif kind == "turn.failed":
            turns += 1
            error = message_of(event)
        elif kind == "error":
            error = message_of(event) or "the stream failed"
        elif kind == "item.completed":
            item = mapping(event.get("item"))
            if item.get("type") == "file_change" and item.get("status") != "failed":
                for change in items(item.get("changes")):
                    path = mapping(change).get("path")
                    if isinstance(path, str):
                        files.append(path)
    status = "failed" if error else "completed"
    session = SessionReport(
        session=0,
        session_id=thread,
        status=status,
        turns=turns,
        tokens=tokens,
        files=edited(files),
        files_from="tool",
    )
    return ArmReport.of_session(session, error=error, problem=lines.problem)
