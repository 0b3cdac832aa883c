"""Markdown for PR bodies and notebooks. Pure: cells in, text out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NONE = "-"  # a cell with no value


@dataclass(frozen=True)
class Markdown:
    """Markdown text that a notebook renders as a table and `print` shows as it is."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def _cell(value: object) -> str:
    if value is None or value == "":
        return NONE
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = [
        "| " + " | ".join(_cell(h) for h in header) + " |",
        "|" + "|".join(" --- " for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
