"""The records of a pilot: plain frozen dataclasses, picklable, with no I/O.

`PilotSpec` is what one pilot runs; `Run` is what it recorded, whatever happened;
the others are its parts. `benchkit.store.rows` turns them into the rows of the
tables declared in `benchkit.store.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from datetime import datetime
from typing import Literal, TypeVar, cast

from benchkit.gate.junit import CaseResult
from benchkit.gate.verdict import GateResult

RunStatus = Literal["ok", "failed", "timeout", "interrupted", "crashed", "running"]
CheckStatus = Literal["ok", "fail", "timeout", "missing"]
Phase = Literal["base", "after"]
LauncherName = Literal["serial", "processes", "ray"]  # what started the process that ran a pilot
LAUNCHERS: tuple[LauncherName, ...] = ("serial", "processes", "ray")
DEFAULT_SET = "default"  # the run set of a pilot run without `--set`
RERUNS = "reruns"  # the run set of `benchkit rerun`, unless told another
MOST_USD = 1_000_000.0  # a pilot's cost past a million dollars is a tool's bug, not a cost
_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class SessionReport:
    """One agent session, as the arm's report gives it."""

    session: int  # its index in the report
    session_id: str | None = None
    status: str | None = None
    cost_usd: float | None = None
    turns: int | None = None
    duration_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class ArmReport:
    """What an arm said it did; what it did not say stays None (never invented)."""

    cost_usd: float | None = None
    sessions: int | None = None
    sessions_accepted: int | None = None
    sessions_rejected: int | None = None
    feedback_rounds: int | None = None
    over_budget: bool | None = None
    flaky_files: tuple[str, ...] | None = None
    turns: int | None = None
    duration_s: float | None = None
    error: str | None = None  # what the tool said went wrong (a subtype, a message)
    session_list: tuple[SessionReport, ...] = ()
    problem: str | None = None  # why the report could not be read

    @property
    def cost_source(self) -> str:
        return "reported" if self.cost_usd is not None else "missing"


NO_REPORT = ArmReport()


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
    problem: str | None = None  # why its test run cannot be judged: it did not run its tests


@dataclass(frozen=True, kw_only=True)
class TestRecord:
    """One test case of one phase of a run."""

    __test__ = False  # not a pytest class

    phase: Literal["base", "after", "rerun"]
    attempt: int
    case: CaseResult


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
    executor: str = ""  # empty: the arm's default executor
    model: str = ""
    max_cost: float | None = None
    trial: int = 1
    flake_reruns: int = 1
    arm_vars: tuple[tuple[str, str], ...] = ()  # values of an arm file's [vars]
    checks: tuple[str, ...] = ()  # only these of the bench's checks; empty: all
    run_set: str = DEFAULT_SET  # the set the run belongs to (see `benchkit.run.sets`)
    attempt: int = 1  # of its unit in its set: 2 and on rerun a crashed or failed one
    rerun_of: str | None = None  # the run whose spec `benchkit rerun` ran again


@dataclass(frozen=True, kw_only=True)
class EnvironmentUsed:
    """What a run's checks ran with."""

    key: str  # the environment's cache key; `none`: the caller's PATH
    python: str | None  # the interpreter's version and path
    packages: tuple[str, ...] | None  # `name==version`, as installed
    packages_digest: str | None


@dataclass(frozen=True, kw_only=True)
class Owner:
    """The benchkit process that runs a pilot: a `running` run whose owner is gone
    was left by a benchkit that was killed."""

    pid: int
    host: str
    process_start: int | None


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
    tests: tuple[TestRecord, ...] = ()
    gate: GateResult | None = None
    baseline_key: str | None = None
    baseline_cached: bool = False
    retryable: bool | None = None
    arm_exit_code: int | None = None
    report: ArmReport = NO_REPORT
    owner: Owner | None = None
    origin: str = "pilot"
    check_names: tuple[str, ...] = field(default=())
    environment: EnvironmentUsed | None = None
    resolved: bool | None = None  # the bench's must_pass and keep_passing passed, no regression
    sandbox: str | None = None  # bwrap or none; None when not run here
    warnings: tuple[str, ...] = ()
    launcher: LauncherName | None = None  # None when not run here
    bench_digest: str | None = None  # of the bench file, as the pilot ran it
    arm_digest: str | None = None  # of the arm file or patch, with its vars; None: built in

    @property
    def wall_s(self) -> float:
        return sum(self.phases.values())

    def after(self, check: str) -> CheckResult | None:
        return next((c for c in self.checks if c.check == check and c.phase == "after"), None)


SECRET_MARK = "[secret]"


def redact(text: str, secrets: Sequence[str]) -> str:
    """Every secret value replaced by a mark."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, SECRET_MARK)
    return text


def redacted(value: _T, secrets: Sequence[str]) -> _T:
    """`value` with every secret value in its strings marked: records (dataclasses),
    tuples, lists and mappings are walked. What a run records passes here before it
    is written, so no table holds a secret a check or a report printed."""
    if not any(secrets):
        return value
    return cast(_T, _walk(value, secrets))


def _walk(value: object, secrets: Sequence[str]) -> object:
    if isinstance(value, str):
        return redact(value, secrets)
    if is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: _walk(getattr(value, f.name), secrets) for f in fields(value)}
        return replace(value, **changed)
    if isinstance(value, tuple | list):
        return type(value)(_walk(v, secrets) for v in value)
    if isinstance(value, Mapping):
        return {_walk(k, secrets): _walk(v, secrets) for k, v in value.items()}
    return value
