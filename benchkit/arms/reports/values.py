"""What every report adapter reads alike: numbers that may be anything, the JSON
of a tool's output (one document, or one object a line), and the problems said.
Pure."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MOST_TOKENS = 10**13  # a count past ten trillion tokens is a tool's bug, not a count


def number(value: Any) -> float | None:
    """A figure as a float; None for what is no number (a bool, a word, a list, a
    number too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):
        return None


def integer(value: Any) -> int | None:
    """A count; None for what is no whole number (NaN, Infinity, 2.5, a word)."""
    read = number(value)
    if read is None or not math.isfinite(read):
        return None
    return int(read) if read == int(read) else None


def count(value: Any) -> int | None:
    """A count of tokens: a whole number from 0 to `MOST_TOKENS`; None otherwise."""
    read = integer(value)
    return read if read is not None and 0 <= read <= MOST_TOKENS else None


def mapping(value: Any) -> dict[str, Any]:
    """An object of the output, or an empty one where it holds something else."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """A list of the output, or an empty one where it holds something else."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str | None:
    """A non-empty string of the output; None where it holds something else."""
    return value if isinstance(value, str) and value else None


def not_number(name: str, given: Any, read: float | None) -> str | None:
    """Why a figure the report gives was not read: it is not a number."""
    if given is None or read is not None:
        return None
    return f"{name} {given!r} is not a number: recorded as missing"


def joined(problems: Iterable[str | None]) -> str | None:
    """The problems said, in one line; None when there are none."""
    return "; ".join(p for p in problems if p) or None


@dataclass(frozen=True, kw_only=True)
class Lines:
    """The JSON objects of an event stream, one a line, and what else it held."""

    events: tuple[dict[str, Any], ...]
    bad: int  # lines that opened an object and were not one (a truncated last line)

    @property
    def problem(self) -> str | None:
        if not self.bad:
            return None
        return f"{self.bad} line{'s' * (self.bad != 1)} of the output not JSON (truncated?)"


def parsed(text: str) -> Any:
    """A JSON document; None where it is none (broken, too deep, a number too long)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return None


def json_lines(output: str) -> Lines:
    """The JSON objects of a tool's output, one a line; other lines (a banner, a
    warning) are the tool's, and a line that opens an object and breaks is counted."""
    events: list[dict[str, Any]] = []
    bad = 0
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        event = parsed(line)
        if isinstance(event, dict):
            events.append(event)
        elif event is None:
            bad += 1
    return Lines(events=tuple(events), bad=bad)


def json_object(output: str) -> dict[str, Any] | None:
    """The whole output as one JSON object (a pretty-printed one spans lines), else
    None."""
    whole = parsed(output)
    return whole if isinstance(whole, dict) else None


def edited(files: list[str]) -> tuple[str, ...]:
    """Files in the order they were first edited, each once."""
    return tuple(dict.fromkeys(f for f in files if f))
