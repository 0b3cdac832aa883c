"""The store's schema: every table benchkit writes, each column declared once.

A column is its name, its type and its meaning. Rows are built in
`benchkit.store.rows` and checked against these declarations when they are
written: a row whose keys are not exactly its table's columns is an error, never a
silent null. The types are polars' (what writes and reads the store, with no pyarrow
on a command's path), each one a plain Arrow type (`arrow_type`), so DuckDB, pandas,
polars and Spark read the store as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from functools import lru_cache
from types import UnionType
from typing import TYPE_CHECKING, Union, get_args, get_origin, get_type_hints

import polars as pl

from benchkit.arm_report import TOKEN_COLUMNS
from benchkit.bench.names import NAME
from benchkit.columns import STORED, Stored
from benchkit.records import Run

if TYPE_CHECKING:
    import pyarrow as pa
    from polars._typing import PolarsDataType

SCHEMA_VERSION = 12  # see benchkit/store/upgrade.py for the history and the steps


@dataclass(frozen=True, kw_only=True)
class Column:
    """One stored column: its name, its type and what it means."""

    name: str
    type: pl.DataType
    doc: str


def _schema(columns: Sequence[Column]) -> pl.Schema:
    return pl.Schema([(c.name, c.type) for c in columns])


FAILURE_TYPE = pl.Struct({"file": pl.String, "test": pl.String, "message": pl.String})
RERUN_TYPE = pl.Struct(
    {
        "file": pl.String,
        "attempts": pl.Int32,
        "passes": pl.Int32,
        "fails": pl.Int32,
        "no_tests": pl.Int32,
        "missing": pl.Boolean,
        "fail_rate_low": pl.Float64,
        "fail_rate_high": pl.Float64,
    }
)
STAMP = pl.Datetime("us", "UTC")

KINDS: dict[str, pl.DataType] = {
    "string": pl.String(),
    "int32": pl.Int32(),
    "int64": pl.Int64(),
    "float64": pl.Float64(),
    "bool": pl.Boolean(),
    "timestamp": STAMP,
    "strings": pl.List(pl.String),
    "pairs": pl.List(pl.String),  # (name, value) pairs, kept as NAME=VALUE
    "failures": pl.List(FAILURE_TYPE),
    "reruns": pl.List(RERUN_TYPE),
}
"""The kinds of column a record's field may be kept as, by name."""
ANNOTATED: dict[object, str] = {
    str: "string",
    int: "int32",
    float: "float64",
    bool: "bool",
    datetime: "timestamp",
    tuple[str, ...]: "strings",
}
"""The kind a field's annotation gives, when its `stored` names none."""


@dataclass(frozen=True, kw_only=True)
class StoredField:
    """A record's field as the `runs` table keeps it: its own column (`name`, `kind`),
    the stored fields of the record it holds (`part`), or computed columns."""

    field: str
    how: Stored
    name: str = ""
    kind: str = ""
    part: type | None = None


def _of_none(hint: object) -> object:
    """`X | None` as `X`."""
    args = [a for a in get_args(hint) if a is not type(None)]
    return args[0] if get_origin(hint) in (Union, UnionType) and len(args) == 1 else hint


_STORED_FIELDS: dict[type, tuple[StoredField, ...]] = {}  # by record: read once a process


def stored_fields(record: type) -> tuple[StoredField, ...]:
    """The fields of a record (a dataclass) the `runs` table keeps, in their order.
    Raises TypeError naming a field whose kind its annotation cannot tell."""
    if record not in _STORED_FIELDS:
        _STORED_FIELDS[record] = _stored_fields(record)
    return _STORED_FIELDS[record]


def _stored_fields(record: type) -> tuple[StoredField, ...]:
    hints = get_type_hints(record)
    found = []
    for f in fields(record):
        how = f.metadata.get(STORED)
        if not isinstance(how, Stored):
            continue
        hint = _of_none(hints[f.name])
        if how.part:
            assert isinstance(hint, type), f"{record.__name__}.{f.name}: a part is a record"
            found.append(StoredField(field=f.name, how=how, part=hint))
        elif how.columns:
            found.append(StoredField(field=f.name, how=how))
        else:
            kind = how.kind or ANNOTATED.get(hint, "")
            if kind not in KINDS:
                raise TypeError(f"{record.__name__}.{f.name}: say its column's kind (stored)")
            found.append(StoredField(field=f.name, how=how, name=how.name or f.name, kind=kind))
    return tuple(found)


def stored_columns(record: type) -> list[Column]:
    """The `runs` columns a record's stored fields make, in their order."""
    made: list[Column] = []
    for sf in stored_fields(record):
        if sf.part is not None:
            made += stored_columns(sf.part)
        elif sf.how.columns:
            made += [Column(name=c.name, type=KINDS[c.kind], doc=c.doc) for c in sf.how.columns]
        else:
            made.append(Column(name=sf.name, type=KINDS[sf.kind], doc=sf.how.doc))
    return made


_NAMES: dict[type, tuple[str, ...]] = {}  # by record: its columns' names, once a process


def stored_names(record: type) -> tuple[str, ...]:
    """The names of the `runs` columns a record's stored fields make (a run's row,
    built for every run a comparison is handed, asks them of each part it lacks)."""
    if record not in _NAMES:
        _NAMES[record] = tuple(c.name for c in stored_columns(record))
    return _NAMES[record]


def run_columns(record: type = Run) -> tuple[Column, ...]:
    """The `runs` table's declared columns: the key, the schema version, and what the
    record's fields keep (see `benchkit.records.stored`)."""
    key, *rest = stored_columns(record)
    return (
        key,
        Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
        *rest,
    )


RUN_COLUMNS: tuple[Column, ...] = run_columns()
"""The `runs` table; each bench check adds `<check>_status` and `<check>_count`."""

CHECK_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pl.String(), doc="The run this check belongs to."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="phase", type=pl.String(), doc="base (before the arm) or after."),
    Column(name="check", type=pl.String(), doc="Check name (install, typecheck, ...)."),
    Column(name="status", type=pl.String(), doc="ok, fail, timeout or missing."),
    Column(name="exit_code", type=pl.Int32(), doc="Exit code; null on timeout or missing."),
    Column(name="duration_s", type=pl.Float64(), doc="Seconds the command ran."),
    Column(name="count", type=pl.Int64(), doc="Errors, findings or failed tests; null if unread."),
    Column(name="note", type=pl.String(), doc="Why the status or count is what it is."),
    Column(name="log_path", type=pl.String(), doc="Path of the command's log."),
    Column(
        name="problem",
        type=pl.String(),
        doc="For the test check: why its run cannot be judged (interrupted, no test ran, ...).",
    ),
)

SITE_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pl.String(), doc="The run this site was scored for."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="site", type=pl.Int32(), doc="Index of the site in the human change."),
    Column(name="file", type=pl.String(), doc="Base path (the new path for a new file)."),
    Column(name="kind", type=pl.String(), doc="lines, insert, rename or binary."),
    Column(name="start", type=pl.Int32(), doc="First base line; for insert, the line before."),
    Column(name="length", type=pl.Int32(), doc="Base lines in the site; 0 for an insertion."),
    Column(name="covered", type=pl.Boolean(), doc="The arm's diff touched the site."),
    Column(name="matched", type=pl.Boolean(), doc="...and left the human's text, up to spaces."),
    Column(
        name="covered_session",
        type=pl.Int32(),
        doc="The session (its index in the sessions table) that first covered the site, where "
        "the arm's commits or its sessions' edits tell; null otherwise.",
    ),
    Column(
        name="covered_step",
        type=pl.Int32(),
        doc="The arm's commit (its step in the commits table) that first covered the site; "
        "null where the arm did not commit it.",
    ),
    Column(
        name="covered_kind",
        type=pl.String(),
        doc="That session's kind, as the tool says: agent, mechanical (rules) or manual.",
    ),
)

TEST_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pl.String(), doc="The run (or baseline key) of this test case."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="phase", type=pl.String(), doc="base, after, or rerun (a file alone)."),
    Column(name="attempt", type=pl.Int32(), doc="Rerun number from 1; 0 for base and after."),
    Column(name="file", type=pl.String(), doc="Test file; null when the report names none."),
    Column(name="test", type=pl.String(), doc="Test case name as the report gives it."),
    Column(
        name="test_id",
        type=pl.String(),
        doc="Full id in its file: class path and parameters (pytest), or the name.",
    ),
    Column(name="outcome", type=pl.String(), doc="passed, failed, error or skipped."),
    Column(name="duration_s", type=pl.Float64(), doc="Seconds, as reported."),
    Column(name="message", type=pl.String(), doc="First line of the failure message."),
    Column(
        name="xfail",
        type=pl.Boolean(),
        doc="Skipped as an expected failure (pytest's xfail); null before schema 10.",
    ),
)

SESSION_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pl.String(), doc="The run this session belongs to."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="session", type=pl.Int32(), doc="Index of the session in the arm's report."),
    Column(name="session_id", type=pl.String(), doc="The tool's id for the session."),
    Column(name="status", type=pl.String(), doc="As the tool reports it (accepted, ...)."),
    Column(
        name="cost_usd",
        type=pl.Float64(),
        doc="Cost of the session, as reported or computed from its tokens.",
    ),
    Column(name="cost_source", type=pl.String(), doc="reported, computed or missing."),
    Column(name="turns", type=pl.Int32(), doc="Turns of the session, as reported."),
    Column(name="duration_s", type=pl.Float64(), doc="Seconds, as reported."),
    *(Column(name=name, type=KINDS[kind], doc=doc) for name, kind, doc in TOKEN_COLUMNS),
    Column(
        name="files",
        type=pl.List(pl.String),
        doc="Files the session edited, in the order it first edited them.",
    ),
    Column(
        name="files_from",
        type=pl.String(),
        doc="Whence its files: tool (its own output) or commits (the arm's); null: none said.",
    ),
    Column(
        name="kind",
        type=pl.String(),
        doc="agent, mechanical (rules, a codemod) or manual, as the tool says; null otherwise.",
    ),
    Column(
        name="reason",
        type=pl.String(),
        doc="Why it ended as it did (rejected on tests), as the tool says.",
    ),
)

CI_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pl.String(), doc="The run whose change the forge checked."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="name", type=pl.String(), doc="The check (a workflow's job, or a run)."),
    Column(name="workflow", type=pl.String(), doc="Its workflow's name."),
    Column(
        name="state",
        type=pl.String(),
        doc="The forge's word: SUCCESS, FAILURE, ... (a PR's checks), or a run's status/"
        "conclusion (a fork's runs).",
    ),
    Column(name="bucket", type=pl.String(), doc="pass, fail, pending, skipping or cancel."),
    Column(name="started_at", type=STAMP, doc="When it started."),
    Column(name="completed_at", type=STAMP, doc="When it ended."),
    Column(name="link", type=pl.String(), doc="Its page on the forge."),
)

COMMIT_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pl.String(), doc="The run whose arm made this commit."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="step", type=pl.Int32(), doc="Its place among the arm's commits, from 0."),
    Column(name="sha", type=pl.String(), doc="The commit, in the arm's worktree."),
    Column(name="subject", type=pl.String(), doc="The first line of its message."),
    Column(name="files", type=pl.List(pl.String), doc="Files it changed."),
    Column(
        name="session",
        type=pl.Int32(),
        doc="The session it belongs to, where the sessions tell; null otherwise.",
    ),
)

FLIP_TYPE = pl.Struct({"test": pl.String, "base": pl.String, "head": pl.String})

AB_COLUMNS: tuple[Column, ...] = (
    Column(name="ab_id", type=pl.String(), doc="One `benchkit ab` comparison."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="command", type=pl.String(), doc="The command, identical on both sides."),
    Column(name="side", type=pl.String(), doc="base or head."),
    Column(name="ref", type=pl.String(), doc="The ref as given."),
    Column(name="sha", type=pl.String(), doc="The commit the ref named."),
    Column(name="repeat", type=pl.Int32(), doc="Repeat number, from 1."),
    Column(name="passed", type=pl.Int32(), doc="Tests passed; null when unread."),
    Column(name="failed", type=pl.Int32(), doc="Tests failed; null when unread."),
    Column(
        name="errors",
        type=pl.Int32(),
        doc="Tests that could not run (an import or collection error); null when unread.",
    ),
    Column(name="python", type=pl.String(), doc="The Python the command's `python` named."),
    Column(name="skipped", type=pl.Int32(), doc="Tests skipped; null when unread."),
    Column(name="duration_s", type=pl.Float64(), doc="Seconds the command ran."),
    Column(name="exit_code", type=pl.Int32(), doc="The command's exit code."),
    Column(name="source", type=pl.String(), doc="junit, summary or none: where counts came."),
    Column(
        name="flips",
        type=pl.List(FLIP_TYPE),
        doc="On head rows: tests whose outcome differs from base.",
    ),
)

PROBE_COLUMNS: tuple[Column, ...] = (
    Column(name="probe_id", type=pl.String(), doc="One `benchkit probe`."),
    Column(name="schema_version", type=pl.Int32(), doc="Version of this schema."),
    Column(name="base_sha", type=pl.String(), doc="The base commit."),
    Column(name="head_sha", type=pl.String(), doc="The head commit, whose tests are kept."),
    Column(
        name="reverted",
        type=pl.List(pl.String),
        doc="Source files restored to their base content.",
    ),
    Column(name="test", type=pl.String(), doc="file::name of the test."),
    Column(name="at_head", type=pl.String(), doc="Its outcome at head."),
    Column(
        name="reverted_outcome",
        type=pl.String(),
        doc="Its outcome with the files reverted (absent: not collected).",
    ),
    Column(
        name="verdict",
        type=pl.String(),
        doc="discriminates, does not discriminate, error (proves nothing), fails at head.",
    ),
    Column(name="message", type=pl.String(), doc="First line of the failure, if any."),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "runs": RUN_COLUMNS,
    "checks": CHECK_COLUMNS,
    "tests": TEST_COLUMNS,
    "sites": SITE_COLUMNS,
    "sessions": SESSION_COLUMNS,
    "commits": COMMIT_COLUMNS,
    "ci": CI_COLUMNS,
    "ab": AB_COLUMNS,
    "probes": PROBE_COLUMNS,
}


def check_columns(check: str) -> tuple[Column, Column]:
    """The two `runs` columns a bench check adds."""
    return (
        Column(name=f"{check}_status", type=pl.String(), doc=f"Status of {check} after the arm."),
        Column(name=f"{check}_count", type=pl.Int64(), doc=f"Count read from {check}."),
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


def table_columns(table: str, checks: Iterable[str] = ()) -> list[Column]:
    """A table's columns; a `runs` table's with those of its bench checks."""
    columns = list(TABLES[table])
    if table == "runs":
        for check in checks:
            columns.extend(check_columns(check))
    return columns


def table_schema(table: str, checks: Iterable[str] = ()) -> pl.Schema:
    """A table's columns and their types, as polars writes and reads them: made once a
    process for each table and checks, as every write asks, and shared (never changed)."""
    return _table_schema(table, tuple(checks))


@lru_cache(maxsize=256)
def _table_schema(table: str, checks: tuple[str, ...]) -> pl.Schema:
    return _schema(table_columns(table, checks))


def arrow_type(kind: PolarsDataType) -> pa.DataType:
    """A column's type as the plain Arrow type it is stored as (`string`, not polars'
    `large_string`), for what reads and writes the store through pyarrow: compaction,
    imports, a footer's read."""
    import pyarrow as pa

    if isinstance(kind, pl.List):
        return pa.list_(arrow_type(kind.inner))
    if isinstance(kind, pl.Struct):
        return pa.struct([(f.name, arrow_type(f.dtype)) for f in kind.fields])
    if isinstance(kind, pl.Datetime):
        return pa.timestamp(kind.time_unit, tz=kind.time_zone)
    plain: dict[object, pa.DataType] = {
        pl.String: pa.string(),
        pl.Int32: pa.int32(),
        pl.Int64: pa.int64(),
        pl.Float64: pa.float64(),
        pl.Boolean: pa.bool_(),
    }
    return plain[kind.base_type()]


def arrow_schema(table: str, checks: Iterable[str] = ()) -> pa.Schema:
    """A table's columns as an Arrow schema of plain types, each column's meaning in
    its field's metadata (`doc`): made once in a process for each table and checks,
    and shared (an Arrow schema never changes)."""
    return _arrow_schema(table, tuple(checks))


@lru_cache(maxsize=256)
def _arrow_schema(table: str, checks: tuple[str, ...]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field(c.name, arrow_type(c.type), metadata={"doc": c.doc})
            for c in table_columns(table, checks)
        ]
    )
