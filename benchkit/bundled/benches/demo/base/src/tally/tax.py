"""Sales tax by region."""

from typing import Final

from tally.compat import round_money

RATES: Final = {
    "CA": 0.0725,
    "NY": 0.04,
    "TX": 0.0625,
    "OR": 0.0,
}


def rate_for(region: str) -> float:
    try:
        return RATES[region]
    except KeyError:
        raise ValueError(f"no tax rate for region {region!r}") from None


def tax_for(amount: float, region: str) -> float:
    """Tax on an amount, rounded to the cent, half up."""
    return round_money(amount * rate_for(region))


def tax_inclusive(amount: float, region: str) -> float:
    """The pre-tax part of a tax-inclusive amount."""
    return round_money(amount / (1 + rate_for(region)))
