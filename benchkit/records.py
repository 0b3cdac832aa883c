"""The store's schema: every record benchkit keeps, and every column it writes.

Each stored table is declared here once, as a list of columns with a type and a
meaning. Records are frozen dataclasses; `*_rows` turn them into plain rows that
`store` writes with the declared Arrow schema, so DuckDB, pandas, polars and Spark
read the store as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

SCHEMA_VERSION = 1

RunStatus = Literal["ok", "failed", "timeout", "interrupted", "crashed", "running"]
CheckStatus = Literal["ok", "fail", "timeout", "missing"]
Phase = Literal["base", "after"]


@dataclass(frozen=True, kw_only=True)
class Column:
    """One stored column: its name, its Arrow type and what it means."""

    name: str
    type: pa.DataType
    doc: str


def _schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type, metadata={"doc": c.doc}) for c in columns])


RUN_COLUMNS: tuple[Column, ...] = (
    Column(name="run_id", type=pa.string(), doc="Unique id of the pilot's run."),
    Column(name="schema_version", type=pa.int32(), doc="Version of this schema."),
    Column(name="bench", type=pa.string(), doc="Bench name."),
    Column(name="bench_path", type=pa.string(), doc="The bench.toml the pilot read."),
    Column(name="arm", type=pa.string(), doc="Arm as given (noop, human, replay:NAME, ...)."),
    Column(name="executor", type=pa.string(), doc="Executor label handed to the arm."),
    Column(name="model", type=pa.string(), doc="Model name handed to the arm."),
    Column(name="max_cost", type=pa.float64(), doc="Budget cap in USD; null when none."),
    Column(name="trial", type=pa.int32(), doc="Repeat index, from 1."),
    Column(name="status", type=pa.string(), doc="ok, failed, timeout, interrupted, crashed."),
    Column(name="failure_kind", type=pa.string(), doc="Why the run failed; null when ok."),
    Column(name="failure_detail", type=pa.string(), doc="One line on the failure; null if ok."),
    Column(name="base_sha", type=pa.string(), doc="Base commit, resolved when the pilot began."),
    Column(name="human_sha", type=pa.string(), doc="Commit of the human reference."),
    Column(name="benchkit_version", type=pa.string(), doc="benchkit version that ran it."),
    Column(name="started_at", type=pa.timestamp("us", tz="UTC"), doc="Start time, UTC."),
    Column(name="wall_s", type=pa.float64(), doc="Seconds from start to the record stage."),
    Column(name="prepare_s", type=pa.float64(), doc="Seconds to mirror and make the worktree."),
    Column(name="baseline_s", type=pa.float64(), doc="Seconds of the checks at base."),
    Column(name="execute_s", type=pa.float64(), doc="Seconds the arm ran, diff included."),
    Column(name="verify_s", type=pa.float64(), doc="Seconds of the checks after the arm."),
    Column(name="score_s", type=pa.float64(), doc="Seconds to score the diff."),
    Column(name="sites_total", type=pa.int32(), doc="Sites of the human reference."),
    Column(name="sites_covered", type=pa.int32(), doc="Sites the arm's diff touched."),
    Column(name="sites_matched", type=pa.int32(), doc="Covered sites with the human's text."),
    Column(name="sites_unrelated", type=pa.int32(), doc="Arm hunks touching no human site."),
    Column(name="files_recall", type=pa.float64(), doc="Human files the arm touched / all."),
    Column(name="files_precision", type=pa.float64(), doc="Arm files the human touched / all."),
    Column(name="diff_lines", type=pa.int32(), doc="Lines added plus removed by the arm."),
    Column(name="worktree", type=pa.string(), doc="Worktree path; kept only with --keep."),
    Column(name="artifacts", type=pa.string(), doc="Folder of the run's logs and agent.patch."),
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

TABLES: dict[str, tuple[Column, ...]] = {
    "runs": RUN_COLUMNS,
    "checks": CHECK_COLUMNS,
    "sites": SITE_COLUMNS,
}


def check_columns(check: str) -> tuple[Column, Column]:
    """The two `runs` columns a bench check adds."""
    return (
        Column(name=f"{check}_status", type=pa.string(), doc=f"Status of {check} after the arm."),
        Column(name=f"{check}_count", type=pa.int64(), doc=f"Count read from {check}."),
    )


def table_schema(table: str, checks: Iterable[str] = ()) -> pa.Schema:
    columns = list(TABLES[table])
    if table == "runs":
        for check in checks:
            columns.extend(check_columns(check))
    return _schema(columns)


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    check: str
    phase: Phase
    status: CheckStatus
    exit_code: int | None
    duration_s: float
    count: int | None
    note: str | None
    log_path: str


@dataclass(frozen=True, kw_only=True)
class SiteResult:
    site: int
    file: str
    kind: str
    start: int
    length: int
    covered: bool
    matched: bool


@dataclass(frozen=True, kw_only=True)
class PilotSpec:
    """What one pilot runs: plain and picklable, so it can be sent to a worker."""

    bench: str
    arm: str
    executor: str = "local"
    model: str = ""
    max_cost: float | None = None
    trial: int = 1


@dataclass(frozen=True, kw_only=True)
class Run:
    """The record of one pilot, whatever happened to it."""

    run_id: str
    spec: PilotSpec
    bench: str
    bench_path: str
    status: RunStatus
    failure_kind: str | None
    failure_detail: str | None
    base_sha: str
    human_sha: str
    benchkit_version: str
    started_at: datetime
    phases: Mapping[str, float]
    sites_total: int
    sites_covered: int
    sites_matched: int
    sites_unrelated: int
    files_recall: float | None
    files_precision: float | None
    diff_lines: int
    worktree: str | None
    artifacts: str
    checks: tuple[CheckResult, ...] = ()
    sites: tuple[SiteResult, ...] = ()
    check_names: tuple[str, ...] = field(default=())

    @property
    def wall_s(self) -> float:
        return sum(self.phases.values())

    def after(self, check: str) -> CheckResult | None:
        return next((c for c in self.checks if c.check == check and c.phase == "after"), None)


def run_row(run: Run) -> dict[str, Any]:
    spec = run.spec
    row: dict[str, Any] = {
        "run_id": run.run_id,
        "schema_version": SCHEMA_VERSION,
        "bench": run.bench,
        "arm": spec.arm,
        "bench_path": run.bench_path,
        "executor": spec.executor,
        "model": spec.model,
        "max_cost": spec.max_cost,
        "trial": spec.trial,
        "status": run.status,
        "failure_kind": run.failure_kind,
        "failure_detail": run.failure_detail,
        "base_sha": run.base_sha,
        "human_sha": run.human_sha,
        "benchkit_version": run.benchkit_version,
        "started_at": run.started_at,
        "wall_s": run.wall_s,
        "sites_total": run.sites_total,
        "sites_covered": run.sites_covered,
        "sites_matched": run.sites_matched,
        "sites_unrelated": run.sites_unrelated,
        "files_recall": run.files_recall,
        "files_precision": run.files_precision,
        "diff_lines": run.diff_lines,
        "worktree": run.worktree,
        "artifacts": run.artifacts,
    }
    for stage in ("prepare", "baseline", "execute", "verify", "score"):
        row[f"{stage}_s"] = run.phases.get(stage)
    for check in run.check_names:
        result = run.after(check)
        row[f"{check}_status"] = result.status if result else None
        row[f"{check}_count"] = result.count if result else None
    return row


def check_rows(run: Run) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run.run_id,
            "schema_version": SCHEMA_VERSION,
            "phase": c.phase,
            "check": c.check,
            "status": c.status,
            "exit_code": c.exit_code,
            "duration_s": c.duration_s,
            "count": c.count,
            "note": c.note,
            "log_path": c.log_path,
        }
        for c in run.checks
    ]


def site_rows(run: Run) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run.run_id,
            "schema_version": SCHEMA_VERSION,
            "site": s.site,
            "file": s.file,
            "kind": s.kind,
            "start": s.start,
            "length": s.length,
            "covered": s.covered,
            "matched": s.matched,
        }
        for s in run.sites
    ]
