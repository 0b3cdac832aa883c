"""The agent CLIs' own outputs, read by their adapters: the shapes each tool prints
on success and on failure (samples in tests/fixtures/reports), what each figure
becomes, and a cut or garbled output said as a problem, never raised."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePath

import pytest

from benchkit.arm_report import ArmReport, Tokens
from benchkit.arms.failures import classify
from benchkit.arms.reports import AGENTS, read_report
from benchkit.arms.sessions import with_edits
from benchkit.bench.arm_file import AgentReport
from tests.conftest import ROOT

SAMPLES = ROOT / "tests" / "fixtures" / "reports"
WORKTREE = PurePath("/work/wt")


def _read(adapter: str, sample: str) -> ArmReport:
    text = (SAMPLES / sample).read_text()
    return read_report(AgentReport(adapter=adapter), stdout=text, file_text=None)  # type: ignore[arg-type]


def _files(report: ArmReport) -> tuple[str, ...]:
    [session] = with_edits(report, (), [WORKTREE]).session_list
    return session.files


def _kind(report: ArmReport, exit_code: int) -> str | None:
    failure = classify(
        exit_code=exit_code, timed_out=False, interrupted=False, report=report, log=""
    )
    return None if failure is None else failure.kind


def test_claude_code_stream_json_counts_each_message_once_and_names_its_edits() -> None:
    report = _read("claude-code", "claude-stream-edits.jsonl")
    assert (report.cost_usd, report.cost_source, report.turns) == (0.0588, "reported", 4)
    # model by model: Sonnet's 8 uncached + 2400 written to the cache + 24100 read from
    # it, and the small model's side calls (410 in, 30 out), which its usage leaves out
    sonnet = Tokens(input=26508, cached=24100, cache_write=2400, output=600)
    haiku = Tokens(input=410, cached=0, cache_write=0, output=30)
    assert report.model_tokens == (
        ("claude-sonnet-4-5-20250929", sonnet),
        ("claude-haiku-4-5-20251001", haiku),
    )
    assert report.tokens == sonnet + haiku
    assert report.model == "claude-sonnet-4-5-20250929"  # of two, the one that cost the most
    assert _files(report) == ("src/tally/money.py", "src/tally/tax.py")
    assert report.session_list[0].files_from == "tool"
    assert _kind(report, 0) is None


def test_claude_code_stream_cut_before_its_result_keeps_its_tokens_not_a_cost() -> None:
    lines = (SAMPLES / "claude-stream-edits.jsonl").read_text().splitlines()
    cut = "\n".join(lines[:-1]) + '\n{"type":"result","subtype":"succ'
    report = read_report(AgentReport(adapter="claude-code"), stdout=cut, file_text=None)
    assert report.cost_usd is None and report.cost_source == "missing"
    # msg_01 printed twice (two content blocks) counts once: the sum equals the result's
    assert report.tokens == Tokens(input=26508, cached=24100, cache_write=2400, output=600)
    assert report.problem is not None
    assert "no result message in the output (truncated?): no cost reported" in report.problem
    assert report.session_list[0].session_id == "b7e1-0000-4a5b-8c9d-0000000000aa"  # its init's
    assert "tokens summed from 2 messages" in report.problem
    assert "1 line of the output not JSON" in report.problem
    assert _files(report) == ("src/tally/money.py", "src/tally/tax.py")


def test_codex_exec_json_gives_tokens_and_its_file_changes() -> None:
    report = _read("codex", "codex-exec-success.jsonl")
    assert report.cost_usd is None  # tokens only: no dollars
    assert report.tokens == Tokens(input=24763, cached=24448, output=450)  # cached within input
    assert (report.sessions, report.turns, report.error) == (1, 1, None)
    [session] = report.session_list
    assert session.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert _files(report) == ("src/tally/tax.py", "src/tally/money.py")  # not the failed one
    assert _kind(report, 0) is None


def test_codex_turn_failed_on_a_rate_limit() -> None:
    report = _read("codex", "codex-exec-turn-failed.jsonl")
    assert report.error == "stream error: exceeded retry limit, last status: 429 Too Many Requests"
    assert report.session_list[0].status == "failed"
    assert _kind(report, 1) == "rate_limit"


def test_gemini_json_splits_tokens_by_model() -> None:
    report = _read("gemini-cli", "gemini-json-success.json")
    pro = Tokens(input=24000, cached=5000, output=1300)  # thoughts billed as output
    flash = Tokens(input=1200, cached=0, output=40)
    assert report.model_tokens == (("gemini-2.5-pro", pro), ("gemini-2.5-flash", flash))
    assert report.tokens == pro + flash
    assert (report.model, report.turns, report.duration_s) == ("gemini-2.5-pro", 4, 9.8)
    assert report.cost_usd is None and report.error is None


def test_gemini_json_error_is_its_type_and_message() -> None:
    report = _read("gemini-cli", "gemini-json-auth.json")
    assert report.error == (
        "FatalAuthenticationError: When using Gemini API, you must specify the "
        "GEMINI_API_KEY environment variable. (41)"
    )
    assert _kind(report, 41) == "auth"


def test_gemini_stream_stopped_at_its_turn_limit() -> None:
    report = _read("gemini-cli", "gemini-stream-turn-limit.jsonl")
    assert report.error is not None and report.error.startswith(
        "FatalTurnLimitedError: Reached max session turns"
    )
    assert report.tokens == Tokens(input=9000, cached=2000, output=800)
    assert _files(report) == ("src/tally/tax.py",)  # a read is no edit
    assert _kind(report, 53) == "turn_limit"


def test_opencode_sums_its_steps_cost_and_tokens() -> None:
    report = _read("opencode", "opencode-run-success.jsonl")
    assert report.cost_usd == pytest.approx(0.0123)
    assert report.cost_source == "reported"
    # input: uncached + cache reads + cache writes, step by step; reasoning is output
    assert report.tokens == Tokens(input=7300, cached=4100, cache_write=1200, output=400)
    assert (report.turns, report.session_list[0].session_id) == (
        2,
        "ses_494719016ffe85dkDMj0FPRbHK",
    )
    assert _files(report) == ("src/tally/tax.py", "src/tally/money.py")


def test_opencode_error_event() -> None:
    report = _read("opencode", "opencode-run-error.jsonl")
    assert report.error == "Rate limit exceeded: 429 Too Many Requests"
    assert _kind(report, 1) == "rate_limit"


def test_aider_reads_its_token_and_cost_lines() -> None:
    report = _read("aider", "aider-success.txt")
    # 12k + 14k sent; 2.1k written to the cache, 9.8k read; 1.1k + 512 received
    assert report.tokens == Tokens(input=26000, cached=9800, cache_write=2100, output=1612)
    assert (report.cost_usd, report.turns) == (0.04, 2)  # its running total for the session
    assert report.error is None  # the rate limit was retried, and the retry answered
    assert _files(report) == ("src/tally/money.py", "src/tally/tax.py")
    assert _kind(report, 0) is None


def test_aider_exits_0_on_an_api_error_and_its_run_still_fails() -> None:
    report = _read("aider", "aider-auth.txt")
    assert report.error is not None and report.error.startswith("litellm.AuthenticationError")
    assert report.cost_usd is None
    assert _kind(report, 0) == "auth"


@pytest.mark.parametrize("adapter", sorted(AGENTS))
@pytest.mark.parametrize(
    "output", ["", "Segmentation fault (core dumped)\n", '{"type": "turn.comp', "[1, 2]\n"]
)
def test_an_output_no_adapter_can_read_is_a_problem_said(adapter: str, output: str) -> None:
    report = read_report(AgentReport(adapter=adapter), stdout=output, file_text=None)  # type: ignore[arg-type]
    assert report.problem  # said, with no figure invented
    assert report.cost_usd is None and not report.tokens.given


def _claude(*messages: Mapping[str, object]) -> ArmReport:
    text = "\n".join(json.dumps(m) for m in messages)
    return read_report(AgentReport(adapter="claude-code"), stdout=text, file_text=None)


def test_a_stream_whose_usage_grows_line_by_line_keeps_each_messages_fullest() -> None:
    lines = [
        {
            "type": "assistant",
            "message": {"id": "m1", "usage": {"input_tokens": 5, "output_tokens": n}},
        }
        for n in (1, 40, 12)
    ]
    assert _claude(*lines).tokens == Tokens(input=5, cached=None, cache_write=None, output=40)


def test_a_success_that_talks_of_a_budget_is_no_budget_stop() -> None:
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "Fixed the budget rounding.",
        "total_cost_usd": 0.1,
    }
    report = _claude(result)
    assert report.over_budget is None and report.error is None
    assert _kind(report, 0) is None


NINES = "9" * 400  # a number past any float


@pytest.mark.parametrize(
    ("adapter", "output"),
    [
        (
            "claude-code",
            f'{{"type":"result","total_cost_usd":{NINES},"usage":{{"input_tokens":{NINES}}}}}',
        ),
        ("claude-code", '{"type":"assistant","message":{"id":"m","content":5,"usage":[]}}'),
        ("claude-code", "[" * 100000 + "]" * 100000),
        (
            "codex",
            '{"type":"item.completed","item":{"type":"file_change","changes":5}}\n'
            '{"type":"turn.completed","usage":{"input_tokens":1e30,"output_tokens":-4}}',
        ),
        (
            "gemini-cli",
            f'{{"stats":{{"models":{{"m":{{"tokens":{{"prompt":"{"9" * 5000}"}},"api":7}}}}}}}}',
        ),
        (
            "opencode",
            '{"type":"step_finish","part":{"cost":"1e999","tokens":{"input":[1],"cache":7}}}',
        ),
        ("aider", f"Tokens: {NINES}k sent, 5 received. Cost: $1e999 message, ${NINES} session."),
    ],
)
def test_odd_output_is_a_problem_or_no_figure_never_an_error(adapter: str, output: str) -> None:
    report = read_report(AgentReport(adapter=adapter), stdout=output, file_text=None)  # type: ignore[arg-type]
    for figure in (report.tokens.input, report.tokens.cached, report.tokens.output):
        assert figure is None or 0 <= figure <= 10**13
    assert report.cost_usd is None or 0 <= report.cost_usd <= 1_000_000


def test_gemini_streams_thinking_tokens_are_output_though_its_output_tokens_leave_them_out() -> (
    None
):
    events = [
        {"type": "init", "session_id": "g", "model": "gemini-2.5-pro"},
        {
            "type": "result",
            "status": "success",
            "stats": {
                "total_tokens": 2850,
                "input_tokens": 2400,
                "output_tokens": 400,
                "cached": 500,
            },
        },
    ]
    text = "\n".join(json.dumps(e) for e in events)
    report = read_report(AgentReport(adapter="gemini-cli"), stdout=text, file_text=None)
    assert report.tokens == Tokens(input=2400, cached=500, output=450)  # 400 + 50 thoughts
