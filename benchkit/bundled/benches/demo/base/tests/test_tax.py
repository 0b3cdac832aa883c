import pytest

from tally.tax import rate_for, tax_for, tax_inclusive


def test_tax_for_known_region() -> None:
    assert tax_for(100.0, "NY") == 4.0


def test_half_cent_rounds_up() -> None:
    # 0.40 * 6.25% = 0.025 exactly: invoices round half up, never to even.
    assert tax_for(0.40, "TX") == 0.03


def test_tax_inclusive_takes_the_tax_back_out() -> None:
    assert tax_inclusive(107.25, "CA") == 100.0


def test_unknown_region() -> None:
    with pytest.raises(ValueError, match="no tax rate"):
        rate_for("ZZ")
