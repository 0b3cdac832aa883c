"""The records of a pilot: plain frozen dataclasses, picklable, with no I/O.

`PilotSpec` is what one pilot runs; `Run` is what it recorded, whatever happened;
the others are its parts. Each field of a `Run` (and of the parts it holds) that the
`runs` table keeps says so where it is declared, with its column's meaning
(`stored`), or as the columns it fills (`columns`: see `benchkit.columns`); the
arm's report is a record of its own (`benchkit.arm_report`). `benchkit.store.schema` derives
the table's columns from them, in their order, and `benchkit.store.rows` its rows.
A new field with `stored("...")` is a new column, documented, with nothing else to
write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from datetime import datetime
from typing import Literal, TypeVar, cast

from benchkit.arm_report import NO_REPORT, ArmCommit, ArmReport
from benchkit.columns import columns, part, stored
from benchkit.gate.ci import CiCheck
from benchkit.gate.junit import CaseResult
from benchkit.gate.swebench import Graded
from benchkit.gate.verdict import GateResult

RunStatus = Literal["ok", "failed", "timeout", "interrupted", "crashed", "running"]
CheckStatus = Literal["ok", "fail", "timeout", "missing"]
Phase = Literal["base", "after"]
LauncherName = Literal["serial", "processes", "ray"]  # what started the process that ran a pilot
LAUNCHERS: tuple[LauncherName, ...] = ("serial", "processes", "ray")
DEFAULT_SET = "default"  # the run set of a pilot run without `--set`
CHECKS = ("install", "typecheck", "lint", "test", "build")  # the conventional checks, in order
RERUNS = "reruns"  # the run set of `benchkit rerun`, unless told another
_T = TypeVar("_T")


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
    session: int | None = None  # the session that first covered it, where known
    step: int | None = None  # the arm's commit that first covered it, where it committed
    by: str | None = None  # that session's kind, as the tool says: agent, mechanical, manual


@dataclass(frozen=True, kw_only=True)
class PilotSpec:
    """What one pilot runs: plain and picklable, so it can be sent to a worker."""

    bench: str  # as given (a name or a path); the run records the bench's name and path
    arm: str = field(metadata=stored("Arm as given (noop, human, replay:NAME, ...)."))
    executor: str = field(  # empty: the arm's default executor
        default="", metadata=stored("Executor label handed to the arm.")
    )
    model: str = field(default="", metadata=stored("Model name handed to the arm."))
    max_cost: float | None = field(
        default=None, metadata=stored("Budget cap in USD; null when none.")
    )
    trial: int = field(default=1, metadata=stored("Repeat index, from 1."))
    flake_reruns: int = field(default=1, metadata=stored("Reruns alone of each new failing file."))
    arm_vars: tuple[tuple[str, str], ...] = field(  # values of an arm file's [vars]
        default=(),
        metadata=stored(
            "NAME=VALUE of each of the arm file's [vars] the pilot ran with.", kind="pairs"
        ),
    )
    checks: tuple[str, ...] = field(  # only these of the bench's checks; empty: all
        default=(),
        metadata=stored(
            "The bench's checks the pilot was asked to run (--checks); empty: all.",
            name="only_checks",
        ),
    )
    run_set: str = field(  # the set the run belongs to (see `benchkit.run.sets`)
        default=DEFAULT_SET,
        metadata=stored(
            "The run set it belongs to (--set; `default` without it); null before sets."
        ),
    )
    attempt: int = field(  # of its unit in its set: 2 and on rerun a crashed or failed one
        default=1,
        metadata=stored(
            "Attempt at its unit (bench, arm, executor, model, max_cost, trial) in its "
            "set, from 1; analysis takes the latest."
        ),
    )
    rerun_of: str | None = field(
        default=None, metadata=stored("The run `benchkit rerun` ran again.")
    )


@dataclass(frozen=True, kw_only=True)
class EnvironmentUsed:
    """What a run's checks ran with."""

    key: str = field(  # the environment's cache key; `none`: the caller's PATH
        metadata=stored(
            "Cache key of the environment the checks ran in; none: the caller's PATH.",
            name="env_key",
        )
    )
    python: str | None = field(  # the interpreter's version and path
        metadata=stored("Version and path of the checks' Python.", name="env_python")
    )
    packages: tuple[str, ...] | None = field(  # `name==version`, as installed
        metadata=stored(
            "name==version of every package in the checks' environment (venv).",
            name="env_packages",
        )
    )
    packages_digest: str | None = field(
        metadata=stored("Digest of env_packages.", name="env_packages_digest")
    )


@dataclass(frozen=True, kw_only=True)
class Owner:
    """The benchkit process that runs a pilot: a `running` run whose owner is gone
    was left by a benchkit that was killed."""

    pid: int = field(
        metadata=stored("Process id of the benchkit that ran the pilot.", kind="int64")
    )
    host: str = field(metadata=stored("Host name of the machine that ran it."))
    process_start: int | None = field(
        metadata=stored(
            "Start time of that process (clock ticks since boot), to tell a live run.",
            kind="int64",
        )
    )


@dataclass(frozen=True, kw_only=True)
class SweBenchGrade:
    """SWE-bench's grade of a run of a SWE-bench instance, by its rules
    (`benchkit.gate.swebench`): its `tests_status`."""

    instance_id: str = field(
        metadata=stored(
            "The SWE-bench instance the bench was made from ([swebench] instance_id); "
            "null for other benches.",
            name="swebench_instance",
        )
    )
    grade: str | None = field(
        metadata=stored(
            "SWE-bench's grade of a run of a SWE-bench instance: FULL (resolved), PARTIAL "
            "or NO; null for a run whose tests left nothing to grade.",
            name="swebench_status",
        )
    )
    f2p_success: tuple[str, ...] = field(
        metadata=stored("FAIL_TO_PASS tests that passed.", name="swebench_f2p_success")
    )
    f2p_failure: tuple[str, ...] = field(
        metadata=stored("FAIL_TO_PASS tests that did not.", name="swebench_f2p_failure")
    )
    p2p_success: tuple[str, ...] = field(
        metadata=stored(
            "PASS_TO_PASS tests that passed or were skipped.", name="swebench_p2p_success"
        )
    )
    p2p_failure: tuple[str, ...] = field(
        metadata=stored("PASS_TO_PASS tests that did not.", name="swebench_p2p_failure")
    )

    @classmethod
    def of(cls, instance_id: str, graded: Graded | None) -> SweBenchGrade:
        """The record of a grade; with none, a run of the instance that left nothing
        to grade (or did not get so far)."""
        if graded is None:
            return cls(
                instance_id=instance_id,
                grade=None,
                f2p_success=(),
                f2p_failure=(),
                p2p_success=(),
                p2p_failure=(),
            )
        return cls(
            instance_id=instance_id,
            grade=graded.grade,
            f2p_success=graded.f2p_success,
            f2p_failure=graded.f2p_failure,
            p2p_success=graded.p2p_success,
            p2p_failure=graded.p2p_failure,
        )


PHASES = (
    "start",
    "prepare",
    "environment",
    "baseline",
    "execute",
    "verify",
    "ci",
    "score",
    "record",
)
PHASE_COLUMNS = (
    (
        "wall_s",
        "float64",
        "Seconds from the pilot's start until its record was written; the sum of the phases.",
    ),
    (
        "start_s",
        "float64",
        "Seconds before the first stage: the pilot's folder, first heartbeat, first row.",
    ),
    ("prepare_s", "float64", "Seconds to mirror and make the worktree."),
    (
        "environment_s",
        "float64",
        "Seconds to build or reuse the bench's environment, and copy it for the pilot.",
    ),
    ("baseline_s", "float64", "Seconds of the checks at base."),
    ("execute_s", "float64", "Seconds the arm ran, diff included."),
    ("verify_s", "float64", "Seconds of the checks after the arm."),
    ("ci_s", "float64", "Seconds waiting for the forge's CI on the arm's change; null: not asked."),
    ("score_s", "float64", "Seconds to score the diff."),
    (
        "record_s",
        "float64",
        "Seconds to build the record and write its files (cleanup after is in the log).",
    ),
)
GATE_COLUMNS = (
    (
        "test_verdict",
        "string",
        "The gate: pass, flaky-pass, fail, or error (the tests did not run at base).",
    ),
    ("test_reasons", "string", "Why the gate failed, '; '-joined."),
    (
        "preexisting_files",
        "strings",
        "Failing test files whose failures all failed at base: not charged.",
    ),
    ("flaky_files", "strings", "New failing test files that passed when rerun alone."),
    ("regression_files", "strings", "New failing test files that failed every rerun alone."),
    (
        "missing_files",
        "strings",
        "New failing test files that could not be run alone, or ran no test.",
    ),
    (
        "new_failing_files",
        "strings",
        "Failing test files in which every test that passed at base passes still (a new "
        "file, new tests), failing every rerun: nothing in them regressed.",
    ),
    (
        "removed_tests",
        "strings",
        "Tests (FILE::ID) that passed at base and are gone after the arm: deleted, renamed "
        "away or no longer collected.",
    ),
    ("regressions", "int32", "Tests that passed at base and fail after, in regression files."),
    ("first_failures", "failures", "The first charged failures: file, test, message."),
    (
        "rerun_stats",
        "reruns",
        "Per rerun file: reruns alone, passes, fails (the failing full run counted too), "
        "and the Wilson 95% interval of its fail rate over every observation.",
    ),
)


@dataclass(frozen=True, kw_only=True)
class CiResult:
    """CI on the arm's change: what the forge's checks said, in words and as a status."""

    said: str = field(
        metadata=stored(
            "CI on the arm's change, in words: `1 pass, 0 fail (fork PR)`, `fail at "
            "typecheck` (its first failing check), `pending (timed out after 10 min)`, "
            "`none` (no checks ran); as a published table wrote it for an imported run.",
            name="ci",
        )
    )
    status: str | None = field(
        metadata=stored(
            "CI's verdict: ok, fail, pending (not done when benchkit stopped asking) or none "
            "(no checks ran); null: not asked, or an imported text that reads as none of them.",
            name="ci_status",
        )
    )
    checks: tuple[CiCheck, ...] = ()  # the `ci` table's rows


IGNORED_SHOWN = 20  # of the ignored files an arm wrote, the ones a run names


@dataclass(frozen=True, kw_only=True)
class Run:
    """The record of one pilot, whatever happened to it. Its fields are declared in the
    order of the `runs` table's columns."""

    run_id: str = field(metadata=stored("Unique id of the pilot's run."))
    origin: str = field(
        default="pilot",
        metadata=stored("pilot (run here), imported (recorded elsewhere) or simulated."),
    )
    bench: str = field(metadata=stored("Bench name."))
    bench_path: str = field(metadata=stored("The bench.toml the pilot read."))
    spec: PilotSpec = field(metadata=part())
    status: RunStatus = field(
        metadata=stored("ok, failed, timeout, interrupted, crashed.", kind="string")
    )
    failure_kind: str | None = field(metadata=stored("Why the run failed; null when ok."))
    failure_detail: str | None = field(metadata=stored("One line on the failure; null if ok."))
    base_sha: str = field(metadata=stored("Base commit, resolved when the pilot began."))
    human_sha: str = field(metadata=stored("Commit of the human reference."))
    benchkit_version: str = field(metadata=stored("benchkit version that ran it."))
    bench_digest: str | None = field(  # of the bench file, as the pilot ran it
        default=None, metadata=stored("Digest of the bench file it ran.")
    )
    arm_digest: str | None = field(  # of the arm file or patch, with its vars; None: built in
        default=None,
        metadata=stored(
            "Digest of the arm file (or replayed patch) and its vars; null for built-in arms."
        ),
    )
    started_at: datetime = field(metadata=stored("Start time, UTC."))
    phases: Mapping[str, float] = field(metadata=columns(*PHASE_COLUMNS))
    sites_total: int = field(metadata=stored("Sites of the human reference."))
    sites_covered: int = field(metadata=stored("Sites the arm's diff touched."))
    sites_matched: int = field(metadata=stored("Covered sites with the human's text."))
    sites_unrelated: int = field(metadata=stored("Arm hunks touching no human site."))
    files_recall: float | None = field(metadata=stored("Human files the arm touched / all."))
    files_precision: float | None = field(metadata=stored("Arm files the human touched / all."))
    diff_lines: int = field(metadata=stored("Lines added plus removed by the arm."))
    gate: GateResult | None = field(default=None, metadata=columns(*GATE_COLUMNS))
    resolved: bool | None = field(  # the bench's must_pass and keep_passing passed, no regression
        default=None,
        metadata=stored(
            "The bench's must_pass and keep_passing tests passed after the arm, and nothing "
            "regressed; null when the bench names none or its tests could not be judged."
        ),
    )
    tampered: tuple[tuple[str, str], ...] = field(  # (path, added / edited / deleted)
        default=(),
        metadata=stored(
            "PATH=CHANGE (added, edited, deleted) of each file of the arm's diff that is a "
            "test, test configuration or CI (see benchkit.gate.tampering).",
            kind="pairs",
        ),
    )
    ignored_written: tuple[str, ...] = field(
        default=(),
        metadata=stored(
            f"The first {IGNORED_SHOWN} files git ignores that the arm wrote: left out of "
            "its diff, never seen by a check."
        ),
    )
    ignored_written_count: int | None = field(
        default=None,
        metadata=stored("How many ignored files the arm wrote; null when not looked at."),
    )
    swebench: SweBenchGrade | None = field(default=None, metadata=part())
    retryable: bool | None = field(
        default=None, metadata=stored("Running the pilot again may succeed.")
    )
    arm_exit_code: int | None = field(
        default=None, metadata=stored("Exit code of the arm's command.")
    )
    report: ArmReport = field(default=NO_REPORT, metadata=part())
    commits: tuple[ArmCommit, ...] = ()  # the `commits` table's rows
    owner: Owner | None = field(default=None, metadata=part())
    ci: CiResult | None = field(default=None, metadata=part())
    outcome: str | None = field(  # a published table's own word on the run
        default=None,
        metadata=stored(
            "What a published table said of the run (`yes`, `no: service error`), kept as "
            "its text (imported runs); null for runs benchkit ran."
        ),
    )
    environment: EnvironmentUsed | None = field(default=None, metadata=part())
    baseline_key: str | None = field(
        default=None, metadata=stored("Key of the base checks' cache entry.")
    )
    baseline_cached: bool = field(
        default=False, metadata=stored("The base checks came from the cache.")
    )
    worktree: str | None = field(metadata=stored("Worktree path; kept only with --keep."))
    artifacts: str = field(metadata=stored("Folder of the run's logs and agent.patch."))
    sandbox: str | None = field(  # bwrap or none; None when not run here
        default=None,
        metadata=stored(
            "What the arm and checks ran in: bwrap (bubblewrap) or none; null if not run here."
        ),
    )
    warnings: tuple[str, ...] = field(
        default=(),
        metadata=stored(
            "What the run left out or could not do (a binary file with a secret, say)."
        ),
    )
    launcher: LauncherName | None = field(  # None when not run here
        default=None,
        metadata=stored(
            "What ran the pilot: serial (benchkit's own process), processes (a worker, "
            "`--jobs`) or ray (a Ray task); its worker is `host` and `pid`. Null if not run "
            "here.",
            kind="string",
        ),
    )
    # Its detail tables' rows, and the checks whose `<check>_status` and `<check>_count`
    # columns it fills (see `benchkit.store.schema.check_columns`).
    checks: tuple[CheckResult, ...] = ()
    sites: tuple[SiteResult, ...] = ()
    tests: tuple[TestRecord, ...] = ()
    check_names: tuple[str, ...] = ()

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
