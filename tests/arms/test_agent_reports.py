"""The agent CLIs' own outputs, read by their adapters: the shapes each tool prints
on success and on failure (samples in tests/fixtures/reports), what each figure
becomes, and a cut or garbled output said as a problem, never raised."""

from __future__ import annotations

from pathlib import PurePath

import pytest

from benchkit.arms.failures import classify
from benchkit.arms.reports import AGENTS, read_report
from benchkit.arms.sessions import with_edits
from benchkit.bench.arm_file import AgentReport
from benchkit.records import ArmReport, Tokens
from tests.conftest import ROOT

SAMPLES = ROOT / "tests" / "fixtures" / "reports"
WORKTREE = PurePath("/work/wt")


def _read(adapter: str, sample: str) -> ArmReport:
    text = (SAMPLES / sample).read_text()
    return read_report(AgentReport(adapter=adapter), stdout=text, file_text=None)  # type: ignore[arg-type]


def _files(report: ArmReport) -> tuple[str, ...]:
    [session] = with_edits(report, (), WORKTREE).session_list
    return session.files


def _kind(report: ArmReport, exit_code: int) -> str | None:
    failure = classify(
        exit_code=exit_code, timed_out=False, interrupted=False, report=report, log=""
    )
    return None if failure is None else failure.kind


def test_claude_code_stream_json_counts_each_message_once_and_names_its_edits() -> None:
    report = _read("claude-code", "claude-stream-edits.jsonl")
    assert (report.cost_usd, report.cost_source, report.turns) == (0.0588, "reported", 4)
    # the result's usage: 8 uncached + 2400 written to the cache + 24100 read from it
    assert report.tokens == Tokens(input=26508, cached=24100, cache_write=2400, output=600)
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
    assert "no result message in the output (truncated?)" in report.problem
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
