"""An agent's session turn by turn, read from the outputs the agent CLIs print (the
samples in tests/fixtures/reports): who spoke, the tools, each turn's tokens and cost
where the tool gives them; an output that is no session stream is none."""

from __future__ import annotations

import pytest

from benchkit.arm_report import Tokens
from benchkit.arms.transcript import Turn, read_transcript
from tests.conftest import ROOT

SAMPLES = ROOT / "tests" / "fixtures" / "reports"


def _turns(sample: str, instruction: str | None = None) -> tuple[str, list[Turn]]:
    transcript = read_transcript((SAMPLES / sample).read_text(), instruction)
    assert transcript is not None, sample
    return transcript.format, list(transcript.turns)


def test_claude_codes_stream_turn_by_turn_with_each_messages_tokens_once() -> None:
    form, turns = _turns("claude-stream-edits.jsonl", "Give Money a __float__.")
    assert form == "claude-code stream-json"
    kinds = [(t.kind, t.tool) for t in turns]
    assert kinds == [
        ("instruction", None),  # the stream holds none: the one benchkit gave, first
        ("assistant", None),
        ("tool call", "Edit"),
        ("tool result", None),
        ("tool call", "Write"),
        ("tool call", "Edit"),
        ("tool result", None),
        ("end", None),
    ]
    # msg_01's usage is on both its lines: counted on its first block only
    assert turns[1].tokens == Tokens(input=13103, cached=11000, cache_write=2100, output=180)
    assert not turns[2].tokens.given
    assert turns[4].tokens.output == 420
    assert "old_string:\n    def format(self) -> str:" in turns[2].text  # not JSON escapes
    assert turns[-1].cost_usd == pytest.approx(0.0588)
    assert turns[-1].text == "Money has __float__ and tax.py uses it."


def test_codex_events_give_commands_their_output_and_the_turns_tokens() -> None:
    form, turns = _turns("codex-exec-success.jsonl")
    assert form == "codex exec --json"
    call = turns.index(Turn(kind="tool call", text="bash -lc 'rg round_money'", tool="shell"))
    assert (
        turns[call + 1].text.startswith("src/tally/tax.py:3:") and "exit 0" in turns[call + 1].text
    )
    assert any(
        t.tool == "file change" and "update /work/wt/src/tally/money.py" in t.text for t in turns
    )
    assert turns[-1].tokens == Tokens(input=24763, cached=24448, output=450)
    _, failed = _turns("codex-exec-turn-failed.jsonl")
    assert failed[-1].kind == "error" and "429 Too Many Requests" in failed[-1].text


def test_gemini_and_opencode_streams_read_as_turns() -> None:
    form, turns = _turns("gemini-stream-turn-limit.jsonl", "ignored: the stream holds it")
    assert form == "gemini-cli stream-json"
    assert turns[0] == Turn(kind="instruction", text="Migrate tally off tally.compat.")
    assert (turns[1].kind, turns[1].tool) == ("tool call", "replace")
    assert turns[-1].kind == "error" and "max session turns" in turns[-1].text
    form, turns = _turns("opencode-run-success.jsonl")
    assert form == "opencode run --format json"
    steps = [t for t in turns if t.kind == "end"]
    assert [t.cost_usd for t in steps] == [pytest.approx(0.0091), pytest.approx(0.0032)]
    assert steps[0].tokens == Tokens(input=3600, cached=500, cache_write=1200, output=300)
    assert turns[-2] == Turn(kind="assistant", text="Done.")


@pytest.mark.parametrize(
    "sample", ["aider-success.txt", "claude-json-success.json", "gemini-json-success.json"]
)
def test_an_output_that_is_no_session_stream_has_no_transcript(sample: str) -> None:
    assert read_transcript((SAMPLES / sample).read_text(), "the task") is None
    assert read_transcript("", "the task") is None
