"""Reading old stores: one step per schema version, from N to N+1.

Every stored row carries `schema_version`. A store is read as the union of its
files (a column a file lacks reads as null); then, for the rows of each older
version in turn, `STEPS[version]` brings them one version up. A step is a function
of the table's name and its rows (lazily), and changes only the rows of its version.

Version history:
  1  the first store: runs, checks, sites (no gate, no arm report, no origin).
  2  runs gain the gate, the arm's report (cost, sessions), failure and process
     columns, `origin` and `ci_status`; new tables `tests` and `sessions`.
  3  runs gain the environment their checks ran with (`environment_s`, `env_key`,
     `env_python`, `env_packages`, `env_packages_digest`) and `resolved`; the gate
     may say `error`; tests gain `test_id` (a version-2 test's id is its name), checks
     `problem`; `ab` rows gain `errors` and `python` (a version-2 `ab` row's
     `failed` counts errored tests too).
  4  runs gain `sandbox` (what the arm and checks ran in; null before) and
     `warnings` (empty before).
  5  runs gain `launcher` (serial or processes; null before).
  6  runs gain `run_set`, `attempt`, `rerun_of`, `bench_digest`, `arm_digest`,
     `arm_vars` and `only_checks`; older runs belong to no set and their digests, vars
     and checks asked for are unknown (null).
  7  runs gain `start_s` and `record_s` (null before).
  8  runs gain `new_failing_files` and `removed_tests`: the gate's own new failing
     files and the tests gone after the arm (null before: that gate did not look).
  9  runs gain `tampered`, `ignored_written` and `ignored_written_count`: what the arm
     did to tests, their configuration and CI, and the ignored files it wrote, which
     its checks no longer see (null before: the checks ran in the arm's worktree).
  10 runs gain SWE-bench's grade of a run of a SWE-bench instance
     (`swebench_instance`, `swebench_status` and its four lists, `swebench_f2p_success`
     ...; null before); tests gain `xfail` (null before).
  11 runs gain their tokens (`input_tokens`, `cached_input_tokens`,
     `cache_write_tokens`, `output_tokens`),
     `reported_model` and `price_table` (a cost computed from tokens; null before, when
     no cost was computed); sessions gain `cost_source` (reported where a cost was
     given, else missing), their tokens, `files` and `files_from` (null before); a
     new table, `commits`, the arm's commits.
  12 runs gain `ci` (CI in words), `ci_s`, `outcome`, `session_reasons`, `pr_url` and
     `pushed_repository`, `pushed_branch`, `pushed_sha`; `ci_status` may say pending or
     none; sites gain `covered_session`, `covered_step` and `covered_kind`, sessions
     `kind` and `reason` (null before); a new table, `ci`, the forge's checks.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from benchkit.store.schema import SCHEMA_VERSION

Step = Callable[[str, pl.LazyFrame], pl.LazyFrame]


def _bump(version: int) -> pl.Expr:
    """`schema_version` one up on the rows of `version`."""
    old = pl.col("schema_version") == version
    return pl.when(old).then(pl.lit(version + 1, pl.Int32)).otherwise(pl.col("schema_version"))


def _column(rows: pl.LazyFrame, name: str, dtype: pl.DataType | type[pl.DataType]) -> pl.Expr:
    """A column of the rows, or nulls of its type where no file of theirs has it."""
    return pl.col(name) if name in rows.collect_schema().names() else pl.lit(None, dtype)


def _v1_to_v2(table: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    old = pl.col("schema_version") == 1
    changes = [_bump(1).alias("schema_version")]
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


def _v2_to_v3(table: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    # The new columns read as null (version 2 did not know the environment), but a
    # test's id, which was its name.
    old = pl.col("schema_version") == 2
    changes = [_bump(2).alias("schema_version")]
    if table == "tests":
        current = _column(rows, "test_id", pl.String)
        derived = pl.when(old).then(pl.coalesce(current, "test")).otherwise(current)
        changes.append(derived.alias("test_id"))
    return rows.with_columns(changes)


def _v3_to_v4(table: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    # Version 3 knew no sandbox (null: unknown) and kept no warnings (none).
    old = pl.col("schema_version") == 3
    changes = [_bump(3).alias("schema_version")]
    if table == "runs":
        current = _column(rows, "warnings", pl.List(pl.String))
        none: pl.Expr = pl.lit([], pl.List(pl.String))
        filled = pl.when(old).then(pl.coalesce(current, none)).otherwise(current)
        changes.append(filled.alias("warnings"))
    return rows.with_columns(changes)


def _v10_to_v11(table: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    # Version 10 computed no cost: a session's cost was reported, or missing.
    old = pl.col("schema_version") == 10
    changes = [_bump(10).alias("schema_version")]
    if table == "sessions":
        current = _column(rows, "cost_source", pl.String)
        source = pl.when(pl.col("cost_usd").is_null()).then(pl.lit("missing"))
        derived = source.otherwise(pl.lit("reported"))
        changes.append(pl.when(old).then(derived).otherwise(current).alias("cost_source"))
    return rows.with_columns(changes)


def _columns_added(version: int) -> Step:
    """The step from a version whose next only added columns: they read null."""

    def step(table: str, rows: pl.LazyFrame) -> pl.LazyFrame:
        return rows.with_columns(_bump(version).alias("schema_version"))

    return step


STEPS: dict[int, Step] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _columns_added(4),
    5: _columns_added(5),
    6: _columns_added(6),
    7: _columns_added(7),
    8: _columns_added(8),
    9: _columns_added(9),
    10: _v10_to_v11,
    11: _columns_added(11),
}


def upgrade(table: str, rows: pl.LazyFrame, oldest: int = 1) -> pl.LazyFrame:
    """Rows of any older version brought to `SCHEMA_VERSION`, step by step."""
    for version in range(oldest, SCHEMA_VERSION):
        rows = STEPS[version](table, rows)
    return rows
