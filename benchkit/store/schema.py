"""The store's schema: every table benchkit writes, each column declared once.

A column is its name, its Arrow type and its meaning. Rows are built in
`benchkit.store.rows` and checked against these declarations when they are
written: a row whose keys are not exactly its table's columns is an error, never a
silent null. Plain Arrow types only, so DuckDB, pandas, polars and Spark read the
store as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from benchkit.bench.names import NAME

SCHEMA_VERSION = 7  # see benchkit/store/upgrade.py for the history and the steps


@dataclass(frozen=True, kw_only=True)
class Column:
    """One stored column: its name, its Arrow type and what it means."""

    name: str
    type: pa.DataType
    doc: str


def _schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type, metadata={"doc": c.doc}) for c in columns])


FAILURE_TYPE = pa.struct([("file", pa.string()), ("test", pa.string()), ("message", pa.string())])
RERUN_TYPE = pa.struct(
    [
        ("file", pa.string()),
        ("attempts", pa.int32()),
        ("passes", pa.int32()),
        ("fails", pa.int32()),
        ("no_tests", pa.int32()),
        ("missing", pa.bool_()),
        ("fail_rate_low", pa.float64()),
        ("fail_rate_high", pa.float64()),
    ]
)

RUN_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pa.string(), doc="Unique id of the pilot's run."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(
        name="origin",
        type=pa.string(),
        doc="pilot (run here), imported (recorded elsewhere) or simulated.",
    ),
    Column(name="bench", type=pa.string(), doc="Bench name."),
    Column(name="bench_path", type=pa.string(), doc="The bench.toml the pilot read."),
    Column(name="arm", type=pa.string(), doc="Arm as given (noop, human, replay:NAME, ...)."),
    Column(name="executor", type=pa.string(), doc="Executor label handed to the arm."),
    Column(name="model", type=pa.string(), doc="Model name handed to the arm."),
    Column(name="max_cost", type=pa.float64(), doc="Budget cap in USD; null when none."),
    Column(name="trial", type=pa.int32(), doc="Repeat index, from 1."),
    Column(name="flake_reruns", type=pa.int32(), doc="Reruns alone of each new failing file."),
    Column(
        name="arm_vars",
        type=pa.list_(pa.string()),
        doc="NAME=VALUE of each of the arm file's [vars] the pilot ran with.",
    ),
    Column(
        name="only_checks",
        type=pa.list_(pa.string()),
        doc="The bench's checks the pilot was asked to run (--checks); empty: all.",
    ),
    Column(
        name="run_set",
        type=pa.string(),
        doc="The run set it belongs to (--set; `default` without it); null before sets.",
    ),
    Column(
        name="attempt",
        type=pa.int32(),
        doc="Attempt at its unit (bench, arm, executor, model, max_cost, trial) in its "
        "set, from 1; analysis takes the latest.",
    ),
    Column(name="rerun_of", type=pa.string(), doc="The run `benchkit rerun` ran again."),
    Column(name="status", type=pa.string(), doc="ok, failed, timeout, interrupted, crashed."),
    Column(name="failure_kind", type=pa.string(), doc="Why the run failed; null when ok."),
    Column(name="failure_detail", type=pa.string(), doc="One line on the failure; null if ok."),
    Column(name="base_sha", type=pa.string(), doc="Base commit, resolved when the pilot began."),
    Column(name="human_sha", type=pa.string(), doc="Commit of the human reference."),
    Column(name="benchkit_version", type=pa.string(), doc="benchkit version that ran it."),
    Column(name="bench_digest", type=pa.string(), doc="Digest of the bench file it ran."),
    Column(
        name="arm_digest",
        type=pa.string(),
        doc="Digest of the arm file (or replayed patch) and its vars; null for built-in arms.",
    ),
    Column(name="started_at", type=pa.timestamp("us", tz="UTC"), doc="Start time, UTC."),
    Column(
        name="wall_s",
        type=pa.float64(),
        doc="Seconds from the pilot's start until its record was written; the sum of the phases.",
    ),
    Column(
        name="start_s",
        type=pa.float64(),
        doc="Seconds before the first stage: the pilot's folder, first heartbeat, first row.",
    ),
    Column(name="prepare_s", type=pa.float64(), doc="Seconds to mirror and make the worktree."),
    Column(
        name="environment_s",
        type=pa.float64(),
        doc="Seconds to build or reuse the bench's environment, and copy it for the pilot.",
    ),
    Column(name="baseline_s", type=pa.float64(), doc="Seconds of the checks at base."),
    Column(name="execute_s", type=pa.float64(), doc="Seconds the arm ran, diff included."),
    Column(name="verify_s", type=pa.float64(), doc="Seconds of the checks after the arm."),
    Column(name="score_s", type=pa.float64(), doc="Seconds to score the diff."),
    Column(
        name="record_s",
        type=pa.float64(),
        doc="Seconds to build the record and write its files (cleanup after is in the log).",
    ),
    Column(name="sites_total", type=pa.int32(), doc="Sites of the human reference."),
    Column(name="sites_covered", type=pa.int32(), doc="Sites the arm's diff touched."),
    Column(name="sites_matched", type=pa.int32(), doc="Covered sites with the human's text."),
    Column(name="sites_unrelated", type=pa.int32(), doc="Arm hunks touching no human site."),
    Column(name="files_recall", type=pa.float64(), doc="Human files the arm touched / all."),
    Column(name="files_precision", type=pa.float64(), doc="Arm files the human touched / all."),
    Column(name="diff_lines", type=pa.int32(), doc="Lines added plus removed by the arm."),
    Column(
        name="test_verdict",
        type=pa.string(),
        doc="The gate: pass, flaky-pass, fail, or error (the tests did not run at base).",
    ),
    Column(name="test_reasons", type=pa.string(), doc="Why the gate failed, '; '-joined."),
    Column(
        name="preexisting_files",
        type=pa.list_(pa.string()),
        doc="Failing test files whose failures all failed at base: not charged.",
    ),
    Column(
        name="flaky_files",
        type=pa.list_(pa.string()),
        doc="New failing test files that passed when rerun alone.",
    ),
    Column(
        name="regression_files",
        type=pa.list_(pa.string()),
        doc="New failing test files that failed every rerun alone.",
    ),
    Column(
        name="missing_files",
        type=pa.list_(pa.string()),
        doc="New failing test files that could not be run alone, or ran no test.",
    ),
    Column(
        name="regressions",
        type=pa.int32(),
        doc="Tests that passed at base and fail after, in regression files.",
    ),
    Column(
        name="first_failures",
        type=pa.list_(FAILURE_TYPE),
        doc="The first charged failures: file, test, message.",
    ),
    Column(
        name="rerun_stats",
        type=pa.list_(RERUN_TYPE),
        doc="Per rerun file: reruns alone, passes, fails (the failing full run counted too), "
        "and the Wilson 95% interval of its fail rate over every observation.",
    ),
    Column(
        name="resolved",
        type=pa.bool_(),
        doc="The bench's must_pass and keep_passing tests passed after the arm, and nothing "
        "regressed; null when the bench names none or its tests could not be judged.",
    ),
    Column(name="retryable", type=pa.bool_(), doc="Running the pilot again may succeed."),
    Column(name="arm_exit_code", type=pa.int32(), doc="Exit code of the arm's command."),
    Column(name="cost_usd", type=pa.float64(), doc="Cost the arm reported, in USD."),
    Column(name="cost_source", type=pa.string(), doc="reported or missing: never invented."),
    Column(name="sessions", type=pa.int32(), doc="Agent sessions the arm reported."),
    Column(name="sessions_accepted", type=pa.int32(), doc="Sessions whose work was kept."),
    Column(name="sessions_rejected", type=pa.int32(), doc="Sessions whose work was dropped."),
    Column(name="feedback_rounds", type=pa.int32(), doc="Feedback rounds the arm reported."),
    Column(name="over_budget", type=pa.bool_(), doc="The arm stopped at, or went past, its cap."),
    Column(name="turns", type=pa.int32(), doc="Agent turns the arm reported."),
    Column(
        name="reported_flaky_files",
        type=pa.list_(pa.string()),
        doc="Flaky test files the tool itself reported.",
    ),
    Column(name="pid", type=pa.int64(), doc="Process id of the benchkit that ran the pilot."),
    Column(name="host", type=pa.string(), doc="Host name of the machine that ran it."),
    Column(
        name="process_start",
        type=pa.int64(),
        doc="Start time of that process (clock ticks since boot), to tell a live run.",
    ),
    Column(
        name="ci_status",
        type=pa.string(),
        doc="CI's verdict on the change, where known (imported records): ok or fail.",
    ),
    Column(
        name="env_key",
        type=pa.string(),
        doc="Cache key of the environment the checks ran in; none: the caller's PATH.",
    ),
    Column(name="env_python", type=pa.string(), doc="Version and path of the checks' Python."),
    Column(
        name="env_packages",
        type=pa.list_(pa.string()),
        doc="name==version of every package in the checks' environment (venv).",
    ),
    Column(name="env_packages_digest", type=pa.string(), doc="Digest of env_packages."),
    Column(name="baseline_key", type=pa.string(), doc="Key of the base checks' cache entry."),
    Column(name="baseline_cached", type=pa.bool_(), doc="The base checks came from the cache."),
    Column(name="worktree", type=pa.string(), doc="Worktree path; kept only with --keep."),
    Column(name="artifacts", type=pa.string(), doc="Folder of the run's logs and agent.patch."),
    Column(
        name="sandbox",
        type=pa.string(),
        doc="What the arm and checks ran in: bwrap (bubblewrap) or none; null if not run here.",
    ),
    Column(
        name="warnings",
        type=pa.list_(pa.string()),
        doc="What the run left out or could not do (a binary file with a secret, say).",
    ),
    Column(
        name="launcher",
        type=pa.string(),
        doc="What ran the pilot: serial (benchkit's own process), processes (a worker, "
        "`--jobs`) or ray (a Ray task); its worker is `host` and `pid`. Null if not run here.",
    ),
)
"""The `runs` table; each bench check adds `<check>_status` and `<check>_count`."""

CHECK_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pa.string(), doc="The run this check belongs to."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="phase", type=pa.string(), doc="base (before the arm) or after."),
    Column(name="check", type=pa.string(), doc="Check name (install, typecheck, ...)."),
    Column(name="status", type=pa.string(), doc="ok, fail, timeout or missing."),
    Column(name="exit_code", type=pa.int32(), doc="Exit code; null on timeout or missing."),
    Column(name="duration_s", type=pa.float64(), doc="Seconds the command ran."),
    Column(name="count", type=pa.int64(), doc="Errors, findings or failed tests; null if unread."),
    Column(name="note", type=pa.string(), doc="Why the status or count is what it is."),
    Column(name="log_path", type=pa.string(), doc="Path of the command's log."),
    Column(
        name="problem",
        type=pa.string(),
        doc="For the test check: why its run cannot be judged (interrupted, no test ran, ...).",
    ),
)

SITE_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pa.string(), doc="The run this site was scored for."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="site", type=pa.int32(), doc="Index of the site in the human change."),
    Column(name="file", type=pa.string(), doc="Base path (the new path for a new file)."),
    Column(name="kind", type=pa.string(), doc="lines, insert, rename or binary."),
    Column(name="start", type=pa.int32(), doc="First base line; for insert, the line before."),
    Column(name="length", type=pa.int32(), doc="Base lines in the site; 0 for an insertion."),
    Column(name="covered", type=pa.bool_(), doc="The arm's diff touched the site."),
    Column(name="matched", type=pa.bool_(), doc="...and left the human's text, up to spaces."),
)

TEST_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pa.string(), doc="The run (or baseline key) of this test case."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="phase", type=pa.string(), doc="base, after, or rerun (a file alone)."),
    Column(name="attempt", type=pa.int32(), doc="Rerun number from 1; 0 for base and after."),
    Column(name="file", type=pa.string(), doc="Test file; null when the report names none."),
    Column(name="test", type=pa.string(), doc="Test case name as the report gives it."),
    Column(
        name="test_id",
        type=pa.string(),
        doc="Full id in its file: class path and parameters (pytest), or the name.",
    ),
    Column(name="outcome", type=pa.string(), doc="passed, failed, error or skipped."),
    Column(name="duration_s", type=pa.float64(), doc="Seconds, as reported."),
    Column(name="message", type=pa.string(), doc="First line of the failure message."),
)

SESSION_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pa.string(), doc="The run this session belongs to."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="session", type=pa.int32(), doc="Index of the session in the arm's report."),
    Column(name="session_id", type=pa.string(), doc="The tool's id for the session."),
    Column(name="status", type=pa.string(), doc="As the tool reports it (accepted, ...)."),
    Column(name="cost_usd", type=pa.float64(), doc="Cost of the session, as reported."),
    Column(name="turns", type=pa.int32(), doc="Turns of the session, as reported."),
    Column(name="duration_s", type=pa.float64(), doc="Seconds, as reported."),
)

FLIP_TYPE = pa.struct([("test", pa.string()), ("base", pa.string()), ("head", pa.string())])

AB_COLUMNS: tuple[Column, ...] = (
    Column(name="ab_id", type=pa.string(), doc="One `benchkit ab` comparison."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="command", type=pa.string(), doc="The command, identical on both sides."),
    Column(name="side", type=pa.string(), doc="base or head."),
    Column(name="ref", type=pa.string(), doc="The ref as given."),
    Column(name="sha", type=pa.string(), doc="The commit the ref named."),
    Column(name="repeat", type=pa.int32(), doc="Repeat number, from 1."),
    Column(name="passed", type=pa.int32(), doc="Tests passed; null when unread."),
    Column(name="failed", type=pa.int32(), doc="Tests failed; null when unread."),
    Column(
        name="errors",
        type=pa.int32(),
        doc="Tests that could not run (an import or collection error); null when unread.",
    ),
    Column(name="python", type=pa.string(), doc="The Python the command's `python` named."),
    Column(name="skipped", type=pa.int32(), doc="Tests skipped; null when unread."),
    Column(name="duration_s", type=pa.float64(), doc="Seconds the command ran."),
    Column(name="exit_code", type=pa.int32(), doc="The command's exit code."),
    Column(name="source", type=pa.string(), doc="junit, summary or none: where counts came."),
    Column(
        name="flips",
        type=pa.list_(FLIP_TYPE),
        doc="On head rows: tests whose outcome differs from base.",
    ),
)

PROBE_COLUMNS: tuple[Column, ...] = (
    Column(name="probe_id", type=pa.string(), doc="One `benchkit probe`."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="base_sha", type=pa.string(), doc="The base commit."),
    Column(name="head_sha", type=pa.string(), doc="The head commit, whose tests are kept."),
    Column(
        name="reverted",
        type=pa.list_(pa.string()),
        doc="Source files restored to their base content.",
    ),
    Column(name="test", type=pa.string(), doc="file::name of the test."),
    Column(name="at_head", type=pa.string(), doc="Its outcome at head."),
    Column(
        name="reverted_outcome",
        type=pa.string(),
        doc="Its outcome with the files reverted (absent: not collected).",
    ),
    Column(
        name="verdict",
        type=pa.string(),
        doc="discriminates, does not discriminate, error (proves nothing), fails at head.",
    ),
    Column(name="message", type=pa.string(), doc="First line of the failure, if any."),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "runs": RUN_COLUMNS,
    "checks": CHECK_COLUMNS,
    "tests": TEST_COLUMNS,
    "sites": SITE_COLUMNS,
    "sessions": SESSION_COLUMNS,
    "ab": AB_COLUMNS,
    "probes": PROBE_COLUMNS,
}


def check_columns(check: str) -> tuple[Column, Column]:
    """The two `runs` columns a bench check adds."""
    return (
        Column(name=f"{check}_status", type=pa.string(), doc=f"Status of {check} after the arm."),
        Column(name=f"{check}_count", type=pa.int64(), doc=f"Count read from {check}."),
    )


DECLARED_NAMES = {table: frozenset(c.name for c in columns) for table, columns in TABLES.items()}


def check_of(column: str) -> str | None:
    """The bench check a `runs` column `<check>_status` or `<check>_count` is about, or
    None: a declared column (`ci_status`) is no check's, and a check's name is a name
    (see `benchkit.bench.names`)."""
    declared = DECLARED_NAMES["runs"]
    if column in declared:
        return None
    for suffix in ("_status", "_count"):
        check = column.removesuffix(suffix)
        if check != column and re.match(NAME, check) and f"{check}_status" not in declared:
            return check
    return None


def table_schema(table: str, checks: Iterable[str] = ()) -> pa.Schema:
    columns = list(TABLES[table])
    if table == "runs":
        for check in checks:
            columns.extend(check_columns(check))
    return _schema(columns)
