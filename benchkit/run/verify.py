"""The verify stage: the arm's diff, and nothing else, checked on a clean tree.

A clean tree is a repository of benchkit's own, checked out at base with its own
instance of the environment by a thread while the baseline runs, ready before the arm
runs (out of the arm's reach in the sandbox). After the arm, its tree (the snapshot:
commits, staged, unstaged and untracked files, not ignored ones), with the files the
bench holds out (`[tests] held_out`, and those of its `test_patch`) reset to their
held-out version, is checked out there by git, and the checks run there with a HOME
and a tmp of their own. Whatever the arm left besides its diff (ignored files, its git
config and index flags, its HOME, its copy of the environment) never reaches a check,
and no code of the arm's runs outside the sandbox (an editable install was made of
base's tree). There the checks run after the arm, failing test files are rerun alone,
and the gate judges.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from benchkit.bench.bench_file import Tests
from benchkit.gate.swebench import graded_run
from benchkit.gate.tampering import held_out
from benchkit.gate.verdict import TestRun, files_to_rerun, judge, resolved
from benchkit.records import SweBenchGrade, TestRecord
from benchkit.run.record import PilotState, make_sandbox_folders, sandbox_of
from benchkit.run.scoring import human_paths
from benchkit.workspace.checks import Confinement, run_alone, run_checks
from benchkit.workspace.environment import Instance, env_copy_of, instantiate
from benchkit.workspace.git import add_worktree, changed_paths, check_out, files_of, with_files_of
from benchkit.workspace.proc import ProcError
from benchkit.workspace.recipe import EnvironmentFailure
from benchkit.workspace.sandbox import Sandbox


def verify(
    pilot: PilotState,
    stage: Callable[[str], None],
    meanwhile: Callable[[], None] = lambda: None,
    based: Callable[[], None] = lambda: None,
) -> None:
    """The clean tree, the checks after the arm there, then the gate: failing test
    files rerun alone. A tree git cannot check out fails the run (`verify`). What is
    to be done `meanwhile` (by a thread) begins as the checks begin; `based` gives
    the pilot its baseline, if it has none yet, before the gate reads it."""
    checked = clean_tree(pilot)
    if checked is None:
        return
    meanwhile()
    instance, sandbox = checked
    bench = pilot.plan.bench
    confinement = Confinement(sandbox=sandbox, secrets=pilot.secrets)
    runs = run_checks(
        bench, phase="after", instance=instance, logs=pilot.logs, confinement=confinement
    )
    pilot.checks += [r.result for r in runs]
    after = next((r.tests for r in runs if r.tests is not None), None)
    if after is None:
        return
    pilot.tests += [TestRecord(phase="after", attempt=0, case=c) for c in after.cases or ()]
    based()
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
    expected = bench.file.tests
    pilot.gate = judge(
        base,
        after,
        reruns,
        unjudgeable=unjudgeable,
        known_flaky=known_flaky,
        allow_removed=expected is not None and expected.allow_removed,
    )
    if expected is not None:
        pilot.resolved = resolved(after, pilot.gate, expected.must_pass, expected.keep_passing)
    if bench.file.swebench is not None and expected is not None:
        pilot.swebench = swebench_graded(bench.file.swebench.instance_id, after, expected)
        pilot.resolved = pilot.swebench.grade == "FULL"


def swebench_graded(instance_id: str, after: TestRun, tests: Tests) -> SweBenchGrade:
    """SWE-bench's grade of the run after the arm (its first, not a rerun): FULL is
    resolved by SWE-bench's rules."""
    graded = graded_run(
        after.cases,
        exit_code=after.exit_code,
        timed_out=after.timed_out,
        fail_to_pass=tests.must_pass,
        pass_to_pass=tests.keep_passing,
    )
    return SweBenchGrade.of(instance_id, graded)


_MAKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-clean-tree")


def prepare_clean_tree(pilot: PilotState, log: Path) -> None:
    """The clean tree at base, the folders of its sandbox and its own instance of the
    environment, made by a thread while the baseline runs (`settled` waits for them,
    before the arm: what fails there fails the pilot before the arm costs anything): an
    editable install there runs base's build, never one the arm wrote (the arm's tree
    replaces base's files in it at `verify`, and an editable install sees them as it
    sees the arm's in its worktree). An interrupted pilot stops the checkout
    (`pilot.making`). A pilot that took a spare's trees (see `benchkit.run.spares`) has
    its clean tree made."""
    repo, where = pilot.plan.repository, pilot.checked_tree
    assert pilot.environment is not None
    environment, bound, making = pilot.environment, pilot.sandbox.binds, pilot.making

    def made() -> Instance:
        if not pilot.spared:  # else made with the worktree, before the pilot started
            add_worktree(repo.mirror, repo.base_sha, where, within=making)
            make_sandbox_folders(pilot.folder, where.name)
        return instantiate(environment, where=env_copy_of(where), tree=where, log=log, bound=bound)

    pilot.checked_ahead = _MAKER.submit(made)


def settled(pilot: PilotState) -> Instance | None:
    """The clean tree's instance of the environment, once the thread that makes it is
    done. Raises what the thread raised (once: then None). An interrupt while it waits
    leaves the thread to the cleanup, which waits for it again."""
    ahead = pilot.checked_ahead
    if ahead is not None:
        try:
            pilot.checked = ahead.result()
        finally:
            if ahead.done():
                pilot.checked_ahead = None
    return pilot.checked


def clean_tree(pilot: PilotState) -> tuple[Instance, Sandbox] | None:
    """The arm's tree, held-out files reset, in the clean tree, with the clean tree's
    instance of the environment and its own sandbox (HOME, tmp); None when the run
    failed here."""
    p = pilot.plan
    repo, tests = p.repository, p.bench.file.tests
    tree = pilot.tree
    note = [f"the arm's tree {pilot.tree}"]
    where = pilot.checked_tree
    try:  # made, an editable install of base's files included, before they are replaced
        checked = settled(pilot)
    except EnvironmentFailure as exc:
        _failed(pilot, "environment", str(exc))
        return None
    try:
        if tests is not None and tests.held_out:
            source = repo.human_sha if tests.held_out == "human" else repo.base_sha
            theirs = files_of(pilot.git_dir, source)
            paths = [] if tests.held_out == "human" else [*files_of(pilot.git_dir, tree), *theirs]
            held = held_out(paths, tests.held_out, human_paths(repo))
            if not held:
                pilot.warnings.append(f"held_out {tests.held_out!r}: no file held out")
            tree = with_files_of(pilot.git_dir, tree, theirs, held)
            whose = "the human's" if tests.held_out == "human" else "base's"
            note += [f"held out, as {whose}: {path}" for path in held]
        if repo.tests_sha is not None:  # the test patch's files, as base with it has them
            held = changed_paths(pilot.git_dir, repo.base_sha, repo.tests_sha)
            tree = with_files_of(pilot.git_dir, tree, files_of(pilot.git_dir, repo.tests_sha), held)
            note += [f"held out, as the test patch makes it: {path}" for path in held]
        check_out(pilot.git_dir, tree, repo.base_sha, where)
    except ProcError as exc:
        _failed(pilot, "verify", f"the arm's diff could not be checked out on a clean tree: {exc}")
        return None
    note.append(f"checked out at {where}")
    (pilot.logs / "verify.log").write_text("".join(f"{line}\n" for line in note))
    assert checked is not None
    # its folders, made with the tree, made again if an arm with no sandbox removed them
    make_sandbox_folders(pilot.folder, where.name)
    sandbox = sandbox_of(p, pilot.folder, where.name)
    return checked, sandbox.with_read_only(checked.binds, checked.writable)


def _failed(pilot: PilotState, kind: str, detail: str) -> None:
    """The run failed after the arm: what the arm reported (its cost) is kept."""
    pilot.outcome = replace(pilot.outcome, ok=False, failure_kind=kind, detail=detail)
    pilot.status = "failed"
