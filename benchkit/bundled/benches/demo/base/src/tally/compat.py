"""Deprecated float helpers, kept for callers that have not moved to `Money` yet."""

from __future__ import annotations

import warnings

from tally.money import Money


def _deprecated(name: str, instead: str) -> None:
    warnings.warn(
        f"tally.compat.{name} is deprecated; use {instead}", DeprecationWarning, stacklevel=3
    )


def round_money(amount: float) -> float:
    """Round a float amount to the cent, half up."""
    _deprecated("round_money", "Money.round()")
    return float(Money.of(amount).round().amount)


def fmt_money(amount: float, currency: str = "USD") -> str:
    """Format a float amount as `$1,234.50`."""
    _deprecated("fmt_money", "Money.format()")
    return Money.of(amount, currency).format()


def parse_money(text: str) -> float:
    """Read `$1,234.50` back into a float."""
    _deprecated("parse_money", "Money.of()")
    digits = text.strip().lstrip("$€£").replace(",", "")
    return float(digits)
