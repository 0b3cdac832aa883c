"""Exact money amounts in a currency."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


@dataclass(frozen=True)
class Money:
    """An amount of a currency, kept as an exact decimal."""

    amount: Decimal
    currency: str = "USD"

    @classmethod
    def of(cls, value: float | int | str | Decimal, currency: str = "USD") -> Money:
        """Money from a number; floats go through their shortest repr, never binary."""
        return cls(Decimal(str(value)), currency)

    def round(self) -> Money:
        """Rounded to the cent, half up, as invoices are."""
        return Money(self.amount.quantize(CENT, rounding=ROUND_HALF_UP), self.currency)

    def __add__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money(self.amount + other.amount, self.currency)

    def __mul__(self, factor: int | Decimal) -> Money:
        return Money(self.amount * factor, self.currency)

    def format(self) -> str:
        """`$1,234.50`: the currency symbol, thousands separators, two decimals."""
        rounded = self.round().amount
        sign = "-" if rounded < 0 else ""
        symbol = SYMBOLS.get(self.currency, self.currency + " ")
        return f"{sign}{symbol}{abs(rounded):,.2f}"

    def _same_currency(self, other: Money) -> None:
        if other.currency != self.currency:
            raise ValueError(f"cannot mix {self.currency} and {other.currency}")
