"""Claude Code in print mode: `claude -p --output-format json` prints one `result`
object; `stream-json --verbose` prints one JSON object a line (`system`/`init`,
`assistant` messages with `message.id` and `message.usage`, `user` tool results,
the final `result`). The cost is `total_cost_usd`, the client's estimate from its
own price table. The tokens are its `modelUsage`, model by model (the side calls
to a small model included), else its `usage`; a stream cut before its `result` has
its `assistant` messages' usage summed, each `message.id` once (a message's content
blocks come on lines of their own, each with the message's usage). The files a
session edited are its `Edit`, `MultiEdit`, `Write` and `NotebookEdit` tool uses."""

from __future__ import annotations

from typing import Any

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.reports.values import (
    count,
    edited,
    integer,
    items,
    joined,
    json_lines,
    mapping,
    not_number,
    number,
    parsed,
    text,
)

EDIT_TOOLS = {
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}


def tokens_of(usage: Any) -> Tokens:
    """Anthropic's usage: `input_tokens` are the uncached ones, cache reads and
    writes are counted apart (and added back here)."""
    usage = mapping(usage)
    fresh = count(usage.get("input_tokens"))
    read = count(usage.get("cache_read_input_tokens"))
    written = count(usage.get("cache_creation_input_tokens"))
    total = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Tokens(
        input=total, cached=read, cache_write=written, output=count(usage.get("output_tokens"))
    )


def _by_model(model_usage: Any) -> tuple[tuple[str, Tokens], ...]:
    """`modelUsage`'s tokens, model by model (its keys in camel case)."""
    found = []
    for name, usage in mapping(model_usage).items():
        u = mapping(usage)
        fresh, read, written = (
            count(u.get(k))
            for k in ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
        )
        found.append(
            (
                str(name),
                Tokens(
                    input=None if fresh is None else fresh + (read or 0) + (written or 0),
                    cached=read,
                    cache_write=written,
                    output=count(u.get("outputTokens")),
                ),
            )
        )
    return tuple(found)


def _messages(stdout: str) -> tuple[list[dict[str, Any]], str | None]:
    """The messages of the output (one object, a list, or one a line), and what was
    wrong with it."""
    whole = parsed(stdout)
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
    init = next((m for m in messages if m.get("type") == "system"), {})
    return text(init.get("model"))


def _stream(messages: list[dict[str, Any]]) -> tuple[dict[str, Tokens], list[str], bool]:
    """Of the `assistant` messages: each id's usage (its fullest line's), the files
    the edit tools named, and whether any tool was used."""
    usage: dict[str, Tokens] = {}
    files: list[str] = []
    tools_seen = False
    for message in messages:
        body = mapping(message.get("message"))
        if message.get("type") != "assistant" or not body:
            continue
        key = str(body.get("id") or len(usage))
        said = tokens_of(body.get("usage"))
        if key not in usage or (said.output or 0) > (usage[key].output or 0):
            usage[key] = said  # each id once: the line with the most written
        for block in items(body.get("content")):
            block = mapping(block)
            if block.get("type") == "tool_use":
                tools_seen = True
                field = EDIT_TOOLS.get(str(block.get("name")))
                path = mapping(block.get("input")).get(field or "")
                if isinstance(path, str):
                    files.append(path)
    return usage, files, tools_seen


def read_claude_code(stdout: str) -> ArmReport:
    """What Claude Code's print-mode output says (json or stream-json)."""
    messages, problem = _messages(stdout)
    results = [m for m in messages if m.get("type") == "result"]
    result = results[-1] if results else None
    usage, files, tools_seen = _stream(messages)
    summed = sum(usage.values(), Tokens())
    files_from = "tool" if tools_seen or files else None
    init = next((m for m in messages if m.get("type") == "system"), {})
    if result is None:
        said = "no result message in the output"
        if usage:
            said += f" (truncated?): no cost reported; tokens summed from {len(usage)} messages"
        session = SessionReport(
            session=0,
            session_id=text(init.get("session_id")),
            tokens=summed,
            files=edited(files),
            files_from=files_from,
        )
        return ArmReport(
            tokens=summed,
            model=_model(messages, None),
            sessions=1 if usage else None,
            session_list=(session,) if usage else (),
            problem=joined([said, problem]),
        )
    subtype = str(result.get("subtype") or "")
    is_error = bool(result.get("is_error")) or (subtype not in ("", "success"))
    said_text = text(result.get("result"))
    error = (subtype if subtype not in ("", "success") else said_text) if is_error else None
    if is_error and error == subtype and said_text:
        error = f"{subtype}: {said_text}"
    duration_ms = number(result.get("duration_ms"))
    given = result.get("total_cost_usd", result.get("cost_usd"))
    cost = number(given)
    turns = integer(result.get("num_turns"))
    budget = "budget" in subtype or (is_error and "budget" in (said_text or "").lower())
    by_model = _by_model(result.get("modelUsage"))
    if by_model:
        tokens = sum((t for _, t in by_model), Tokens())
    else:
        tokens = tokens_of(result.get("usage")) if result.get("usage") else summed
    session = SessionReport(
        session=0,
        session_id=text(result.get("session_id")) or text(init.get("session_id")),
        status=subtype or None,
        cost_usd=cost,
        turns=turns,
        duration_s=duration_ms / 1000 if duration_ms is not None else None,
        tokens=tokens,
        files=edited(files),
        files_from=files_from,
    )
    return ArmReport.of_session(
        session,
        error=error,
        model=_model(messages, result),
        model_tokens=by_model,
        over_budget=True if budget else None,
        problem=joined([not_number("total_cost_usd", given, cost), problem]),
    )
