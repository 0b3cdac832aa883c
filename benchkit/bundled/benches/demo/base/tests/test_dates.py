from datetime import date

from tally.dates import due_in_days, due_next_month, is_overdue


def test_due_in_days() -> None:
    assert due_in_days(date(2024, 1, 1)) == date(2024, 1, 31)


def test_due_next_month_in_december() -> None:
    assert due_next_month(date(2024, 12, 5)) == date(2025, 1, 5)


def test_due_next_month_from_a_month_end() -> None:
    # Known bug (issue #12): January 31st has no February twin; it should clamp
    # to the month's last day, but replace() raises.
    assert due_next_month(date(2024, 1, 31)) == date(2024, 2, 29)


def test_is_overdue() -> None:
    assert is_overdue(date(2024, 1, 1), date(2024, 1, 2))
    assert not is_overdue(date(2024, 1, 1), date(2024, 1, 1))
