"""The gate as a run page shows it: the tests that did not pass, each under the
gate's word for it, and each check's log cut to its first and last lines.

Pure: a run's row and its tests' rows in, rows of text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ORDER = ("regression", "new failing", "missing", "failed", "flaky", "preexisting", "removed")
"""The outcomes as a page lists them: what is charged to the arm first."""

EDGE = 3
"""Lines of a log shown at each end while it is folded."""


@dataclass(frozen=True)
class Outcome:
    verdict: str
    test: str  # its full id: file::test
    message: str
    reruns: str  # `passed 1 of 1 alone`, or -


@dataclass(frozen=True)
class Excerpt:
    head: str
    tail: str  # empty when the log is short enough to show whole in `head`
    left_out: int  # lines between them


def _verdict(file: str, row: Mapping[str, Any]) -> str:
    for field, word in (
        ("regression_files", "regression"),
        ("new_failing_files", "new failing"),
        ("missing_files", "missing"),
        ("flaky_files", "flaky"),
        ("preexisting_files", "preexisting"),
    ):
        if file in (row.get(field) or []):
            return word
    return "failed"


def gate_outcomes(row: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> list[Outcome]:
    """Each test that did not pass after the arm, under the gate's word for its file
    (reruns alone counted for a flaky one), then the tests the arm removed."""
    reruns: dict[str, dict[int, bool]] = {}  # a file's reruns alone: each passed whole?
    for t in tests:
        if t["phase"] == "rerun":
            tries = reruns.setdefault(str(t["file"] or ""), {})
            tries[int(t["attempt"])] = (
                tries.get(int(t["attempt"]), True) and t["outcome"] == "passed"
            )
    found = []
    for t in tests:
        if t["phase"] != "after" or t["outcome"] == "passed":
            continue
        file = str(t["file"] or "")
        alone = list(reruns.get(file, {}).values())
        said = str(t["message"] or "").strip()
        found.append(
            Outcome(
                verdict=_verdict(file, row),
                test=f"{file}::{t['test']}" if file else str(t["test"]),
                message=said or "-",
                reruns=f"passed {sum(alone)} of {len(alone)} alone" if alone else "-",
            )
        )
    found += [Outcome("removed", str(t), "-", "-") for t in row.get("removed_tests") or []]
    return sorted(found, key=lambda o: (ORDER.index(o.verdict), o.test))


def excerpt(log: str) -> Excerpt:
    """A log's first and last `EDGE` lines and how many lie between; a short log whole."""
    lines = log.rstrip("\n").splitlines()
    if len(lines) <= 2 * EDGE + 1:
        return Excerpt("\n".join(lines), "", 0)
    head, tail = lines[:EDGE], lines[-EDGE:]
    return Excerpt("\n".join(head), "\n".join(tail), len(lines) - 2 * EDGE)
