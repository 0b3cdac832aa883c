"""A pilot's record: what it has seen so far (`PilotState`, its clock) and the one run
it becomes, written whole even on a full disk."""

from __future__ import annotations

import errno
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import benchkit
from benchkit.arm_report import ArmCommit, ArmReport
from benchkit.arms.protocol import ArmOutcome, Secretive
from benchkit.bench.sites import EMPTY_COVERAGE, Coverage
from benchkit.errors import StoreError
from benchkit.gate.verdict import GateResult
from benchkit.records import (
    IGNORED_SHOWN,
    CheckResult,
    CiResult,
    EnvironmentUsed,
    LauncherName,
    Owner,
    Run,
    RunStatus,
    SiteResult,
    SweBenchGrade,
    TestRecord,
)
from benchkit.run.baseline import Baseline
from benchkit.run.plan import Plan
from benchkit.run.scoring import Ahead, PatchAhead, site_results
from benchkit.store.store import Store
from benchkit.workspace.cache import removed, trash_emptied
from benchkit.workspace.environment import (
    Instance,
    env_copy_of,
)
from benchkit.workspace.git import Commit
from benchkit.workspace.proc import Stoppable
from benchkit.workspace.recipe import Environment
from benchkit.workspace.sandbox import PROCESSES, Sandbox, make_sandbox


def benchkit_version() -> str:
    """The version of the benchkit that runs the pilot: the one its package declares,
    which its installed metadata takes (`pyproject.toml`), read without a search of
    every installed distribution's (3 to 40 ms a process)."""
    return benchkit.__version__


def new_run_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


class Clock:
    """A pilot's phases, from its start: every moment belongs to one (the time between
    two stages to the one before), so that they sum to its wall time. Before the first
    stage is `start`."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.mark = time.perf_counter()
        self.current = "start"

    def lap(self, name: str) -> None:
        """The current phase ends now, and `name` begins."""
        now = time.perf_counter()
        self.phases[self.current] = round(self.phases.get(self.current, 0.0) + now - self.mark, 4)
        self.mark, self.current = now, name

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.lap(name)
        yield

    @contextmanager
    def within(self, name: str) -> Iterator[None]:
        """A phase begun inside another, which goes on after the block."""
        outer = self.current
        self.lap(name)
        try:
            yield
        finally:
            self.lap(outer)

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Time that is no phase's: the block's (another pilot's run told meanwhile)."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.mark += time.perf_counter() - began


WORKTREE, GIT_DIR, CLEAN_TREE = "tree", "git", "verify"  # in a pilot's folder

NOT_RUN = ArmOutcome(ok=False, failure_kind="other", detail="the arm did not run")


@dataclass(kw_only=True)
class PilotState:
    """What a pilot has seen so far; whatever happens, it becomes one run record."""

    plan: Plan
    run_id: str
    started_at: datetime
    artifacts: Path
    folder: Path  # everything the pilot makes outside the store; removed at cleanup
    clock: Clock
    tree: str
    store: Store
    owner: Owner
    launcher: LauncherName
    status: RunStatus = "failed"
    outcome: ArmOutcome = NOT_RUN
    checks: list[CheckResult] = field(default_factory=list)
    tests: list[TestRecord] = field(default_factory=list)
    baseline: Baseline | None = None
    baseline_later: bool = False  # another pilot was running it: read when needed
    gate: GateResult | None = None
    environment: Environment | None = None
    instance: Instance | None = None  # the arm's
    checked: Instance | None = None  # the clean tree's (see `benchkit.run.verify`)
    running_row: Future[None] | None = None  # its `running` row, being written by a thread
    made_ahead: Future[None] | None = None  # the worktree and its reader, being made
    checked_ahead: Future[Instance] | None = None  # the clean tree's, being made
    making: Stoppable = field(default_factory=Stoppable)  # their git commands, in threads
    spared: bool = False  # its trees (the clean tree's too) made as a spare (set by the thread)
    arm_change: Ahead | None = None  # the arm's tree and its diff, parsed ahead
    arm_patch: PatchAhead | None = None  # and its patch, read ahead
    resolved: bool | None = None
    ignored_before: frozenset[str] = frozenset()  # ignored files in the worktree before the arm
    ignored_written: tuple[str, ...] | None = None  # those the arm wrote; None: not looked
    ignored_ahead: Future[list[str]] | None = None  # the ignored files, being listed
    ignored_listing: Callable[[], list[str]] | None = None  # that listing, to begin
    tampered: tuple[tuple[str, str], ...] = ()
    swebench: SweBenchGrade | None = None
    warnings: list[str] = field(default_factory=list)
    committed: list[Commit] = field(default_factory=list)  # by the arm, in its worktree
    commits: tuple[ArmCommit, ...] = ()  # ... as its run keeps them
    ci: CiResult | None = None  # the forge's checks on the change the arm pushed
    sites: tuple[SiteResult, ...] | None = None  # scored, with the sessions that covered them

    @property
    def logs(self) -> Path:
        return self.artifacts / "logs"

    def row_stands(self) -> bool:
        """Whether its `running` row was written (by now, once its thread is done)."""
        row = self.running_row
        return row is None or (row.done() and row.exception() is None)

    @property
    def worktree(self) -> Path:
        return self.folder / WORKTREE

    @property
    def base_tree(self) -> Path:
        return self.folder / "base"

    @property
    def home(self) -> Path:
        return sandbox_folders(self.folder, WORKTREE)[0]

    @property
    def checked_tree(self) -> Path:
        """The clean tree the checks after the arm run on: its diff, nothing else."""
        return self.folder / CLEAN_TREE

    @property
    def instances(self) -> list[Instance]:
        """The instances of the environment the pilot holds now."""
        return [i for i in (self.instance, self.checked) if i is not None]

    @property
    def git_dir(self) -> Path:
        """benchkit's own git folder, for the snapshots of the worktree and their diff."""
        return self.folder / GIT_DIR

    @property
    def env_copy(self) -> Path:
        return env_copy_of(self.worktree)

    @property
    def sandbox(self) -> Sandbox:
        box = sandbox_of(self.plan, self.folder, "tree")
        return (
            box.with_read_only(self.instance.binds, self.instance.writable)
            if self.instance
            else box
        )

    @property
    def secrets(self) -> list[str]:
        arm = self.plan.arm
        return arm.secrets() if isinstance(arm, Secretive) else []


def sandbox_of(p: Plan, folder: Path, tree: str) -> Sandbox:
    """The sandbox of a pilot's tree (`tree`: its worktree, `base` or the clean tree):
    its HOME and tmp beside it, the pilot's process ledger for `recover`."""
    home, tmp = sandbox_folders(folder, tree)
    return make_sandbox(
        p.sandbox,
        tree=folder / tree,
        home=home,
        tmp=tmp,
        ledger=folder / PROCESSES,
        run_id=folder.name,
    )


def sandbox_folders(folder: Path, tree: str) -> tuple[Path, Path]:
    """The HOME and tmp of the sandbox of a pilot's tree, beside it in its `folder`."""
    if tree == WORKTREE:
        return folder / "home", folder / "tmp"
    return folder / f"{tree}-home", folder / f"{tree}-tmp"


def make_sandbox_folders(folder: Path, tree: str) -> None:
    """The folders of a tree's sandbox, made with the tree (by the thread that makes
    it, off the pilot's path): bubblewrap binds only what exists."""
    for made in sandbox_folders(folder, tree):
        made.mkdir(parents=True, exist_ok=True)


def run_record(pilot: PilotState, coverage: Coverage | None, keep: bool) -> Run:
    """The run as it stands; without coverage, the `running` record of a pilot at work."""
    p = pilot.plan
    ok = pilot.status in ("ok", "running")
    coverage = coverage or EMPTY_COVERAGE
    return Run(
        run_id=pilot.run_id,
        spec=p.spec,
        bench=p.bench.name,
        bench_path=str(p.bench.path),
        status=pilot.status,
        failure_kind=None if ok else pilot.outcome.failure_kind,
        failure_detail=None if ok else pilot.outcome.detail,
        base_sha=p.repository.base_sha,
        human_sha=p.repository.human_sha,
        benchkit_version=benchkit_version(),
        started_at=pilot.started_at,
        phases=dict(pilot.clock.phases),
        sites_total=coverage.total,
        sites_covered=coverage.covered,
        sites_matched=coverage.matched,
        sites_unrelated=coverage.unrelated,
        files_recall=coverage.files_recall,
        files_precision=coverage.files_precision,
        diff_lines=coverage.arm_lines,
        worktree=str(pilot.worktree) if keep or pilot.status == "running" else None,
        artifacts=str(pilot.artifacts),
        checks=tuple(pilot.checks),
        sites=pilot.sites if pilot.sites is not None else site_results(coverage),
        tests=tuple(pilot.tests),
        gate=pilot.gate,
        resolved=pilot.resolved,
        swebench=pilot.swebench or _ungraded(pilot.plan),
        tampered=pilot.tampered,
        ignored_written=(pilot.ignored_written or ())[:IGNORED_SHOWN],
        ignored_written_count=(
            None if pilot.ignored_written is None else len(pilot.ignored_written)
        ),
        baseline_key=pilot.baseline.key if pilot.baseline else None,
        baseline_cached=pilot.baseline.cached if pilot.baseline else False,
        retryable=None if ok else pilot.outcome.retryable,
        arm_exit_code=pilot.outcome.exit_code,
        report=pilot.outcome.report,
        commits=pilot.commits,
        ci=pilot.ci,
        owner=pilot.owner,
        origin="simulated" if p.arm.simulated else "pilot",
        check_names=tuple(c.name for c in p.bench.file.checks),
        environment=EnvironmentUsed(
            key=p.recipe.key,
            python=p.recipe.described_python,
            packages=pilot.environment.packages if pilot.environment else None,
            packages_digest=pilot.environment.packages_digest if pilot.environment else None,
        ),
        sandbox=p.sandbox,
        warnings=(*pilot.warnings, *report_said(pilot.outcome.report)),
        launcher=pilot.launcher,
        bench_digest=p.bench_digest,
        arm_digest=p.arm_digest,
    )


def _ungraded(p: Plan) -> SweBenchGrade | None:
    """The part of a run of a SWE-bench instance that did not reach a grade."""
    instance = p.bench.file.swebench
    return None if instance is None else SweBenchGrade.of(instance.instance_id, None)


def recorded(pilot: PilotState, run: Run, since: float) -> Run:
    """The run written whole: its detail tables, then its `runs` row, which holds the
    time from `since` (the record stage's start, `perf_counter`) until the tables were
    written as its `record` phase. The run as stored."""
    run = written(pilot, run, last=False)
    took = round(time.perf_counter() - since, 4)
    return written(pilot, replace(run, phases={**run.phases, "record": took}), last=True)


def written(pilot: PilotState, run: Run, *, last: bool) -> Run:
    """The run as stored: its detail tables, or with `last` its `runs` row. On a full
    store, the record matters more than the logs, which are removed to make room, and
    the run says so."""
    store = pilot.store
    write = store.record_row if last else store.record_details
    try:
        write(run)
    except OSError as exc:
        if exc.errno not in FULL:
            if last:
                store.forget_details(run.run_id)  # all of the record, or none
            raise
        gone = room_made(pilot)
        detail = f"no space left on {store.path}; {gone} were removed to record the run"
        run = replace(run, status="failed", failure_kind="disk", failure_detail=detail)
        try:
            write(run)
        except OSError as again:
            store.forget_details(run.run_id)  # its `running` row alone stays, if written
            if again.errno not in FULL:
                raise
            kept = (
                "only its `running` row is kept, and it reads as crashed once there is room"
                if pilot.row_stands()
                else "nothing of it was written"
            )
            raise StoreError(
                store.path,
                "",
                f"cannot record run {run.run_id}: no space left, even with {gone} removed; {kept}",
            ) from None
    return run


def room_made(pilot: PilotState) -> str:
    """Room for the record on a full store: the run's logs removed, and its folder
    (worktree, HOME, tmp: what filled the disk, as often as not) where it shares the
    store's file system, at once (not by the trash's thread), kept worktree or not;
    where it was discarded already, the trash emptied. What was removed, as the run
    says it."""
    shutil.rmtree(pilot.artifacts, ignore_errors=True)
    try:  # the pilots' folder: the pilot's own may be in the trash already
        shared = pilot.folder.parent.stat().st_dev == pilot.store.path.stat().st_dev
    except OSError:
        return "its logs"
    if not shared:
        return "its logs"
    ahead = pilot.checked_ahead
    if ahead is not None:
        wait([ahead])  # the clean tree being made: made (or failed), then removed
    removed(pilot.folder)
    trash_emptied()
    return "its logs and its worktree"


def report_said(report: ArmReport) -> tuple[str, ...]:
    """Why the arm's report gave no figure (unreadable, a cost that is none), if so."""
    return (f"arm report: {report.problem}",) if report.problem else ()


FULL = (errno.ENOSPC, errno.EDQUOT)  # no room left: the disk's, or the user's quota


def no_space(exc: OSError) -> str:
    where = Path(exc.filename).parent if exc.filename else None
    return f"no space left on {where}" if where else "no space left on the device"


def failure_of(exc: Exception) -> ArmOutcome:
    """How an error of benchkit's own ends the pilot: a full disk says where."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        return ArmOutcome(ok=False, failure_kind="disk", detail=no_space(exc), retryable=True)
    return ArmOutcome(ok=False, failure_kind="other", detail=f"benchkit: {exc}")
