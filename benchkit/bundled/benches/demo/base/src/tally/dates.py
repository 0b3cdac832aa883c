"""Due dates."""

from __future__ import annotations

from datetime import date, timedelta


def due_in_days(issued: date, days: int = 30) -> date:
    return issued + timedelta(days=days)


def due_next_month(issued: date) -> date:
    """The same day of the next month."""
    if issued.month == 12:
        return issued.replace(year=issued.year + 1, month=1)
    return issued.replace(month=issued.month + 1)


def is_overdue(due: date, today: date) -> bool:
    return today > due
