from decimal import Decimal

import pytest

from tally.money import Money


def test_of_float_keeps_the_decimal_digits() -> None:
    assert Money.of(0.1).amount == Decimal("0.1")


def test_round_is_half_up() -> None:
    assert Money.of("2.675").round().amount == Decimal("2.68")
    assert Money.of("-2.675").round().amount == Decimal("-2.68")


def test_format_has_symbol_and_separators() -> None:
    assert Money.of(1234.5).format() == "$1,234.50"
    assert Money.of(-3, "EUR").format() == "-€3.00"
    assert Money.of(7, "CHF").format() == "CHF 7.00"


def test_add_refuses_mixed_currencies() -> None:
    with pytest.raises(ValueError, match="cannot mix"):
        Money.of(1, "USD") + Money.of(1, "EUR")


def test_multiply_by_quantity() -> None:
    assert (Money.of("4.25") * 3).amount == Decimal("12.75")
