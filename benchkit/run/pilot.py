"""One pilot, stage by stage: prepare, baseline, execute, verify, score, record, cleanup.

Everything that can be wrong with the input (the bench file, the arm, the refs) is
checked before the first stage, so a bad input writes nothing. From `prepare` on, a
pilot always produces exactly one run record, whatever the arm does.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from benchkit.arms.attribution import by_session, first_steps
from benchkit.arms.cost import costed
from benchkit.arms.protocol import ArmContext, ArmOutcome, Secretive, is_scratch
from benchkit.arms.sessions import commits_of, session_reasons, with_edits
from benchkit.errors import StoreError
from benchkit.gate.tampering import telling_first
from benchkit.records import LauncherName, Owner, Run, SiteResult, redact, redacted
from benchkit.run import verify
from benchkit.run.baseline import Baseline, establish
from benchkit.run.behind import Behind
from benchkit.run.ci import ask_ci, asked
from benchkit.run.events import Recorded, Sink, StageBegun, ignore
from benchkit.run.plan import Plan
from benchkit.run.record import (
    CLEAN_TREE,
    FULL,
    GIT_DIR,
    WORKTREE,
    Clock,
    PilotState,
    failure_of,
    make_sandbox_folders,
    new_run_id,
    no_space,
    recorded,
    run_record,
    sandbox_of,
)
from benchkit.run.scoring import (
    MOST_STEPS,
    arm_change,
    covered_by_steps,
    human_ahead,
    human_patch,
    parse_ahead,
    score_arm,
    site_results,
    tampering,
    with_secret,
)
from benchkit.run.spares import Spares, Taken, sweep_spares
from benchkit.store.heartbeat import Beat, Heartbeat
from benchkit.store.store import Store
from benchkit.workspace.cache import cache_dir, discard
from benchkit.workspace.environment import (
    ensure,
    instantiate,
    release,
    remove,
)
from benchkit.workspace.forge import Forge
from benchkit.workspace.git import (
    Commit,
    add_worktree,
    commits_between,
    diff,
    exclude,
    exclude_patterns,
    git_folders_learned,
    head_of,
    ignored_files,
    leave_out,
    reader,
    snapshot,
    untracked,
)
from benchkit.workspace.proc import ProcError, Stoppable
from benchkit.workspace.processes import own_start
from benchkit.workspace.recipe import EnvironmentFailure
from benchkit.workspace.repository import Repository
from benchkit.workspace.sandbox import PILOT_MARK, SECRETS, stop_left
from benchkit.workspace.signals import deferred_interrupts


def _run_stages(
    pilot: PilotState, stage: Callable[[str], None], meanwhile: Callable[[], None]
) -> None:
    """prepare, baseline, execute, verify: everything that runs commands; `meanwhile`
    begun as the checks after the arm begin (see `execute_plan`)."""
    p, clock = pilot.plan, pilot.clock
    bench, repo = p.bench, p.repository
    stage("prepare")
    with clock.stage("prepare"):
        human_ahead(repo)
        assert pilot.made_ahead is not None  # from the pilot's start (execute_plan)
        pilot.made_ahead.result()  # what making them raised, raised here
        names = p.arm.secret_names() if isinstance(p.arm, Secretive) else []
        if names:  # for `recover` (none: no file)
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
            # nor what an install wrote in the tree (setuptools' *.egg-info/)
            leave_out(
                pilot.git_dir,
                untracked(pilot.worktree, pilot.git_dir, repo.base_sha, checked_out=True),
            )
            exclude_patterns(pilot.git_dir, p.arm.scratch)  # what the tool keeps for itself
            verify.prepare_clean_tree(pilot, log)  # before the arm: out of its reach
        stage("baseline")
        with clock.stage("baseline"):
            pilot.baseline = _baseline(pilot, wait=False)
            pilot.baseline_later = pilot.baseline is None  # another pilot runs it now
            pilot.clock.lap("environment")  # the clean tree's wait: not the checks at base
            verify.settled(pilot)  # the clean tree ready before the arm costs anything
    except EnvironmentFailure as exc:  # the bench's failure: recorded, and others go on
        pilot.outcome = ArmOutcome(ok=False, failure_kind="environment", detail=str(exc))
        pilot.status = "failed"
        return
    _add_baseline(pilot)
    stage("execute")
    with clock.stage("execute"):
        before = ignored_files(pilot.worktree, pilot.git_dir, repo.base_sha, checked_out=True)
        pilot.ignored_before = frozenset(before)  # the environment's, say: not the arm's
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
            if not p.arm.network and not pilot.sandbox.cuts_network:
                pilot.warnings.append(NETWORK_KEPT)
            pilot.outcome = p.arm.run(context)
        finally:
            try:  # at once, before a check touches it
                pilot.tree = snapshot(pilot.worktree, pilot.git_dir, repo.base_sha)
                pilot.arm_change, pilot.arm_patch = parse_ahead(
                    p.repository, pilot.git_dir, pilot.tree, pilot.secrets
                )
                pilot.ignored_listing = functools.partial(
                    ignored_files, pilot.worktree, pilot.git_dir, pilot.tree
                )
                pilot.committed = _commits(pilot)
            except ProcError as exc:  # a full disk, or a worktree git cannot read
                full = "No space left on device" in exc.stderr
                detail = f"git cannot read the worktree the arm left: {exc}"
                kind = "disk" if full else "worktree"
                pilot.outcome = ArmOutcome(ok=False, failure_kind=kind, detail=detail)
    pilot.outcome = outcome = _accounted(pilot)
    pilot.status = "ok" if outcome.ok else ("timeout" if outcome.timed_out else "failed")
    if outcome.ok:
        stage("verify")
    if pilot.ignored_listing is not None:  # by a thread beside the clean tree and the
        pilot.ignored_ahead = _MAKER.submit(pilot.ignored_listing)  # checks, once the stage
        pilot.ignored_listing = None  # is told (its start would take the GIL within it);
        # before the next pilot's trees (`meanwhile`), which the same thread makes after it
    if outcome.ok:
        with clock.stage("verify"):
            verify.verify(pilot, stage, meanwhile, based=lambda: _based(pilot, stage, "verify"))
    if asked(outcome.report):  # whatever the outcome: a run over its cap pushed a change too
        stage("ci")
        with clock.stage("ci"):
            pilot.ci = ask_ci(outcome.report, bench.file, Forge(pilot.logs / "ci.log"))
    if pilot.baseline_later:  # the checks at base read or run now: the run before told
        meanwhile()  # first (where the arm failed, its checks never began)
    _based(pilot, stage)  # not read by the gate: for the record


def _baseline(pilot: PilotState, *, wait: bool) -> Baseline | None:
    """The pilot's checks at base (see `establish`): run here, once the pilot's
    `running` row is written (see `row_written`)."""
    p = pilot.plan
    assert pilot.environment is not None  # the environment stage's
    return establish(
        p.bench,
        p.repository,
        pilot.environment,
        store=pilot.store,
        worktree=pilot.base_tree,
        refresh=p.refresh_baseline,
        sandbox=sandbox_of(p, pilot.folder, "base"),
        wait=wait,
        ready=lambda: row_written(pilot),
    )


def row_written(pilot: PilotState) -> None:
    """The pilot's `running` row, written by a thread from its start, waited for
    before the first command in its sandbox (its checks at base, else its arm):
    recovery stops what a killed benchkit's sandboxes left by a run's row. What writing
    it raised is raised here: the pilot fails before its checks or its arm cost
    anything."""
    if pilot.running_row is not None:
        pilot.running_row.result()


def _based(pilot: PilotState, stage: Callable[[str], None], back: str | None = None) -> None:
    """The baseline that another pilot was running as this one reached it, read now
    (`pilot.baseline_later`), as the gate needs it or for the record: waited for, in
    the `baseline` phase, then the stage `back` told again. Failing here, after the
    arm, the run keeps the arm's figures, says why in a warning, and its tests go
    unjudged (no baseline)."""
    if not pilot.baseline_later:
        return
    pilot.baseline_later = False
    stage("baseline")
    with pilot.clock.within("baseline"):
        try:  # run here when they were not kept (one timed out, the other pilot failed)
            pilot.baseline = _baseline(pilot, wait=True)
        except Exception as exc:  # the arm's figures stand: only the gate goes without
            pilot.warnings.append(
                f"no baseline: the checks at base could not be run or read after the arm: {exc}"
            )
    _add_baseline(pilot)
    if back is not None:
        stage(back)


def _add_baseline(pilot: PilotState) -> None:
    """The checks and the tests at base, first among the pilot's."""
    if pilot.baseline is not None:
        pilot.checks[:0] = pilot.baseline.checks
        pilot.tests[:0] = pilot.baseline.tests


_MAKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-worktree")


def _made_ahead(pilot: PilotState, taken: Taken | None) -> Future[None]:
    """The pilot's worktree with its sandbox's folders and benchkit's own git folder
    beside it, made by a thread from the pilot's start (git's `checkout`, mostly);
    `prepare` waits for them. An interrupted pilot stops the checkout (`pilot.making`)
    and waits for the thread before its folder goes.
    Made already where the pilot has `taken` a spare (see `benchkit.run.spares`): the
    thread moves them to its folder once they are made, the clean tree's too."""
    repo, folder = pilot.plan.repository, pilot.folder

    def made() -> None:
        if taken is not None:
            if taken.moved.result():
                pilot.spared = True
                return
            folder.mkdir(parents=True)  # the spare could not be made: the pilot's own
        _trees(repo, folder, pilot.making, clean=False)

    return _MAKER.submit(made)


_BESIDE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-clean-tree-beside")


def _trees(
    repo: Repository,
    folder: Path,
    making: Stoppable,
    together: bool = False,
    *,
    clean: bool = True,
) -> None:
    """A pilot's trees at base in its `folder`, each with its sandbox's folders: its
    worktree and benchkit's own git folder beside it, and with `clean` the clean tree
    (else made at `environment`), by another thread at the same time when `together`
    (git's checkouts wait on the disk more than they work)."""
    beside = _BESIDE.submit(_tree, repo, folder, CLEAN_TREE, making) if clean and together else None
    try:
        _tree(repo, folder, WORKTREE, making)
        reader(repo.mirror, folder / GIT_DIR)
    finally:
        if beside is not None:
            wait([beside])  # no checkout left writing in the folder
    if beside is not None:
        beside.result()
    elif clean:
        _tree(repo, folder, CLEAN_TREE, making)


def _tree(repo: Repository, folder: Path, name: str, making: Stoppable) -> None:
    """One tree of a pilot's at base, `name` in its `folder`, and its sandbox's folders."""
    add_worktree(repo.mirror, repo.base_sha, folder / name, within=making)
    make_sandbox_folders(folder, name)


def git_folders_ahead() -> None:
    """What `git init` writes in the pilots' folder, learned by the trees' thread from
    now (see `git_folders_learned`): as a launch plans its pilots, before the first
    one's trees are begun on that thread."""
    _MAKER.submit(git_folders_learned, pilots_folder())


def spares_for(plans: Sequence[Plan]) -> Spares:
    """The trees of `plans`, to run one after another in this process, each made while
    the pilot before it runs (see `benchkit.run.spares`)."""
    folder = pilots_folder()
    sweep_spares(folder)  # those a killed benchkit left
    coming = [p.repository for p in plans]
    return Spares(coming, trees=_trees, folder=folder, executor=_MAKER)


def _ignored_written(pilot: PilotState) -> None:
    """The files git ignores that the arm wrote (`pilot.ignored_written`), from the
    listing a thread made of its worktree as it ended (`pilot.ignored_ahead`), or made
    now (a pilot interrupted before it handed it over): those there before the arm,
    and the tool's scratch, left out. A listing that failed leaves them not looked at,
    with a warning."""
    listed, pilot.ignored_ahead = pilot.ignored_ahead, None
    listing, pilot.ignored_listing = pilot.ignored_listing, None
    try:
        if listed is not None:
            ignored = listed.result()
        elif listing is not None:
            ignored = listing()
        else:
            return  # not looked at: the arm's tree could not be read
    except Exception as exc:  # git's, or a process that could not start: not the record's
        pilot.warnings.append(f"the files git ignores that the arm wrote were not listed: {exc}")
        return
    scratch = pilot.plan.arm.scratch  # the tool's own, not its work
    written = (f for f in ignored if f not in pilot.ignored_before and not is_scratch(f, scratch))
    pilot.ignored_written = tuple(telling_first(written))


def _commits(pilot: PilotState) -> list[Commit]:
    """The commits the arm made in its worktree, oldest first; none, and a warning,
    where its HEAD names no commit benchkit can read (the arm's own doing)."""
    base = pilot.plan.repository.base_sha
    head = head_of(pilot.worktree)
    if head is None or head == base:
        return []
    try:
        return commits_between(pilot.git_dir, base, head)
    except ProcError as exc:
        pilot.warnings.append(f"the arm's commits cannot be read: {exc.stderr.strip()[:200]}")
        return []


def _accounted(pilot: PilotState) -> ArmOutcome:
    """The arm's outcome with its report's sessions given their edits (the files its
    tool named, or its commits) and its cost computed from its tokens where the tool
    gave none; why a cost stays missing is a warning of the run."""
    p, outcome = pilot.plan, pilot.outcome
    report = outcome.report
    pilot.commits = commits_of(pilot.committed, len(report.session_list))
    report = with_edits(report, pilot.commits, (pilot.worktree, pilot.worktree.resolve()))
    report = replace(report, session_reasons=report.session_reasons or session_reasons(report))
    report, why = costed(report, p.spec.model or p.arm.model, p.prices)
    if why:
        pilot.warnings.append(why)
    return replace(outcome, report=report)


def _by_session(
    pilot: PilotState, repo_dir: Path, sites: tuple[SiteResult, ...]
) -> tuple[SiteResult, ...]:
    """The sites with the session (and commit) that first covered each, where the
    arm's commits or its sessions' edits tell."""
    report, commits = pilot.outcome.report, pilot.commits
    if not any(s.covered for s in sites) or not (commits or report.session_list):
        return sites
    first = None
    if commits and len(commits) <= MOST_STEPS:
        try:
            first = first_steps(covered_by_steps(pilot.plan, repo_dir, [c.sha for c in commits]))
        except ProcError as exc:  # a commit git cannot read: the arm's doing
            pilot.warnings.append(f"sites by commit not scored: {exc.stderr.strip()[:200]}")
    elif commits:
        pilot.warnings.append(f"sites by commit not scored: more than {MOST_STEPS} commits")
    return by_session(sites, report.session_list, commits, first)


NETWORK_KEPT = (
    "network = false not kept: without a sandbox that can take it away (--sandbox "
    "none), the arm had the machine's network"
)


def execute_plan(
    p: Plan,
    store: Store,
    *,
    keep: bool = False,
    launcher: LauncherName = "serial",
    events: Sink = ignore,
    matrix: str = "",
    spares: Spares | None = None,
    behind: Behind | None = None,
) -> Run:
    """Run one planned pilot and record it in the store, whatever happens to it; in
    this process, which the `launcher` started. Its stages and its run are told to
    `events` (see `benchkit.run.events`). Its heartbeat carries the `matrix` token of
    the launch that runs it, when told: the Ray launcher reads the pilot's stages there.
    With `spares` (see `spares_for`), the pilot takes the trees made for it, and has
    the next pilot's made while its checks run. With `behind` (see
    `benchkit.run.behind`), the record of the pilot before, written by a thread as
    this one starts, is told before the first of this one's stages to begin once it is
    written, and at the latest as its arm begins (an `instant` arm's: as its checks
    begin); this one's is held in turn (unless
    it was interrupted, failed on a full disk, or `behind.holds` is False), and what
    it returns is the run as it is being written, but for its `record` phase: `behind`
    tells it once written.

    An interrupt is recorded as `interrupted`, an error of benchkit's own as `failed`
    (kind `other`); both are raised again once the run is recorded.
    """
    clock = Clock()  # the pilot's wall time starts here
    started_at = datetime.now(UTC)
    run_id = new_run_id(started_at)
    folder = pilots_folder() / run_id
    pilot = PilotState(
        plan=p,
        run_id=run_id,
        started_at=started_at,
        artifacts=store.artifacts(run_id),
        folder=folder,
        clock=clock,
        tree=p.repository.base_sha,
        store=store,
        launcher=launcher,
        owner=Owner(pid=os.getpid(), host=socket.gethostname(), process_start=own_start()),
        status="running",
    )
    owner = pilot.owner
    started = started_at.isoformat()
    model = f" {p.spec.model}" if p.spec.model else ""
    label = f"{p.bench.name} {p.spec.arm}{model} #{p.spec.trial}"
    early: KeyboardInterrupt | None = None  # an interrupt during the start: recorded below
    heart: Heartbeat | None = None
    worker = f"{owner.host}:{owner.pid}"

    def told_before(*, wait: bool) -> None:
        """The record of the pilot before told if it is written (with `wait`, once it
        is): no phase of this pilot's."""
        if behind is not None:
            with clock.aside():
                behind.settle(wait=wait)

    def meanwhile() -> None:
        """As this pilot's checks begin (or its checks at base, after an arm that
        failed): the record of the pilot before told (written by now), and the next
        pilot's trees made by a thread while they run (not while its own work does)."""
        told_before(wait=True)
        if spares is not None:
            spares.make_next()

    held: list[bool] = []  # whether this pilot's record is held (by `behind`)

    def hold(write: Callable[[], Run], after: Callable[[], None]) -> None:
        assert behind is not None and heart is not None
        behind.hold(write, then=heart.stop, after=after)  # its heartbeat goes on until
        held.append(True)  # it is written, then is stopped by the record's thread

    def stage(name: str) -> None:
        assert heart is not None  # from the start (the pilot fails there without one)
        heart.stage(name)
        events(StageBegun(run_id=run_id, label=label, stage=name, worker=worker))

    def stage_after(name: str) -> None:
        """A stage, told after the record of the pilot before if it is written by now,
        and at the latest as the arm begins (an `instant` arm's: as the checks do);
        the arm's once this pilot's `running` row is written (`row_written`: the checks
        at base wait for it too, where they run)."""
        told_before(wait=name == "execute" and not p.arm.instant)  # else as checks begin
        if name == "execute":
            row_written(pilot)
        stage(name)

    try:
        with deferred_interrupts():  # its trees begun, then the first beat before the row
            taken = spares.take(p.repository, folder) if spares is not None else None
            if taken is None:
                folder.mkdir(parents=True)
            else:
                pilot.making = taken.making  # its spare's commands: the pilot's own now
            pilot.made_ahead = _made_ahead(pilot, taken)
            pilot.logs.mkdir(parents=True, exist_ok=True)
            heart = store.heartbeat(
                Beat(
                    run_id=run_id,
                    stage="start",
                    host=owner.host,
                    pid=owner.pid,
                    started_at=started,
                    updated_at=started,
                    label=label,
                    matrix=matrix,
                ),
            )
            row = functools.partial(_running_row, store, heart, run_record(pilot, None, keep))
            if behind is None:
                row()
            else:  # by a thread, beside the record of the pilot before
                pilot.running_row = behind.running_row(row)
    except KeyboardInterrupt as exc:
        early = exc
    except BaseException as exc:  # a full store (or a fault): nothing of the run is left
        with deferred_interrupts():  # nothing of the pilot left, whatever comes meanwhile
            pilot.making.stop()
            if heart is not None:
                heart.stop()
            shutil.rmtree(pilot.artifacts, ignore_errors=True)
            if pilot.made_ahead is not None:
                wait([pilot.made_ahead])  # no git process writes in the folder as it goes
            discard(folder)
        if not (isinstance(exc, OSError) and exc.errno in FULL and _of_store(exc, store)):
            raise  # a full cache (its folder) says so as it is
        raise StoreError(
            store.path, "", f"cannot record run {run_id}: no space left; nothing of it was written"
        ) from None
    try:
        assert heart is not None  # an interrupt waits for the block's end (deferred_interrupts)
        if early is not None:
            raise early
        _run_stages(pilot, stage_after, meanwhile)
    except (KeyboardInterrupt, SystemExit):  # SystemExit: its process is told to end (Ray's)
        pilot.making.stop()  # a checkout still at work ends now, not once it is done
        pilot.status = "interrupted"
        pilot.outcome = ArmOutcome(
            ok=False, failure_kind="interrupted", detail="interrupted", retryable=True
        )
        raise
    except Exception as exc:
        pilot.status = "failed"
        pilot.outcome = failure_of(exc)
        if pilot.outcome.failure_kind != "disk":
            raise  # a full disk is this run's failure, recorded; anything else is a fault
    finally:
        with deferred_interrupts():  # a second Ctrl-C waits until the run is recorded
            try:
                ended_well = pilot.status != "interrupted" and pilot.outcome.failure_kind != "disk"
                if ended_well:
                    with contextlib.suppress(Exception):  # a spare is never worth a record
                        meanwhile()  # where the checks did not run: now
                told_before(wait=True)  # not told yet (this one ended before its checks)
                held_ok = behind is not None and behind.holds and pilot.row_stands()
                later = hold if held_ok and ended_well else None  # else: at once
                run = _finish(pilot, keep, stage, later)
            finally:
                if heart is not None and not held:
                    heart.stop()
                with contextlib.suppress(Exception):  # the clean tree's, if being made
                    verify.settled(pilot)
                for instance in pilot.instances if not held else ():  # if cleanup failed
                    release(instance.path)  # (held: its cleanup lets go, whatever came)
            if behind is not None and not held:
                behind.tell(run)  # a sink's error kept, as for a run it holds
            elif not held:
                events(Recorded(run=run))
    return run


def _running_row(store: Store, heart: Heartbeat, row: Run) -> None:
    """The pilot's `running` row, once its first beat is in the store: recovery takes a
    run of another host's with no heartbeat for one whose benchkit is gone."""
    heart.first_written()
    store.record_row(row)


def _finish(
    pilot: PilotState,
    keep: bool,
    stage: Callable[[str], None],
    later: Callable[[Callable[[], Run], Callable[[], None]], None] | None = None,
) -> Run:
    """score, record, cleanup: whatever happened before. The record written at once,
    then the cleanup; or handed to `later`, the record's thread, with the cleanup in
    bubblewrap (with no sandbox, the cleanup checks the cached environment before the
    next pilot takes it: here). The run returned then is the one it will write, but
    for its `record` phase."""
    p, repo = pilot.plan, pilot.plan.repository
    secrets = pilot.secrets
    if pilot.made_ahead is not None:
        wait([pilot.made_ahead])  # interrupted before `prepare` waited: made, then scored
    _ignored_written(pilot)  # listed by now, before its worktree goes
    # the arm and the checks are done: nothing of theirs runs on (a walk of /proc, where
    # their sandbox did not end it all)
    left = 0 if pilot.sandbox.ends_whole else stop_left(pilot.run_id)
    if left:
        pilot.warnings.append(
            f"stopped {left} process{'es' * (left != 1)} the pilot left running (its mark "
            f"{PILOT_MARK} in their environment, outside its process groups)"
        )
    stage("score")
    with pilot.clock.stage("score"):
        if pilot.status == "running":
            pilot.status = "failed"  # stopped before its stages said otherwise
        repo_dir = pilot.git_dir if (pilot.git_dir / "HEAD").exists() else repo.mirror
        arm = arm_change(repo, repo_dir, pilot.tree, pilot.arm_change)
        coverage = score_arm(p, repo_dir, pilot.tree, arm)
        pilot.sites = _by_session(pilot, repo_dir, site_results(coverage))
        pilot.tampered = tampering(repo_dir, repo.base_sha, pilot.tree, arm)
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
        human = redact(human_patch(repo), secrets)
        for name, text in (("agent.patch", patch), ("human.patch", human)):
            try:
                (pilot.artifacts / name).write_text(text, errors="surrogateescape")
            except OSError as exc:
                if exc.errno not in FULL:
                    raise
                (pilot.artifacts / name).unlink(missing_ok=True)
                pilot.warnings.append(f"{name} not kept: {no_space(exc)}")
    if pilot.running_row is not None:
        wait([pilot.running_row])  # never written over this record (a thread's write)
    stage("record")
    pilot.clock.lap("record")
    since = pilot.clock.mark
    run = redacted(run_record(pilot, coverage, keep), secrets)  # its phases up to here
    try:
        if later is None:
            run = recorded(pilot, run, since)
        else:  # the cleanup by the record's thread once it is written, beside the next
            # pilot; a copy of the environment's (its check) here, before that pilot takes it
            beside = functools.partial(_cleaned_up, pilot, keep, "by the record's thread")
            later(
                functools.partial(recorded, pilot, run, since),
                beside if pilot.sandbox.binds else lambda: None,
            )
    except BaseException:  # not recorded: its folder goes all the same
        if not pilot.row_stands():  # nothing of the run in the store: nor its logs
            shutil.rmtree(pilot.artifacts, ignore_errors=True)
        with contextlib.suppress(Exception):
            _cleaned(pilot, keep)
        raise
    pilot.clock.lap("cleanup")
    stage("cleanup")
    if later is None:
        _cleaned_up(pilot, keep, "after the record")
    elif not pilot.sandbox.binds:
        _cleaned_up(pilot, keep, "beside the record, written by a thread")
    return run


def _cleaned_up(pilot: PilotState, keep: bool, when: str) -> None:
    """`_cleaned`, its time said in the pilot's log (not the record's: written by now);
    the pilot's hold on its environment let go whatever came."""
    started = time.perf_counter()
    try:
        _cleaned(pilot, keep)
    finally:
        for instance in pilot.instances:  # if a removal failed
            release(instance.path)
    cleanup = f"cleanup: {time.perf_counter() - started:.3f} s {when}\n"
    with contextlib.suppress(OSError), (pilot.logs / "pilot.log").open("a") as log:
        log.write(cleanup)


def _of_store(exc: OSError, store: Store) -> bool:
    """Whether the file an error names is the store's."""
    return exc.filename is not None and Path(os.fsdecode(exc.filename)).is_relative_to(store.path)


def _cleaned(pilot: PilotState, keep: bool) -> None:
    """The pilot's instances of the environment removed (the cached one checked), and
    its folder (but its worktree, to `keep`)."""
    with contextlib.suppress(Exception):  # what it raised was said at verify, if it ran
        verify.settled(pilot)  # a copy being made: made, then removed
    instances, going = pilot.instances, None if keep else pilot.folder
    for n, instance in enumerate(instances):  # of one cached environment: checked once, last
        remove(instance, read_only=pilot.sandbox.binds or n < len(instances) - 1, going=going)
    if not keep:
        discard(pilot.folder)
    elif pilot.folder.is_dir():
        for part in pilot.folder.iterdir():
            if part != pilot.worktree:
                discard(part)


def pilots_folder() -> Path:
    """Where each pilot's folder lives while it runs: its worktree, HOME, tmp."""
    return cache_dir() / "pilots"
