"""The metrics every comparison reads, defined once: what `compare`, `paired`,
`flips`, the plots and the report call coverage, pass, cost and the rest, as polars
expressions over the `runs` table's columns; and which runs are not their arm's
outcome at all."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from benchkit.records import CHECKS


def _ok(column: str) -> pl.Expr:
    return (pl.col(column) == "ok").cast(pl.Float64)


def passed() -> pl.Expr:
    """A run passes when it finished and its tests passed the gate (flaky included);
    a run that did not finish fails; one that finished without a gate verdict (its
    tests never ran: `--checks lint`, a bench without a test check, an import without
    one) is unknown, null, never a pass."""
    gate, finished = pl.col("test_verdict"), pl.col("status") == "ok"
    return (
        pl.when(finished & gate.is_null())
        .then(None)
        .otherwise(finished & gate.is_in(["pass", "flaky-pass"]))
        .cast(pl.Float64)
    )


NOT_THE_ARMS = ("interrupted", "crashed", "running")  # stopped by the lab, not the arm
STOPPED = "__stopped"


def stopped() -> pl.Expr:
    """A run interrupted, crashed or still running: its status is not its arm's
    outcome (its coverage is of a tree the arm may never have touched), so no mean
    counts it; running the set again finishes it."""
    return pl.col("status").is_in(NOT_THE_ARMS).fill_null(False)


BOOKKEEPING = {"schema_version", "pid", "process_start"}  # numbers, not figures


def gate_passed() -> pl.Expr:
    """The tests by the gate's verdict (flaky-pass passes; a preexisting failure does
    not fail them); null where the gate did not judge."""
    gate = pl.col("test_verdict")
    return pl.when(gate.is_not_null() & (gate != "error")).then(
        gate.is_in(["pass", "flaky-pass"]).cast(pl.Float64)
    )


def flaky(columns: list[str]) -> pl.Expr:
    """A run with a flaky test file (it failed in the full run and passed rerun alone),
    whatever the gate's final verdict: a run that failed on a regression can have
    one too; null where the gate did not judge."""
    verdict = pl.col("test_verdict")
    if "flaky_files" not in columns:
        return pl.when(verdict.is_not_null()).then((verdict == "flaky-pass").cast(pl.Float64))
    files = pl.col("flaky_files").list.len().fill_null(0) > 0
    judged = verdict.is_not_null() | pl.col("flaky_files").is_not_null()
    return pl.when(judged).then((files | (verdict == "flaky-pass")).cast(pl.Float64))


def metric_exprs(schema: Mapping[str, pl.DataType]) -> dict[str, pl.Expr]:
    """Every metric the runs' columns allow, by name: the named ones, then every other
    numeric column by its own name."""
    columns = list(schema)
    total = pl.col("sites_total").cast(pl.Float64)
    found: dict[str, pl.Expr] = {
        "coverage": pl.when(total > 0).then(pl.col("sites_covered") / total),
        "matched": pl.when(total > 0).then(pl.col("sites_matched") / total),
        "unrelated": pl.col("sites_unrelated").cast(pl.Float64),
        "cost": pl.col("cost_usd").cast(pl.Float64),
        "wall": pl.col("wall_s").cast(pl.Float64),
        "pass": passed(),
        # the bench could not judge: the tests did not run at base; neither pass nor fail
        "error": (pl.col("test_verdict") == "error").fill_null(False).cast(pl.Float64),
        "flaky": flaky(columns),
    }
    if "test_verdict" in columns:
        found["gate"] = gate_passed()
    if "resolved" in columns:
        found["resolved"] = pl.col("resolved").cast(pl.Float64)
    for check in CHECKS:
        if f"{check}_status" in columns:
            found[f"{check}_ok"] = pl.when(pl.col(f"{check}_status").is_not_null()).then(
                _ok(f"{check}_status")
            )
    for name, dtype in schema.items():
        if name in BOOKKEEPING or name in found:
            continue
        if dtype.is_numeric() or dtype == pl.Boolean:
            found[name] = pl.col(name).cast(pl.Float64)
    return found


RATES = {"pass", "error", "flaky", "gate", "resolved", *(f"{c}_ok" for c in CHECKS)}
DEFAULT_METRICS = (
    "coverage",
    "matched",
    "unrelated",
    "cost",
    "wall",
    "pass",
    "error",
    "flaky",
    "gate",
    *(f"{c}_ok" for c in CHECKS),
)
