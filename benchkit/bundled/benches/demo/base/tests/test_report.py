from tally import Invoice, LineItem
from tally.report import read_total, render, summary_line


def _invoice(number: str = "INV-7") -> Invoice:
    invoice = Invoice(number=number, customer="Acme", region="CA")
    invoice.add(LineItem(description="Widget", quantity=3, unit_price=4.25))
    return invoice


def test_render_lists_items_and_totals() -> None:
    text = render(_invoice())
    lines = text.splitlines()
    assert lines[0] == "Invoice INV-7 for Acme"
    assert lines[2].startswith("3 x Widget @ $4.25")
    assert lines[2].endswith("$12.75")
    assert lines[-1].endswith("$13.67")


def test_read_total_round_trips() -> None:
    assert read_total(render(_invoice())) == 13.67


def test_summary_line() -> None:
    assert summary_line([_invoice("A"), _invoice("B")]) == "2 invoices, $27.34 in all"
