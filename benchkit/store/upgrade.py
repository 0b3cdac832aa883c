"""Reading old stores: one step per schema version, from N to N+1.

Every stored row carries `schema_version`. A store is read as the union of its
files (a column a file lacks reads as null); then, for the rows of each older
version in turn, `STEPS[version]` brings them one version up. A step is a function
of the table's name and its rows (lazily), and changes only the rows of its version.

Version history:
  1  the first store: runs, checks, sites (no gate, no arm report, no origin).
  2  runs gain the gate, the arm's report (cost, sessions), failure and process
     columns, `origin` and `ci_status`; new tables `tests` and `sessions`.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from benchkit.store.schema import SCHEMA_VERSION

Step = Callable[[str, pl.LazyFrame], pl.LazyFrame]


def _v1_to_v2(table: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    old = pl.col("schema_version") == 1
    changes = [
        pl.when(old)
        .then(pl.lit(2, pl.Int32))
        .otherwise(pl.col("schema_version"))
        .alias("schema_version")
    ]
    if table == "runs":
        # Version 1 knew no arm report: its cost was never reported.
        defaults = {
            "cost_source": pl.lit("missing"),
            "flake_reruns": pl.lit(1, pl.Int32),
            "baseline_cached": pl.lit(False),
            "origin": pl.lit("pilot"),
        }
        changes += [
            pl.when(old).then(pl.coalesce(pl.col(name), value)).otherwise(pl.col(name)).alias(name)
            for name, value in defaults.items()
        ]
    return rows.with_columns(changes)


STEPS: dict[int, Step] = {1: _v1_to_v2}


def upgrade(table: str, rows: pl.LazyFrame, oldest: int = 1) -> pl.LazyFrame:
    """Rows of any older version brought to `SCHEMA_VERSION`, step by step."""
    for version in range(oldest, SCHEMA_VERSION):
        rows = STEPS[version](table, rows)
    return rows
