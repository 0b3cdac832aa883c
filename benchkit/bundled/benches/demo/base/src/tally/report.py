"""Plain-text invoice reports."""

from __future__ import annotations

from tally import compat
from tally.invoice import Invoice
from tally.money import Money

WIDTH = 44


def _row(label: str, amount: str) -> str:
    return f"{label:<{WIDTH - 16}}{amount:>16}"


def render(invoice: Invoice) -> str:
    """The invoice as a fixed-width text block."""
    lines = [f"Invoice {invoice.number} for {invoice.customer}", "-" * WIDTH]
    for item in invoice.items:
        lines.append(_row(item.describe(invoice.currency), compat.fmt_money(item.subtotal())))
    lines.append("-" * WIDTH)
    lines.append(_row("Subtotal", compat.fmt_money(invoice.subtotal(), invoice.currency)))
    lines.append(_row(f"Tax ({invoice.region})", compat.fmt_money(invoice.tax())))
    lines.append(_row("Total", invoice.total_text()))
    return "\n".join(lines)


def grand_total(invoices: list[Invoice]) -> Money:
    """The sum of several invoices in one currency."""
    total = Money.of(0, invoices[0].currency if invoices else "USD")
    for invoice in invoices:
        total = total + Money.of(invoice.total(), invoice.currency)
    return total


def summary_line(invoices: list[Invoice]) -> str:
    count = len(invoices)
    return f"{count} invoices, {grand_total(invoices).format()} in all"


def read_total(text: str) -> float:
    """The total back from a rendered report's last line."""
    return compat.parse_money(text.splitlines()[-1].split()[-1])
