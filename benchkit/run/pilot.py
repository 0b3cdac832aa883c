"""One pilot, stage by stage: prepare, baseline, execute, verify, score, record, cleanup.

Everything that can be wrong with the input (the bench file, the arm, the refs) is
checked before the first stage, so a bad input writes nothing. From `prepare` on, a
pilot always produces exactly one run record, whatever the arm does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache, partial
from importlib import metadata
from pathlib import Path

from benchkit.arms.protocol import ArmContext, ArmOutcome, Secretive
from benchkit.bench.sites import EMPTY_COVERAGE, Coverage, FileChange, parse_diff, score
from benchkit.errors import StoreError
from benchkit.gate.verdict import GateResult, TestRun, files_to_rerun, judge, resolved
from benchkit.records import (
    ArmReport,
    CheckResult,
    EnvironmentUsed,
    LauncherName,
    Owner,
    Run,
    RunStatus,
    SiteResult,
    TestRecord,
    redact,
    redacted,
)
from benchkit.run.baseline import Baseline, establish
from benchkit.run.events import Recorded, Sink, StageBegun, ignore
from benchkit.run.plan import Plan
from benchkit.store.heartbeat import Beat
from benchkit.store.store import Store
from benchkit.workspace.cache import cache_dir, discard
from benchkit.workspace.checks import Confinement, run_alone, run_checks
from benchkit.workspace.environment import (
    Instance,
    ensure,
    env_copy_of,
    instantiate,
    release,
    remove,
)
from benchkit.workspace.git import (
    Repository,
    add_worktree,
    binary_changes,
    diff,
    exclude,
    file_lines,
    file_text,
    reader,
    snapshot,
)
from benchkit.workspace.proc import ProcError, deferred_interrupts, process_start
from benchkit.workspace.recipe import Environment, EnvironmentFailure
from benchkit.workspace.sandbox import PROCESSES, SECRETS, Sandbox, make_sandbox


@cache
def benchkit_version() -> str:
    """The version of the installed benchkit that runs the pilot."""
    return metadata.version("benchkit")


def new_run_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


class _Clock:
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


Ahead = tuple[str, "Future[tuple[FileChange, ...]]"]


@cache
def _human_change(repo: Repository) -> tuple[FileChange, ...]:
    """The human reference's diff, parsed once for every pilot on the same commits."""
    return parse_diff(diff(repo.mirror, repo.base_sha, repo.human_sha))


@cache
def _human_patch(repo: Repository) -> str:
    """The human reference's diff with context, as the report shows it beside the arm's."""
    return diff(repo.mirror, repo.base_sha, repo.human_sha, context=3, binary=True)


@cache
def _base_lines(repo: Repository, path: str) -> list[str] | None:
    return file_lines(repo.mirror, repo.base_sha, path)


_PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-diffs")


def _arm_change(repo_dir: Path, base: str, tree: str) -> tuple[FileChange, ...]:
    return tuple(parse_diff(diff(repo_dir, base, tree)))


def _human_ahead(repo: Repository) -> None:
    """The human's diff, read and parsed by a thread from the pilot's start, while its
    stages wait on their processes (once a process: it is cached)."""
    _PARSER.submit(_human_change, repo)
    _PARSER.submit(_human_patch, repo)


def _parse_ahead(pilot: _Pilot) -> None:
    """The arm's diff, read and parsed by a thread while the checks run, and its patch
    (unless a secret's value may have to be left out of it): the score stage then
    mostly scores."""
    repo = pilot.plan.repository
    pilot.arm_change = (
        pilot.tree,
        _PARSER.submit(_arm_change, pilot.git_dir, repo.base_sha, pilot.tree),
    )
    if not any(pilot.secrets):
        patch = partial(diff, context=3, binary=True)
        pilot.arm_patch = (
            pilot.tree,
            _PARSER.submit(patch, pilot.git_dir, repo.base_sha, pilot.tree),
        )


def _score(p: Plan, repo_dir: Path, tree: str, ahead: Ahead | None = None) -> Coverage:
    repo = p.repository
    if ahead is not None and ahead[0] == tree:
        arm = ahead[1].result()
    else:
        arm = _arm_change(repo_dir, repo.base_sha, tree)
    return score(
        _human_change(repo),
        arm,
        exclude=p.bench.file.sites.exclude,
        base_text=lambda path: _base_lines(repo, path),
    )


def _site_results(coverage: Coverage) -> tuple[SiteResult, ...]:
    return tuple(
        SiteResult(
            site=s.site.index,
            file=s.site.file,
            kind=s.site.kind,
            start=s.site.start,
            length=s.site.length,
            covered=s.covered,
            matched=s.matched,
        )
        for s in coverage.sites
    )


NOT_RUN = ArmOutcome(ok=False, failure_kind="other", detail="the arm did not run")


@dataclass(kw_only=True)
class _Pilot:
    """What a pilot has seen so far; whatever happens, it becomes one run record."""

    plan: Plan
    run_id: str
    started_at: datetime
    artifacts: Path
    folder: Path  # everything the pilot makes outside the store; removed at cleanup
    clock: _Clock
    tree: str
    store: Store
    owner: Owner
    launcher: LauncherName
    status: RunStatus = "failed"
    outcome: ArmOutcome = NOT_RUN
    checks: list[CheckResult] = field(default_factory=list)
    tests: list[TestRecord] = field(default_factory=list)
    baseline: Baseline | None = None
    gate: GateResult | None = None
    environment: Environment | None = None
    instance: Instance | None = None
    arm_change: Ahead | None = None  # the arm's tree and its diff, parsed ahead
    arm_patch: tuple[str, Future[str]] | None = None  # and its patch, read ahead
    resolved: bool | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def logs(self) -> Path:
        return self.artifacts / "logs"

    @property
    def worktree(self) -> Path:
        return self.folder / "tree"

    @property
    def base_tree(self) -> Path:
        return self.folder / "base"

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def git_dir(self) -> Path:
        """benchkit's own git folder, for the snapshots of the worktree and their diff."""
        return self.folder / "git"

    @property
    def env_copy(self) -> Path:
        return env_copy_of(self.worktree)

    @property
    def sandbox(self) -> Sandbox:
        box = sandbox_of(self.plan, self.folder, "tree")
        return box.with_read_only(self.instance.binds) if self.instance else box

    @property
    def secrets(self) -> list[str]:
        arm = self.plan.arm
        return arm.secrets() if isinstance(arm, Secretive) else []


def sandbox_of(p: Plan, folder: Path, tree: str) -> Sandbox:
    """The sandbox of a pilot's tree (`tree`, its worktree, or `base`): its HOME and tmp
    beside it, the pilot's process ledger for `recover`."""
    return make_sandbox(
        p.sandbox,
        tree=folder / tree,
        home=folder / ("home" if tree == "tree" else f"{tree}-home"),
        tmp=folder / ("tmp" if tree == "tree" else f"{tree}-tmp"),
        ledger=folder / PROCESSES,
        run_id=folder.name,
    )


def _run_stages(pilot: _Pilot, stage: Callable[[str], None]) -> None:
    """prepare, baseline, execute, verify: everything that runs commands."""
    p, clock = pilot.plan, pilot.clock
    bench, repo = p.bench, p.repository
    stage("prepare")
    with clock.stage("prepare"):
        _human_ahead(repo)
        add_worktree(repo.mirror, repo.base_sha, pilot.worktree)
        reader(repo.mirror, pilot.git_dir)
        pilot.sandbox.make()
        names = p.arm.secret_names() if isinstance(p.arm, Secretive) else []
        (pilot.folder / SECRETS).write_text("".join(f"{n}\n" for n in names))
    try:
        stage("environment")
        with clock.stage("environment"):
            log = pilot.logs / "environment.log"
            environment = ensure(p.recipe, log=log)
            pilot.environment = environment
            pilot.instance = instantiate(
                environment,
                where=pilot.env_copy,
                tree=pilot.worktree,
                log=log,
                bound=pilot.sandbox.binds,
            )
            if pilot.instance.path is not None and pilot.instance.path.parent == pilot.worktree:
                exclude(pilot.git_dir, pilot.instance.path.name)  # not the arm's
        stage("baseline")
        with clock.stage("baseline"):
            pilot.baseline = establish(
                bench,
                repo,
                environment,
                store=pilot.store,
                worktree=pilot.base_tree,
                refresh=p.refresh_baseline,
                sandbox=sandbox_of(p, pilot.folder, "base"),
            )
    except EnvironmentFailure as exc:  # the bench's failure: recorded, and others go on
        pilot.outcome = ArmOutcome(ok=False, failure_kind="environment", detail=str(exc))
        pilot.status = "failed"
        return
    pilot.checks += pilot.baseline.checks
    pilot.tests += pilot.baseline.tests
    stage("execute")
    with clock.stage("execute"):
        try:
            context = ArmContext(
                bench=bench,
                repository=repo,
                spec=p.spec,
                worktree=pilot.worktree,
                home=pilot.home,
                logs=pilot.logs,
                sandbox=pilot.sandbox,
            )
            pilot.outcome = p.arm.run(context)
        finally:
            try:  # at once, before a check touches it
                pilot.tree = snapshot(pilot.worktree, pilot.git_dir, repo.base_sha)
                _parse_ahead(pilot)
            except ProcError as exc:  # a full disk, or a worktree git cannot read
                full = "No space left on device" in exc.stderr
                detail = f"git cannot read the worktree the arm left: {exc}"
                kind = "disk" if full else "worktree"
                pilot.outcome = ArmOutcome(ok=False, failure_kind=kind, detail=detail)
    outcome = pilot.outcome
    pilot.status = "ok" if outcome.ok else ("timeout" if outcome.timed_out else "failed")
    if outcome.ok:
        stage("verify")
        with clock.stage("verify"):
            _verify(pilot, stage)


def _verify(pilot: _Pilot, stage: Callable[[str], None]) -> None:
    """The checks after the arm, then the gate: failing test files rerun alone."""
    bench, instance = pilot.plan.bench, pilot.instance
    assert instance is not None
    confinement = Confinement(sandbox=pilot.sandbox, secrets=pilot.secrets)
    runs = run_checks(
        bench, phase="after", instance=instance, logs=pilot.logs, confinement=confinement
    )
    pilot.checks += [r.result for r in runs]
    after = next((r.tests for r in runs if r.tests is not None), None)
    if after is None:
        return
    pilot.tests += [TestRecord(phase="after", attempt=0, case=c) for c in after.cases or ()]
    base = pilot.baseline.test_run() if pilot.baseline else None
    unjudgeable = pilot.baseline.unjudgeable if pilot.baseline else "no baseline"
    known_flaky = pilot.plan.known_flaky
    reruns: dict[str, list[TestRun]] = {}
    files = [] if unjudgeable else files_to_rerun(base, after, known_flaky)
    if files:
        stage("rerun")
    for file in files:
        for attempt in range(1, pilot.plan.spec.flake_reruns + 1):
            rerun = run_alone(
                bench,
                instance=instance,
                file=file,
                attempt=attempt,
                logs=pilot.logs,
                confinement=confinement,
            )
            reruns.setdefault(file, []).append(rerun)
            pilot.tests += [
                TestRecord(phase="rerun", attempt=attempt, case=c) for c in rerun.cases or ()
            ]
    pilot.gate = judge(base, after, reruns, unjudgeable=unjudgeable, known_flaky=known_flaky)
    expected = bench.file.tests
    if expected is not None:
        pilot.resolved = resolved(after, pilot.gate, expected.must_pass, expected.keep_passing)


def _record(pilot: _Pilot, coverage: Coverage | None, keep: bool) -> Run:
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
        sites=_site_results(coverage),
        tests=tuple(pilot.tests),
        gate=pilot.gate,
        resolved=pilot.resolved,
        baseline_key=pilot.baseline.key if pilot.baseline else None,
        baseline_cached=pilot.baseline.cached if pilot.baseline else False,
        retryable=None if ok else pilot.outcome.retryable,
        arm_exit_code=pilot.outcome.exit_code,
        report=pilot.outcome.report,
        owner=pilot.owner,
        origin="simulated" if getattr(p.arm, "simulated", False) else "pilot",
        check_names=tuple(c.name for c in p.bench.file.checks),
        environment=EnvironmentUsed(
            key=p.recipe.key,
            python=p.recipe.described_python,
            packages=pilot.environment.packages if pilot.environment else None,
            packages_digest=pilot.environment.packages_digest if pilot.environment else None,
        ),
        sandbox=p.sandbox,
        warnings=(*pilot.warnings, *_report_said(pilot.outcome.report)),
        launcher=pilot.launcher,
        bench_digest=p.bench_digest,
        arm_digest=p.arm_digest,
    )


def execute_plan(
    p: Plan,
    store: Store,
    *,
    keep: bool = False,
    launcher: LauncherName = "serial",
    events: Sink = ignore,
) -> Run:
    """Run one planned pilot and record it in the store, whatever happens to it; in
    this process, which the `launcher` started. Its stages and its run are told to
    `events` (see `benchkit.run.events`).

    An interrupt is recorded as `interrupted`, an error of benchkit's own as `failed`
    (kind `other`); both are raised again once the run is recorded.
    """
    clock = _Clock()  # the pilot's wall time starts here
    started_at = datetime.now(UTC)
    run_id = new_run_id(started_at)
    folder = pilots_folder() / run_id
    folder.mkdir(parents=True)
    pilot = _Pilot(
        plan=p,
        run_id=run_id,
        started_at=started_at,
        artifacts=store.artifacts(run_id),
        folder=folder,
        clock=clock,
        tree=p.repository.base_sha,
        store=store,
        launcher=launcher,
        owner=Owner(
            pid=os.getpid(), host=socket.gethostname(), process_start=process_start(os.getpid())
        ),
        status="running",
    )
    pilot.logs.mkdir(parents=True, exist_ok=True)
    owner = pilot.owner
    started = started_at.isoformat()
    early: KeyboardInterrupt | None = None  # an interrupt during the start: recorded below
    try:
        with deferred_interrupts():  # the first beat before the row: never running unbeaten
            heart = store.heartbeat(
                Beat(
                    run_id=run_id,
                    stage="start",
                    host=owner.host,
                    pid=owner.pid,
                    started_at=started,
                    updated_at=started,
                ),
            )
            store.record_row(_record(pilot, None, keep))
    except KeyboardInterrupt as exc:
        early = exc
    model = f" {p.spec.model}" if p.spec.model else ""
    label = f"{p.bench.name} {p.spec.arm}{model} #{p.spec.trial}"

    worker = f"{owner.host}:{owner.pid}"

    def stage(name: str) -> None:
        heart.stage(name)
        events(StageBegun(run_id=run_id, label=label, stage=name, worker=worker))

    try:
        if early is not None:
            raise early
        _run_stages(pilot, stage)
    except KeyboardInterrupt:
        pilot.status = "interrupted"
        pilot.outcome = ArmOutcome(
            ok=False, failure_kind="interrupted", detail="interrupted", retryable=True
        )
        raise
    except Exception as exc:
        pilot.status = "failed"
        pilot.outcome = _failure_of(exc)
        if pilot.outcome.failure_kind != "disk":
            raise  # a full disk is this run's failure, recorded; anything else is a fault
    finally:
        with deferred_interrupts():  # a second Ctrl-C waits until the run is recorded
            try:
                run = _finish(pilot, keep, stage)
            finally:
                heart.stop()
                release(pilot.instance.path if pilot.instance else None)  # if cleanup failed
            events(Recorded(run=run))
    return run


def _finish(pilot: _Pilot, keep: bool, stage: Callable[[str], None]) -> Run:
    """score, record, cleanup: whatever happened before."""
    p, repo = pilot.plan, pilot.plan.repository
    secrets = pilot.secrets
    stage("score")
    with pilot.clock.stage("score"):
        if pilot.status == "running":
            pilot.status = "failed"  # stopped before its stages said otherwise
        repo_dir = pilot.git_dir if (pilot.git_dir / "HEAD").exists() else repo.mirror
        coverage = _score(p, repo_dir, pilot.tree, pilot.arm_change)
        left_out = with_secret(repo_dir, repo.base_sha, pilot.tree, secrets)
        pilot.warnings += [
            f"{path}: a binary file holding a secret's value, left out of agent.patch"
            for path in left_out
        ]
        ahead = pilot.arm_patch
        if ahead is not None and ahead[0] == pilot.tree and not left_out:
            patch = ahead[1].result()
        else:
            patch = diff(
                repo_dir, repo.base_sha, pilot.tree, context=3, binary=True, leave_out=left_out
            )
        patch = redact(patch, secrets)
        human = redact(_human_patch(repo), secrets)
        for name, text in (("agent.patch", patch), ("human.patch", human)):
            try:
                (pilot.artifacts / name).write_text(text, errors="surrogateescape")
            except OSError as exc:
                if exc.errno not in FULL:
                    raise
                (pilot.artifacts / name).unlink(missing_ok=True)
                pilot.warnings.append(f"{name} not kept: {_no_space(exc)}")
    stage("record")
    pilot.clock.lap("record")
    run = redacted(_record(pilot, coverage, keep), secrets)
    run = _written(pilot, run, last=False)
    pilot.clock.lap("cleanup")  # the record is complete but for its last row
    run = replace(run, phases={k: v for k, v in pilot.clock.phases.items() if k != "cleanup"})
    run = _written(pilot, run, last=True)
    stage("cleanup")
    remove(pilot.instance, read_only=pilot.sandbox.binds)
    if not keep:
        discard(pilot.folder)
    elif pilot.folder.is_dir():
        for part in pilot.folder.iterdir():
            if part != pilot.worktree:
                discard(part)
    pilot.clock.lap("done")
    cleanup = f"cleanup: {pilot.clock.phases['cleanup']:.3f} s after the record\n"
    with contextlib.suppress(OSError), (pilot.logs / "pilot.log").open("a") as log:
        log.write(cleanup)  # the cleanup's time, after the record: in its log
    return run


def _written(pilot: _Pilot, run: Run, *, last: bool) -> Run:
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
        shutil.rmtree(pilot.artifacts, ignore_errors=True)
        detail = f"no space left on {store.path}; its logs were removed to record the run"
        run = replace(run, status="failed", failure_kind="disk", failure_detail=detail)
        try:
            write(run)
        except OSError as again:
            store.forget_details(run.run_id)  # its `running` row alone stays
            if again.errno not in FULL:
                raise
            raise StoreError(
                store.path,
                "",
                f"cannot record run {run.run_id}: no space left, even with its logs removed; "
                "it reads as crashed once there is room",
            ) from None
    return run


def _report_said(report: ArmReport) -> tuple[str, ...]:
    """Why the arm's report gave no figure (unreadable, a cost that is none), if so."""
    return (f"arm report: {report.problem}",) if report.problem else ()


FULL = (errno.ENOSPC, errno.EDQUOT)  # no room left: the disk's, or the user's quota


def _no_space(exc: OSError) -> str:
    where = Path(exc.filename).parent if exc.filename else None
    return f"no space left on {where}" if where else "no space left on the device"


def _failure_of(exc: Exception) -> ArmOutcome:
    """How an error of benchkit's own ends the pilot: a full disk says where."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        return ArmOutcome(ok=False, failure_kind="disk", detail=_no_space(exc), retryable=True)
    return ArmOutcome(ok=False, failure_kind="other", detail=f"benchkit: {exc}")


def with_secret(repo_dir: Path, base: str, tree: str, secrets: list[str]) -> list[str]:
    """The binary files the arm changed that hold a secret's value (redacting a binary
    patch, compressed as it is, cannot find it)."""
    if not any(secrets) or tree == base:
        return []
    return [
        path
        for path in binary_changes(repo_dir, base, tree)
        if any(s and s in (file_text(repo_dir, tree, path) or "") for s in secrets)
    ]


def pilots_folder() -> Path:
    """Where each pilot's folder lives while it runs: its worktree, HOME, tmp."""
    return cache_dir() / "pilots"
