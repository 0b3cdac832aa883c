"""Claude Code in print mode: `claude -p --output-format json` prints one `result`
object; `stream-json --verbose` prints one JSON object a line (`system`/`init`,
`assistant` messages with `message.id` and `message.usage`, `user` tool results,
the final `result`). The cost is `total_cost_usd`, the client's estimate from its
own price table. Messages sharing a `message.id` repeat the same usage: each id
counts once. The files a session edited are its `Edit`, `MultiEdit`, `Write` and
`NotebookEdit` tool uses."""

from __future__ import annotations

import json
from typing import Any

from benchkit.arms.reports.values import (
    edited,
    integer,
    json_lines,
    mapping,
    not_number,
    number,
    text,
)
from benchkit.records import ArmReport, SessionReport, Tokens

EDIT_TOOLS = {
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}


def tokens_of(usage: Any) -> Tokens:
    """Anthropic's usage: `input_tokens` are the uncached ones, cache reads and
    writes are counted apart (and added back here)."""
    if not isinstance(usage, dict):
        return Tokens()
    fresh = integer(usage.get("input_tokens"))
    read = integer(usage.get("cache_read_input_tokens"))
    written = integer(usage.get("cache_creation_input_tokens"))
    total = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Tokens(
        input=total, cached=read, cache_write=written, output=integer(usage.get("output_tokens"))
    )


def _messages(stdout: str) -> tuple[list[dict[str, Any]], str | None]:
    """The messages of the output (one object, a list, or one a line), and what was
    wrong with it."""
    try:
        whole = json.loads(stdout)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return [whole], None
    if isinstance(whole, list):  # some versions print the whole conversation as a list
        return [m for m in whole if isinstance(m, dict)], None
    lines = json_lines(stdout)
    return list(lines.events), lines.problem


def _model(messages: list[dict[str, Any]], result: dict[str, Any] | None) -> str | None:
    usage = mapping(result.get("modelUsage")) if result else {}
    costs = {str(m): number(mapping(u).get("costUSD")) or 0.0 for m, u in usage.items()}
    if costs:  # the model that cost the most
        return max(costs, key=lambda m: costs[m])
    init = next((m for m in messages if m.get("type") == "system"), None)
    return text(init.get("model")) if init else None


def read_claude_code(stdout: str) -> ArmReport:
    """What Claude Code's print-mode output says (json or stream-json)."""
    messages, problem = _messages(stdout)
    results = [m for m in messages if m.get("type") == "result"]
    result = results[-1] if results else None
    usage: dict[str, Tokens] = {}
    files: list[str] = []
    tools_seen = False
    for message in messages:
        if message.get("type") != "assistant" or not isinstance(message.get("message"), dict):
            continue
        body = message["message"]
        key = str(body.get("id") or len(usage))
        usage.setdefault(key, tokens_of(body.get("usage")))  # each id once
        for block in body.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tools_seen = True
                field = EDIT_TOOLS.get(str(block.get("name")))
                given = block.get("input")
                if field and isinstance(given, dict) and isinstance(given.get(field), str):
                    files.append(given[field])
    summed = sum(usage.values(), Tokens())
    session_files = edited(files)
    files_from = "tool" if tools_seen or files else None
    if result is None:
        said = "no result message in the output"
        if usage:
            said += f" (truncated?): its cost is missing, tokens summed from {len(usage)} messages"
        return ArmReport(
            tokens=summed,
            model=_model(messages, None),
            sessions=1 if usage else None,
            session_list=(
                SessionReport(session=0, tokens=summed, files=session_files, files_from=files_from),
            )
            if usage
            else (),
            problem="; ".join(p for p in (said, problem) if p),
        )
    subtype = str(result.get("subtype") or "")
    is_error = bool(result.get("is_error")) or (subtype not in ("", "success"))
    said_text = result.get("result") if isinstance(result.get("result"), str) else None
    error = (subtype if subtype not in ("", "success") else said_text) if is_error else None
    if is_error and error == subtype and said_text:
        error = f"{subtype}: {said_text}"
    duration_ms = number(result.get("duration_ms"))
    given = result.get("total_cost_usd", result.get("cost_usd"))
    cost = number(given)
    turns = integer(result.get("num_turns"))
    budget = "budget" in subtype or "budget" in (said_text or "").lower()
    tokens = tokens_of(result.get("usage")) if result.get("usage") else summed
    session = SessionReport(
        session=0,
        session_id=text(result.get("session_id")),
        status=subtype or None,
        cost_usd=cost,
        turns=turns,
        duration_s=duration_ms / 1000 if duration_ms is not None else None,
        tokens=tokens,
        files=session_files,
        files_from=files_from,
    )
    return ArmReport(
        cost_usd=cost,
        tokens=tokens,
        model=_model(messages, result),
        sessions=1,
        turns=turns,
        duration_s=session.duration_s,
        over_budget=True if budget else None,
        error=error,
        session_list=(session,),
        problem="; ".join(p for p in (not_number("total_cost_usd", given, cost), problem) if p)
        or None,
    )
