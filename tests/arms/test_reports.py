"""Report adapters and failure kinds, on real-format samples: data in, data out."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchkit.arm_report import NO_REPORT, ArmReport, Tokens
from benchkit.arms.failures import classify
from benchkit.arms.reports import read_claude_code, read_jsonpath, read_report
from benchkit.bench.arm_file import AgentReport, JsonPathReport, NoReport, load_arm
from tests.conftest import ROOT

SAMPLES = ROOT / "tests" / "fixtures" / "reports"


def _sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_claude_code_json_success() -> None:
    report = read_claude_code(_sample("claude-json-success.json"))
    assert report.cost_usd == 0.4187
    assert report.cost_source == "reported"
    assert (report.sessions, report.turns, report.duration_s) == (1, 14, 48.213)
    assert report.error is None
    assert report.over_budget is None
    [session] = report.session_list
    assert session.session_id == "5f0c7d62-2b9e-4c39-9f0e-8d4a6a1f2e11"
    assert session.status == "success"


def test_claude_code_stream_json_reads_the_last_result() -> None:
    report = read_claude_code(_sample("claude-stream.jsonl"))
    assert (report.cost_usd, report.turns) == (0.0731, 3)
    assert report.session_list[0].session_id == "a1c2e3f4-0000-4a5b-8c9d-112233445566"


def test_claude_code_error_subtypes() -> None:
    turns = read_claude_code(_sample("claude-json-max-turns.json"))
    assert turns.error == "error_max_turns"
    assert turns.over_budget is None
    assert turns.cost_usd == 1.2034
    budget = read_claude_code(_sample("claude-json-budget.json"))
    assert budget.over_budget is True
    assert budget.error == "error_max_budget_usd: Exceeded USD budget (1)"


@pytest.mark.parametrize("text", ["", "Segmentation fault\n", '{"type": "assistant"}\n'])
def test_claude_code_without_a_result_has_no_cost(text: str) -> None:
    report = read_claude_code(text)
    assert report.cost_usd is None
    assert report.cost_source == "missing"  # never invented
    assert report.problem == "no result message in the output"


def test_jsonpath_reads_a_tools_own_report() -> None:
    arm = load_arm(ROOT / "benchkit" / "bundled" / "arms" / "upgrader-tarball.toml")
    spec = arm.file.report
    assert isinstance(spec, JsonPathReport)
    report = read_jsonpath(_sample("upgrader-report.json"), spec)
    assert report.cost_usd == 0.37
    assert (report.sessions, report.sessions_accepted, report.sessions_rejected) == (3, 2, 1)
    assert report.feedback_rounds == 2
    assert report.flaky_files == ("tests/test_clock.py",)
    assert report.over_budget is False
    assert report.error is None
    assert [(s.session_id, s.status, s.cost_usd, s.turns) for s in report.session_list] == [
        ("s1", "accepted", 0.2, 4),
        ("s2", "rejected", 0.1, 3),
        ("s3", "accepted", 0.07, 1),
    ]


def test_jsonpath_with_no_file_or_bad_json() -> None:
    spec = JsonPathReport(adapter="jsonpath", file="report.json", cost="$.cost")
    assert read_jsonpath(None, spec).problem == "no report file at report.json"
    bad = read_jsonpath("{not json", spec)
    assert bad.problem is not None and bad.problem.startswith("report.json: not JSON")
    assert bad.cost_usd is None
    assert read_jsonpath('{"cost": "n/a"}', spec).cost_usd is None  # not a number: no cost


def test_the_registry_picks_the_adapter() -> None:
    stdout = _sample("claude-json-success.json")
    assert (
        read_report(AgentReport(adapter="claude-code"), stdout=stdout, file_text=None).cost_usd
        == 0.4187
    )
    assert read_report(NoReport(adapter="none"), stdout=stdout, file_text=None) == NO_REPORT


@pytest.mark.parametrize(
    ("exit_code", "report", "log", "kind", "retryable"),
    [
        (0, ArmReport(cost_usd=0.1), "done\n", None, None),
        (1, read_claude_code(_sample("claude-json-budget.json")), "", "budget", False),
        (1, ArmReport(), "Error: Exceeded USD budget (1)\n", "budget", False),
        (1, ArmReport(), 'API Error: 401 {"error":{"type":"authentication_error"}}', "auth", False),
        (1, ArmReport(), "API Error: 429 rate_limit_error\n", "rate_limit", True),
        (1, ArmReport(), "API Error: 529 Overloaded\n", "rate_limit", True),
        (
            1,
            ArmReport(),
            "API Error: 400 prompt is too long: 212043 tokens\n",
            "context_overflow",
            False,
        ),
        (
            1,
            ArmReport(),
            "Traceback (most recent call last):\nRuntimeError: boom\n",
            "crash",
            False,
        ),
        (-11, ArmReport(), "", "crash", False),
        (0, read_claude_code(_sample("claude-json-max-turns.json")), "", "turn_limit", False),
    ],
)
def test_failure_kinds(
    exit_code: int, report: ArmReport, log: str, kind: str | None, retryable: bool | None
) -> None:
    failure = classify(
        exit_code=exit_code, timed_out=False, interrupted=False, report=report, log=log
    )
    if kind is None:
        assert failure is None
    else:
        assert failure is not None
        assert (failure.kind, failure.retryable) == (kind, retryable)


def test_timeouts_and_interrupts_come_first() -> None:
    budget = read_claude_code(_sample("claude-json-budget.json"))
    timeout = classify(exit_code=None, timed_out=True, interrupted=False, report=budget, log="")
    stopped = classify(exit_code=None, timed_out=False, interrupted=True, report=budget, log="")
    assert timeout is not None and (timeout.kind, timeout.retryable) == ("timeout", True)
    assert stopped is not None and stopped.kind == "interrupted"


def test_a_startup_banner_naming_a_budget_is_not_a_budget_stop() -> None:
    failure = classify(
        exit_code=1,
        timed_out=False,
        interrupted=False,
        report=ArmReport(),
        log="max budget: $2.00\nTraceback ...\nKeyError: 'x'\n",
    )
    assert failure is not None and failure.kind == "crash"


@pytest.mark.parametrize("cost", ["-0.5", "Infinity", "NaN", "1e300", '"lots"'])
def test_a_cost_a_tool_could_not_have_spent_is_missing_and_said(cost: str) -> None:
    stdout = f'{{"type": "result", "subtype": "success", "total_cost_usd": {cost}}}'
    report = read_report(AgentReport(adapter="claude-code"), stdout=stdout, file_text=None)
    assert (report.cost_usd, report.cost_source) == (None, "missing")
    assert [s.cost_usd for s in report.session_list] == [None]
    assert report.problem is not None
    assert "is not a cost in USD" in report.problem or "is not a number" in report.problem
    fine = stdout.replace(cost, "0")
    free = read_report(AgentReport(adapter="claude-code"), stdout=fine, file_text=None)
    assert (free.cost_usd, free.problem) == (0.0, None)  # nothing spent is a cost


def test_a_count_or_a_time_a_tool_could_not_have_given_is_missing_and_said() -> None:
    spec = JsonPathReport(
        adapter="jsonpath",
        file="r.json",
        cost="$.cost",
        sessions="$.n",
        session_list="$.list",
        session_turns="turns",
        session_duration="s",
    )
    text = '{"cost": 0.1, "n": -2, "list": [{"turns": -1, "s": 3}, {"turns": 2, "s": -4}]}'
    report = read_report(spec, stdout="", file_text=text)
    assert (report.cost_usd, report.sessions) == (0.1, None)
    assert [(s.turns, s.duration_s) for s in report.session_list] == [(None, 3.0), (2, None)]
    assert report.problem == (
        "sessions -2 is not a count: recorded as missing; "
        "session 0's turns -1 is not a count: recorded as missing; "
        "session 1's duration_s -4.0 is not a time in seconds: recorded as missing"
    )


def test_a_count_that_is_no_whole_number_is_missing_and_said() -> None:
    spec = JsonPathReport(
        adapter="jsonpath",
        file="r.json",
        cost="$.cost",
        sessions="$.n",
        sessions_accepted="$.ok",
        feedback_rounds="$.rounds",
    )
    text = '{"cost": 0.1, "n": "many", "ok": 2.5, "rounds": "two"}'
    report = read_report(spec, stdout="", file_text=text)
    assert (report.sessions, report.sessions_accepted, report.feedback_rounds) == (None,) * 3
    assert report.problem == (
        "sessions 'many' is not a count: recorded as missing; "
        "sessions_accepted 2.5 is not a count: recorded as missing; "
        "feedback_rounds 'two' is not a count: recorded as missing"
    )
    endless = read_report(spec, stdout="", file_text='{"cost": 0.1, "n": NaN, "ok": Infinity}')
    assert (endless.sessions, endless.sessions_accepted) == (None, None)
    assert endless.problem is not None and "sessions nan is not a count" in endless.problem
    fine = read_report(spec, stdout="", file_text='{"cost": 0.1, "n": 3, "ok": 2.0}')
    assert (fine.sessions, fine.sessions_accepted, fine.problem) == (3, 2, None)


def test_jsonpath_reads_tokens_and_a_model_for_a_cost_from_tokens(tmp_path: Path) -> None:
    arm = tmp_path / "arm.toml"
    arm.write_text(
        'name = "mine"\ncommand = ["my-tool"]\n[report]\nadapter = "jsonpath"\n'
        'file = "report.json"\ninput_tokens = "$.usage.prompt"\n'
        'cached_input_tokens = "$.usage.cached"\noutput_tokens = "$.usage.completion"\n'
        'model = "$.model"\n'
    )
    spec = load_arm(arm).file.report
    assert isinstance(spec, JsonPathReport)
    text = '{"model": "gpt-5-codex", "usage": {"prompt": 1000, "cached": 400, "completion": 50}}'
    report = read_jsonpath(text, spec)
    assert report.tokens == Tokens(input=1000, cached=400, output=50)
    assert (report.model, report.cost_usd, report.problem) == ("gpt-5-codex", None, None)
    odd = read_jsonpath('{"usage": {"prompt": "many", "completion": -3}}', spec)
    assert odd.tokens == Tokens()
    assert odd.problem == (
        "input_tokens 'many' is not a count: recorded as missing; "
        "output_tokens -3 is not a count: recorded as missing"
    )
