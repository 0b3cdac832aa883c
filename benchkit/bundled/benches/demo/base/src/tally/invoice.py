"""Invoices and their line items."""

from __future__ import annotations

from dataclasses import dataclass, field

from tally.compat import fmt_money, round_money
from tally.tax import tax_for


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_price: float

    def subtotal(self) -> float:
        return round_money(self.quantity * self.unit_price)

    def describe(self, currency: str = "USD") -> str:
        price = fmt_money(self.unit_price, currency)
        return f"{self.quantity} x {self.description} @ {price}"


@dataclass
class Invoice:
    number: str
    customer: str
    region: str
    currency: str = "USD"
    items: list[LineItem] = field(default_factory=list)

    def add(self, item: LineItem) -> None:
        if item.quantity <= 0:
            raise ValueError(f"quantity must be positive: {item.quantity}")
        self.items.append(item)

    def subtotal(self) -> float:
        return round_money(sum(item.subtotal() for item in self.items))

    def tax(self) -> float:
        return tax_for(self.subtotal(), self.region)

    def total(self) -> float:
        return round_money(self.subtotal() + self.tax())

    def total_text(self) -> str:
        return fmt_money(self.total(), self.currency)
