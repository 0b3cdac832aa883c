"""Small invoices: line items, sales tax and plain-text reports."""

from tally.invoice import Invoice, LineItem
from tally.money import Money

__all__ = ["Invoice", "LineItem", "Money"]
__version__ = "0.3.0"
