"""An agent's session turn by turn, as its CLI printed it: the instruction, each
assistant message, each tool call and its result, with the tokens and cost of a turn
where the tool gives them. Read from the output an arm keeps (`logs/arm.stdout`,
its secrets already redacted), in the formats of the agent CLIs benchkit reads:
Claude Code's stream-json, `codex exec --json`, Gemini CLI's stream-json and
`opencode run --format json`; the format is known by its event types. Pure."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from benchkit.arm_report import NO_TOKENS, Tokens
from benchkit.arms.reports.claude_code import tokens_of
from benchkit.arms.reports.codex import message_of, usage_tokens
from benchkit.arms.reports.gemini_cli import stream_tokens
from benchkit.arms.reports.opencode import error_of, step_tokens
from benchkit.arms.reports.values import items, json_lines, mapping, number, text

KINDS = ("instruction", "assistant", "reasoning", "tool call", "tool result", "end", "error")


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One step of a session: who spoke (`KINDS`), what was said or done, the tool
    named, and the tokens and dollars the tool charged to it (none: not said)."""

    kind: str
    text: str
    tool: str | None = None
    tokens: Tokens = NO_TOKENS
    cost_usd: float | None = None


@dataclass(frozen=True)
class Transcript:
    """A session's turns, and the format they were read from."""

    format: str
    turns: tuple[Turn, ...]


def _shown(value: Any) -> str:
    """A tool's input or output as text: a string as it is; an object of strings and
    numbers as `name: value` lines, a value of several lines below its name (an edit's
    old and new text as the file holds them); anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and all(isinstance(v, str | int | float) for v in value.values()):
        return "\n".join(_field(str(k), v) for k, v in value.items())
    if isinstance(value, list) and all(isinstance(mapping(v).get("text"), str) for v in value):
        return "\n".join(mapping(v)["text"] for v in value)  # content blocks of text
    return json.dumps(value, indent=1, ensure_ascii=False)


TEXTS = (
    "string",
    "String",
    "content",
    "command",
)  # names of a tool's texts, as the CLIs spell them


def _field(name: str, value: str | float) -> str:
    """`name: value`, or the name then the text on lines of its own where it is one."""
    if isinstance(value, str) and ("\n" in value.rstrip("\n") or name.endswith(TEXTS)):
        return f"{name}:\n{value}"
    return f"{name}: {value}"


def _claude(events: list[dict[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    seen: set[str] = set()  # a message's blocks come on lines of their own, its usage on each
    for event in events:
        kind, body = event.get("type"), mapping(event.get("message"))
        if kind == "assistant":
            key = str(body.get("id") or f"line {len(turns)}")
            tokens = NO_TOKENS if key in seen else tokens_of(body.get("usage"))
            seen.add(key)
            for block in map(mapping, items(body.get("content"))):
                said = text(block.get("text")) or text(block.get("thinking"))
                if block.get("type") == "tool_use":
                    call = _shown(block.get("input"))
                    turns.append(Turn(kind="tool call", text=call, tool=text(block.get("name"))))
                elif said:
                    kind_of = "reasoning" if block.get("type") == "thinking" else "assistant"
                    turns.append(Turn(kind=kind_of, text=said))
                else:
                    continue
                if tokens.given:  # the message's tokens, on its first block
                    turns[-1] = replace(turns[-1], tokens=tokens)
                    tokens = NO_TOKENS
        elif kind == "user":
            content = body.get("content")
            if isinstance(content, str):
                turns.append(Turn(kind="instruction", text=content))
            for block in map(mapping, items(content)):
                if block.get("type") == "tool_result":
                    failed = " (an error)" if block.get("is_error") else ""
                    turns.append(
                        Turn(kind="tool result", text=_shown(block.get("content")) + failed)
                    )
                elif said := text(block.get("text")):
                    turns.append(Turn(kind="instruction", text=said))
        elif kind == "result":
            turns.append(
                Turn(
                    kind="error" if event.get("is_error") else "end",
                    text=text(event.get("result")) or str(event.get("subtype") or "ended"),
                    tokens=tokens_of(event.get("usage")) if event.get("usage") else NO_TOKENS,
                    cost_usd=number(event.get("total_cost_usd")),
                )
            )
    return turns


def _codex(events: list[dict[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    for event in events:
        kind, item = event.get("type"), mapping(event.get("item"))
        if kind == "item.completed":
            of = item.get("type")
            if of == "agent_message":
                turns.append(Turn(kind="assistant", text=str(item.get("text") or "")))
            elif of == "reasoning":
                turns.append(Turn(kind="reasoning", text=str(item.get("text") or "")))
            elif of == "command_execution":
                turns.append(Turn(kind="tool call", text=str(item.get("command")), tool="shell"))
                said = str(item.get("aggregated_output") or "")
                turns.append(Turn(kind="tool result", text=f"{said}exit {item.get('exit_code')}"))
            elif of == "file_change":
                changes = [
                    f"{mapping(c).get('kind')} {mapping(c).get('path')}"
                    for c in items(item.get("changes"))
                ]
                turns.append(Turn(kind="tool call", text="\n".join(changes), tool="file change"))
                turns.append(Turn(kind="tool result", text=str(item.get("status"))))
            elif text(item.get("text")):
                turns.append(Turn(kind="assistant", text=str(item["text"]), tool=str(of)))
        elif kind == "turn.completed":
            said = "the turn completed (tokens so far)"
            turns.append(Turn(kind="end", text=said, tokens=usage_tokens(event.get("usage"))))
        elif kind in ("turn.failed", "error"):
            turns.append(Turn(kind="error", text=message_of(event) or "failed"))
    return turns


def _gemini(events: list[dict[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    for event in events:
        kind = event.get("type")
        if kind == "message":
            role = "instruction" if event.get("role") == "user" else "assistant"
            turns.append(Turn(kind=role, text=_shown(event.get("content"))))
        elif kind == "tool_use":
            call = _shown(event.get("parameters"))
            turns.append(Turn(kind="tool call", text=call, tool=text(event.get("tool_name"))))
        elif kind == "tool_result":
            said = _shown(event.get("output") or event.get("error") or event.get("status"))
            turns.append(Turn(kind="tool result", text=said))
        elif kind == "error":
            turns.append(Turn(kind="error", text=str(event.get("message") or "error")))
        elif kind == "result":
            error = mapping(event.get("error"))
            said = text(error.get("message")) or str(event.get("status") or "ended")
            tokens = stream_tokens(event.get("stats"))
            turns.append(Turn(kind="error" if error else "end", text=said, tokens=tokens))
    return turns


def _opencode(events: list[dict[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    for event in events:
        kind, part = event.get("type"), mapping(event.get("part"))
        if kind == "text":
            turns.append(Turn(kind="assistant", text=str(part.get("text") or "")))
        elif kind == "tool_use":
            state = mapping(part.get("state"))
            call = _shown(state.get("input"))
            turns.append(Turn(kind="tool call", text=call, tool=text(part.get("tool"))))
            said = text(state.get("output")) or str(state.get("status") or "")
            turns.append(Turn(kind="tool result", text=said))
        elif kind == "step_finish":
            said = f"the step ended: {part.get('reason') or 'done'}"
            tokens, cost = step_tokens(part.get("tokens")), number(part.get("cost"))
            turns.append(Turn(kind="end", text=said, tokens=tokens, cost_usd=cost))
        elif kind == "error":
            turns.append(Turn(kind="error", text=error_of(event)))
    return turns


Reader = Callable[[list[dict[str, Any]]], list[Turn]]
FORMATS: dict[str, tuple[frozenset[str], Reader]] = {  # event types no other format uses
    "claude-code stream-json": (frozenset({"assistant", "user"}), _claude),
    "codex exec --json": (
        frozenset({"thread.started", "item.completed", "turn.completed"}),
        _codex,
    ),
    "opencode run --format json": (frozenset({"step_start", "step_finish"}), _opencode),
    "gemini-cli stream-json": (frozenset({"init", "message"}), _gemini),
}


def read_transcript(stdout: str, instruction: str | None = None) -> Transcript | None:
    """The session's turns, the instruction first when given and the output does not
    hold it; None when the output is no event stream benchkit knows (plain text, one
    JSON result)."""
    events = list(json_lines(stdout).events)
    kinds = {str(e.get("type")) for e in events}
    for name, (marks, read) in FORMATS.items():
        if kinds & marks:
            turns = read(events)
            if instruction and not any(t.kind == "instruction" for t in turns[:2]):
                turns.insert(0, Turn(kind="instruction", text=instruction))
            return Transcript(format=name, turns=tuple(turns))
    return None
