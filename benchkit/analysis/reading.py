"""A stored value as a report page shows it: rounded for reading, exact on hover.

Seconds to 0.1 s (milliseconds below a second), costs as the pilot table writes them,
times to the second in UTC, a test as `file::test`, lists joined; never a Python repr.
Pure: a field's name and value in, the text and its exact form out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from benchkit.analysis.text import money

NONE = "-"

MONEY_FIELDS = frozenset({"cost_usd", "max_cost"})


@dataclass(frozen=True)
class Shown:
    """A value's text on the page and, where rounding hid something, its exact form."""

    text: str
    exact: str | None = None


def seconds(value: float) -> str:
    """`103 ms` below a second, `2.3 s` below a minute, `234 s` above."""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s" if value < 60 else f"{round(value)} s"


def timestamp(value: datetime) -> str:
    """`2026-12-03 07:01:02 UTC`: to the second (a naive time is UTC, as stored)."""
    at = value if value.tzinfo is None else value.astimezone(UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def failure(value: Mapping[str, Any]) -> str:
    """A charged failure: `file::test: the message's first line`."""
    where = "::".join(str(value[k]) for k in ("file", "test") if value.get(k))
    said = str(value.get("message") or "").strip().splitlines()
    return f"{where}: {said[0]}" if said and where else where or (said[0] if said else NONE)


def shown(field: str, value: object) -> Shown:
    """`value` of the run's `field` for reading (see the module)."""
    if value is None or value == "" or value == []:
        return Shown(NONE)
    if isinstance(value, bool):
        return Shown("yes" if value else "no")
    if isinstance(value, datetime):
        return Shown(timestamp(value), value.isoformat())
    if isinstance(value, float):
        if field in MONEY_FIELDS:
            return Shown(money(value), repr(value))
        if field.endswith("_s"):
            return Shown(seconds(value), f"{value} s")
        return Shown(f"{value:.4g}", repr(value))
    if isinstance(value, Mapping):
        return Shown(failure(value) if "file" in value or "test" in value else _pairs(value))
    if isinstance(value, list | tuple):
        parts = [shown(field, v).text for v in value]
        return Shown("; ".join(parts) if any("::" in p for p in parts) else ", ".join(parts))
    return Shown(str(value))


def _pairs(value: Mapping[str, Any]) -> str:
    """A mapping as `key value` pairs (an arm's variables): no braces, no quotes."""
    return ", ".join(f"{k} {shown(str(k), v).text}" for k, v in value.items())
