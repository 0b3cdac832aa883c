"""The gate as a run page shows it (`benchkit.analysis.gate_view`)."""

from __future__ import annotations

from benchkit.analysis.gate_view import EDGE, Excerpt, Outcome, excerpt, gate_outcomes


def _test(
    phase: str, file: str, test: str, outcome: str, message: str = "", attempt: int = 0
) -> dict[str, object]:
    return {
        **{"phase": phase, "file": file, "test": test, "outcome": outcome},
        **{"message": message, "attempt": attempt},
    }


def test_each_test_not_passed_is_under_the_gates_word_charged_ones_first() -> None:
    row = {
        "regression_files": ["t/a.py"],
        "flaky_files": ["t/b.py"],
        "preexisting_files": ["t/c.py"],
        "new_failing_files": ["t/new.py"],
        "removed_tests": ["t/d.py::test_gone"],
    }
    tests = [
        _test("base", "t/c.py", "test_c", "failed", "at base too"),
        _test("after", "t/c.py", "test_c", "failed", "at base too"),
        _test("after", "t/b.py", "test_b", "failed", "timing\nmore"),
        _test("after", "t/a.py", "test_a", "failed", "assert 1 == 2"),
        _test("after", "t/a.py", "test_ok", "passed"),
        _test("after", "t/new.py", "", "error", "ImportError"),
        _test("rerun", "t/b.py", "test_b", "passed", attempt=1),
        _test("rerun", "t/b.py", "test_b2", "passed", attempt=1),  # one rerun of two cases
        _test("rerun", "t/a.py", "test_a", "failed", attempt=1),
        _test("rerun", "t/a.py", "test_ok", "passed", attempt=1),
    ]
    assert gate_outcomes(row, tests) == [
        Outcome("regression", "t/a.py::test_a", "assert 1 == 2", "passed 0 of 1 alone"),
        Outcome("new failing", "t/new.py::", "ImportError", "-"),
        Outcome("flaky", "t/b.py::test_b", "timing\nmore", "passed 1 of 1 alone"),
        Outcome("preexisting", "t/c.py::test_c", "at base too", "-"),
        Outcome("removed", "t/d.py::test_gone", "-", "-"),
    ]


def test_a_log_is_cut_to_its_first_and_last_lines() -> None:
    assert excerpt("one\ntwo\n") == Excerpt("one\ntwo", "", 0)
    lines = [f"line {n}" for n in range(20)]
    cut = excerpt("\n".join(lines))
    assert cut.head.splitlines() == lines[:EDGE] and cut.tail.splitlines() == lines[-EDGE:]
    assert cut.left_out == 20 - 2 * EDGE
