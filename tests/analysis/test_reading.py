"""A stored value as a report page shows it (`benchkit.analysis.reading`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from benchkit.analysis.reading import Shown, shown


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("wall_s", 0.103501655, Shown("104 ms", "0.103501655 s")),
        ("wall_s", 2.34, Shown("2.3 s", "2.34 s")),
        ("wall_s", 234.4, Shown("234 s", "234.4 s")),
        ("cost_usd", 0.0042, Shown("$0.0042", "0.0042")),
        ("max_cost", 0.5, Shown("$0.50", "0.5")),
        ("started_at", datetime(2026, 12, 3, 7, 1, 2, 345678, tzinfo=UTC),
         Shown("2026-12-03 07:01:02 UTC", "2026-12-03T07:01:02.345678+00:00")),
        ("started_at", datetime(2026, 12, 3, 7, 1, 2, 345678),
         Shown("2026-12-03 07:01:02 UTC", "2026-12-03T07:01:02.345678")),
        ("resolved", None, Shown("-")),
        ("over_budget", False, Shown("no")),
        ("warnings", [], Shown("-")),
        ("flaky_files", ["a.py", "b.py"], Shown("a.py, b.py")),
        ("first_failures",
         [{"file": "t.py", "test": "test_a", "message": "assert 1 == 2\nwhere"},
          {"file": "t.py", "test": "test_b", "message": None}],
         Shown("t.py::test_a: assert 1 == 2; t.py::test_b")),
        ("arm_vars", {"effort": "high", "n": 2}, Shown("effort high, n 2")),
        ("pid", 4242, Shown("4242")),
    ],
)  # fmt: skip
def test_a_value_reads_rounded_and_its_exact_form_is_kept(
    field: str, value: object, expected: Shown
) -> None:
    assert shown(field, value) == expected
