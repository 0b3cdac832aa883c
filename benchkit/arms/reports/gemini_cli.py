"""Gemini CLI, `gemini -p ... --output-format json` or `stream-json`.

json: one object, `{session_id, response, stats: {models: {NAME: {api, tokens:
{prompt, candidates, cached, thoughts, total, ...}}}, tools, files}, error?: {type,
message, code}}`. stream-json: one event a line, `init{session_id, model}`,
`message`, `tool_use{tool_name, tool_id, parameters}`, `tool_result{tool_id,
status}`, `error{severity, message}` and the final `result{status, error?, stats:
{total_tokens, input_tokens, output_tokens, cached, ...}}`. `prompt` /
`input_tokens` count the cached tokens too; thinking tokens (`thoughts`) are billed
as output, and the stream's `output_tokens` leaves them out (its `total_tokens`
has them): the output is the total less the input. Tokens only, no dollars."""

from __future__ import annotations

from typing import Any

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.reports.values import (
    count,
    edited,
    integer,
    joined,
    json_lines,
    json_object,
    mapping,
    number,
    text,
)

EDIT_TOOLS = ("write_file", "replace", "edit", "smart_edit")


def _model_tokens(tokens: Any) -> Tokens:
    """One model's tokens in json mode's `stats.models`."""
    tokens = mapping(tokens)
    out, thoughts = count(tokens.get("candidates")), count(tokens.get("thoughts"))
    return Tokens(
        input=count(tokens.get("prompt")),
        cached=count(tokens.get("cached")),
        output=None if out is None else out + (thoughts or 0),
    )


def stream_tokens(stats: Any) -> Tokens:
    """The stream's `result.stats`: `input_tokens` is the prompt, cached included;
    what the model wrote, its thoughts included, is the total less the prompt."""
    stats = mapping(stats)
    read, out, total = (
        count(stats.get(k)) for k in ("input_tokens", "output_tokens", "total_tokens")
    )
    if read is not None and total is not None and total - read >= (out or 0):
        out = total - read
    return Tokens(input=read, cached=count(stats.get("cached")), output=out)


def _error(error: Any) -> str | None:
    if isinstance(error, dict):
        kind, message = text(error.get("type")), text(error.get("message"))
        said = f"{kind}: {message}" if kind and message and kind != "Error" else message or kind
        code = error.get("code")
        return f"{said} ({code})" if said and code not in (None, "") else said
    return text(error)


def _report(
    *,
    session_id: str | None,
    by_model: tuple[tuple[str, Tokens], ...],
    tokens: Tokens,
    model: str | None,
    turns: int | None,
    duration_s: float | None,
    error: str | None,
    files: tuple[str, ...],
    files_from: str | None,
    problem: str | None,
) -> ArmReport:
    session = SessionReport(
        session=0,
        session_id=session_id,
        status="error" if error else "success",
        turns=turns,
        duration_s=duration_s,
        tokens=tokens,
        files=files,
        files_from=files_from,
    )
    return ArmReport.of_session(
        session, error=error, model=model, model_tokens=by_model, problem=problem
    )


def _json(whole: dict[str, Any]) -> ArmReport:
    models = {n: mapping(m) for n, m in mapping(mapping(whole.get("stats")).get("models")).items()}
    by_model = tuple((name, _model_tokens(m.get("tokens"))) for name, m in models.items())
    api = {name: mapping(m.get("api")) for name, m in models.items()}
    requests = {name: integer(a.get("totalRequests")) or 0 for name, a in api.items()}
    latency = sum(number(a.get("totalLatencyMs")) or 0.0 for a in api.values())
    return _report(
        session_id=text(whole.get("session_id")),
        by_model=by_model,
        tokens=sum((t for _, t in by_model), Tokens()),
        model=max(requests, key=lambda n: requests[n]) if requests else None,
        turns=sum(requests.values()) if requests else None,
        duration_s=latency / 1000 if models else None,
        error=_error(whole.get("error")),
        files=(),
        files_from=None,
        problem=None,
    )


def read_gemini_cli(stdout: str) -> ArmReport:
    """What Gemini CLI printed in json or stream-json mode."""
    whole = json_object(stdout)
    if whole is not None and whole.get("type") is None:
        return _json(whole)
    lines = json_lines(stdout)
    events = lines.events
    if not events:
        why = "no JSON in the output (is `--output-format json` or `stream-json` given?)"
        return ArmReport(problem=joined([why, lines.problem]))
    init = next((e for e in events if e.get("type") == "init"), {})
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    files = []
    for event in events:
        parameters = event.get("parameters")
        if (
            event.get("type") == "tool_use"
            and event.get("tool_name") in EDIT_TOOLS
            and isinstance(parameters, dict)
        ):
            path = parameters.get("file_path") or parameters.get("absolute_path")
            if isinstance(path, str):
                files.append(path)
    errors = [
        _error(e.get("message"))
        for e in events
        if e.get("type") == "error" and e.get("severity") != "warning"
    ]
    model = text(init.get("model"))
    problem = lines.problem
    if result is None:
        problem = joined(["no result event in the output (truncated?)", problem])
        stats: dict[str, Any] = {}
        error = next((e for e in reversed(errors) if e), None)
    else:
        stats = mapping(result.get("stats"))
        error = _error(result.get("error")) if result.get("status") == "error" else None
        if result.get("status") == "error" and error is None:
            error = next((e for e in reversed(errors) if e), "the run ended in error")
    tokens = stream_tokens(stats)
    duration = number(stats.get("duration_ms"))
    return _report(
        session_id=text(init.get("session_id")),
        by_model=((model, tokens),) if model and tokens.given else (),
        tokens=tokens,
        model=model,
        turns=None,
        duration_s=None if duration is None else duration / 1000,
        error=error,
        files=edited(files),
        files_from="tool",
        problem=problem,
    )
