"""A session's turns as a run page shows them: numbered, who spoke, the tool, the
tokens and cost of the turn where the tool gave them, the text (long ones cut, the
whole output a link); what was said open, tool calls and results folded. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from benchkit.analysis.text import money
from benchkit.arm_report import Tokens
from benchkit.arms.transcript import Transcript

LONGEST = 4000  # characters of a turn shown; the rest is in the whole output
FOLDED = frozenset({"tool call", "tool result", "reasoning"})


@dataclass(frozen=True)
class TurnRow:
    n: int
    kind: str
    tool: str
    tokens: str
    cost: str
    text: str
    cut: int  # characters left out
    folded: bool


def tokens_text(tokens: Tokens) -> str:
    """`13,103 in (11,000 cached) · 180 out`; empty where the tool said nothing."""
    parts = []
    if tokens.input is not None:
        cached = f" ({tokens.cached:,} cached)" if tokens.cached else ""
        parts.append(f"{tokens.input:,} in{cached}")
    if tokens.output is not None:
        parts.append(f"{tokens.output:,} out")
    return " · ".join(parts)


def turn_rows(transcript: Transcript) -> list[TurnRow]:
    rows = []
    for n, turn in enumerate(transcript.turns, start=1):
        said = turn.text.rstrip()
        rows.append(
            TurnRow(
                n=n,
                kind=turn.kind,
                tool=turn.tool or "",
                tokens=tokens_text(turn.tokens),
                cost="" if turn.cost_usd is None else money(turn.cost_usd),
                text=said[:LONGEST],
                cut=max(0, len(said) - LONGEST),
                folded=turn.kind in FOLDED,
            )
        )
    return rows
