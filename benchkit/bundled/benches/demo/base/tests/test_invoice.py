import pytest

from tally import Invoice, LineItem


def _invoice(region: str = "CA") -> Invoice:
    invoice = Invoice(number="INV-7", customer="Acme", region=region)
    invoice.add(LineItem(description="Widget", quantity=3, unit_price=4.25))
    invoice.add(LineItem(description="Gadget", quantity=1, unit_price=19.99))
    return invoice


def test_line_subtotal() -> None:
    assert LineItem(description="Widget", quantity=3, unit_price=4.25).subtotal() == 12.75


def test_invoice_subtotal_tax_and_total() -> None:
    invoice = _invoice()
    assert invoice.subtotal() == 32.74
    assert invoice.tax() == 2.37
    assert invoice.total() == 35.11


def test_total_text() -> None:
    assert _invoice("OR").total_text() == "$32.74"


def test_describe_uses_the_invoice_currency() -> None:
    item = LineItem(description="Widget", quantity=2, unit_price=1.5)
    assert item.describe("EUR") == "2 x Widget @ €1.50"


def test_quantity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="quantity"):
        _invoice().add(LineItem(description="Nothing", quantity=0, unit_price=1.0))
