"""A frame of runs as the `runs` command lists it: `text.table` and `text.tests_block`
of its rows, the same text, but each column's cells made once per distinct value of
the fields they read. A store's thousands of runs share their benches, arms, checks
and gate findings: made a run at a time, the text of 5,000 runs took a command more
than its read (about 0.27 s of Python, against a read of 0.03 s)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from benchkit.analysis.text import (
    COLUMNS_READS,
    GATE_READS,
    NAME_READS,
    SPEC_COLUMNS,
    aligned,
    cell_of,
    columns,
    gate_findings,
    name,
    tests_lines,
    varying,
)
from benchkit.store.query import as_rows

_AT = "__at"  # each run's place in the frame, while its column's cells are made


def runs_listing(frame: pl.DataFrame, every: bool = True) -> str:
    """`text.table(rows, every)`, then the tests block where a run was judged, as
    `print_runs` shows a frame's rows."""
    header = columns(_outline(frame), every)
    body = [_cells(frame, *cell_of(h)) for h in header]
    listed = aligned(header, body)
    block = _tests(frame)
    return f"{listed}\n\n{block}" if block else listed


def _outline(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """What `columns` reads of the runs, once per distinct value: the spec columns,
    whether any resolved or tampered, and the checks' names."""
    return _distinct(
        frame, [c for c in frame.columns if c in COLUMNS_READS or c.endswith("_status")]
    )


def _tests(frame: pl.DataFrame) -> str:
    """`text.tests_block` of the frame's runs: those judged, whose `test_verdict` (a
    store's is text) is neither null nor empty, as `tests_block` reads a row's."""
    if "test_verdict" not in frame.columns:
        return ""
    verdict = pl.col("test_verdict")
    judged = frame.filter(verdict.is_not_null() & (verdict != ""))
    spec = [c for c in SPEC_COLUMNS if c in judged.columns]
    show = varying(_distinct(judged, spec))
    names = _cells(judged, NAME_READS, lambda row: name(row, show))
    findings = _cells(judged, GATE_READS, gate_findings)
    return tests_lines(names, judged.get_column("test_verdict").to_list(), findings)


def _distinct(frame: pl.DataFrame, names: Sequence[str]) -> list[dict[str, Any]]:
    """The distinct rows of these columns of the frame, first seen first."""
    return as_rows(frame.select(names).unique(maintain_order=True))


def _cells(
    frame: pl.DataFrame, reads: Sequence[str], make: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    """`make` of each run, called once for each distinct value of the fields it reads
    (a field the frame lacks reads as None, as `row.get` gives it)."""
    present = [c for c in reads if c in frame.columns]
    if not present:
        return [make({})] * frame.height
    distinct = (
        frame.select(present).with_row_index(_AT).group_by(present, maintain_order=True).agg(_AT)
    )
    made = [make(row) for row in as_rows(distinct.drop(_AT))]
    placed = distinct.select(_AT, pl.Series("cell", made, dtype=pl.String)).explode(_AT)
    return placed.sort(_AT).get_column("cell").to_list()
