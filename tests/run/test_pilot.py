"""Pilots on a real temporary git repository, one per built-in arm, and the workspace."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.arms.protocol import Arm, ArmContext, ArmOutcome
from benchkit.errors import StoreError
from benchkit.records import PilotSpec
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import plan
from benchkit.store.store import Store
from benchkit.workspace.cache import TRASH, cache_dir, discard, trash_emptied
from benchkit.workspace.git import (
    add_worktree,
    diff,
    exclude,
    git_env,
    reader,
    remove_worktree,
    snapshot,
)
from tests.conftest import TinyRepo, make_repo, sh_git
from tests.helpers import PATIENCE_S, started_as_a_terminal_starts_it, trash_gone

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early


def _one(
    tiny: TinyRepo, arm: str, store: Path, *, seeded: bool = True, **kw: object
) -> benchkit.Run:
    """One pilot, run even when the store holds its unit (in a new set); the store holds
    the bench's checks at base (`TinyRepo.seeded`) unless not `seeded`."""
    if seeded:
        tiny.seeded(store)
    [run] = benchkit.pilot(str(tiny.bench_dir), arm=arm, store=store, new_set=True, **kw)  # type: ignore[arg-type]
    return run


def test_noop_covers_nothing(tiny: TinyRepo, tmp_path: Path) -> None:
    run = _one(tiny, "noop", tmp_path)
    assert run.status == "ok"
    assert (run.sites_total, run.sites_covered, run.sites_unrelated) == (2, 0, 0)
    assert run.base_sha == tiny.base
    assert run.human_sha == tiny.human
    assert run.after("test") is not None and run.after("test").status == "ok"  # type: ignore[union-attr]


def test_human_covers_every_site(tiny: TinyRepo, tmp_path: Path) -> None:
    run = _one(tiny, "human", tmp_path)
    assert run.status == "ok"
    assert (run.sites_covered, run.sites_matched, run.sites_unrelated) == (2, 2, 0)
    assert run.files_recall == run.files_precision == 1.0
    test = run.after("test")
    assert test is not None and (test.status, test.count) == ("ok", 0)
    # the human's new test ran: 2 cases in the report
    assert "2 passed" in Path(test.log_path).read_text()
    patch = Path(run.artifacts, "agent.patch").read_text()
    assert "+def mul(a, b):" in patch


def test_replay_by_name_and_by_path(tiny: TinyRepo, tmp_path: Path) -> None:
    patch = subprocess.run(
        ["git", "diff", tiny.base, tiny.human, "--", "util.py"],
        cwd=tiny.path,
        env=git_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (tiny.bench_dir / "patches" / "half.patch").write_text(patch)
    by_name = _one(tiny, "replay:half", tmp_path)
    assert (by_name.status, by_name.sites_covered, by_name.sites_matched) == ("ok", 1, 1)
    elsewhere = tmp_path / "elsewhere.patch"
    elsewhere.write_text(patch)
    by_path = _one(tiny, f"replay:{elsewhere}", tmp_path)
    assert by_path.sites_covered == 1
    assert by_path.spec.arm == f"replay:{elsewhere}"


def test_a_patch_that_does_not_apply_is_a_recorded_failure(tiny: TinyRepo, tmp_path: Path) -> None:
    (tiny.bench_dir / "patches" / "stale.patch").write_text(
        "--- a/util.py\n+++ b/util.py\n@@ -1,2 +1,2 @@\n"
        "-NAME = 'other'\n+NAME = 'x'\n VERSION = 1\n"
    )
    run = _one(tiny, "replay:stale", tmp_path)
    assert (run.status, run.failure_kind) == ("failed", "patch")
    assert run.after("test") is None  # nothing to verify
    assert "does not apply" in Path(run.artifacts, "logs", "arm.log").read_text()
    stored = benchkit.runs(tmp_path)
    assert stored.select("status", "failure_kind").row(0) == ("failed", "patch")
    assert stored["lint_status"].to_list() == [None]


@dataclass(frozen=True)
class Busy(Arm):
    """A real arm for the test: commits, stages, edits and leaves untracked files."""

    name: str = "busy"

    def run(self, context: ArmContext) -> ArmOutcome:
        wt = context.worktree
        (wt / "util.py").write_text("NAME = 'calc'\nVERSION = 2\n")
        sh_git(wt, "commit", "--quiet", "-am", "committed by the arm")
        (wt / "calc.py").write_text((wt / "calc.py").read_text() + "\n\nSTAGED = 1\n")
        sh_git(wt, "add", "calc.py")
        (wt / "calc.py").write_text((wt / "calc.py").read_text() + "UNSTAGED = 2\n")
        (wt / "new_module.py").write_text("UNTRACKED = 3\n")
        (wt / "ignored").mkdir()
        (wt / "ignored" / "cache.txt").write_text("never in the diff\n")
        (wt / "debug.log").write_text("never in the diff\n")
        return ArmOutcome(ok=True)


def test_the_diff_holds_commits_staged_unstaged_and_untracked(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="noop")])
    p = replace(p, arm=Busy())
    run = execute_plan(p, Store(tiny.seeded(tmp_path)))
    patch = Path(run.artifacts, "agent.patch").read_text()
    for text in ("+VERSION = 2", "+STAGED = 1", "+UNSTAGED = 2", "+UNTRACKED = 3"):
        assert text in patch
    assert "ignored/cache.txt" not in patch
    assert "debug.log" not in patch
    assert run.base_sha == tiny.base  # the base stays what it was when the pilot began
    assert run.sites_covered == 2  # VERSION (matched) and the anchor after sub()
    assert run.sites_matched == 1
    assert run.sites_unrelated == 1  # new_module.py


def test_the_worktree_is_removed_unless_kept(tiny: TinyRepo, tmp_path: Path) -> None:
    gone = _one(tiny, "human", tmp_path)
    assert gone.worktree is None
    assert list((cache_dir() / "pilots").iterdir()) == []
    kept = _one(tiny, "human", tmp_path, keep=True)
    assert kept.worktree is not None
    assert (Path(kept.worktree) / "calc.py").read_text().endswith("return a * b\n")


def test_trials_and_the_spec_are_recorded(tiny: TinyRepo, tmp_path: Path) -> None:
    runs = benchkit.pilot(
        str(tiny.bench_dir),
        arm=["noop", "human"],
        trials=2,
        store=tiny.seeded(tmp_path),
        executor="cli",
        model="m-1",
        max_cost=2.5,
    )
    assert [(r.spec.arm, r.spec.trial) for r in runs] == [
        ("noop", 1),
        ("noop", 2),
        ("human", 1),
        ("human", 2),
    ]
    frame = benchkit.runs(tmp_path)
    assert frame.height == 4
    assert set(frame["executor"]) == {"cli"}
    assert set(frame["model"]) == {"m-1"}
    assert set(frame["max_cost"]) == {2.5}
    assert frame["bench"].unique().to_list() == ["tiny"]
    checks = benchkit.table("checks", tmp_path)
    # two checks, at base and after, for four runs
    assert checks.height == 16
    assert checks.group_by("phase").len().sort("phase").rows() == [("after", 8), ("base", 8)]
    sites = benchkit.table("sites", tmp_path)
    assert sites.filter(pl.col("covered")).height == 4  # both human runs cover both sites


def test_a_check_that_cannot_start_is_missing(tiny: TinyRepo, tmp_path: Path) -> None:
    text = tiny.bench_file.read_text().replace(
        "command = \"python -c 'import calc, util'\"", 'command = "no-such-linter --all"'
    )
    tiny.bench_file.write_text(text)
    run = _one(tiny, "noop", tmp_path)
    lint = run.after("lint")
    assert lint is not None and lint.status == "missing"


def test_a_check_that_hangs_times_out(tiny: TinyRepo, tmp_path: Path) -> None:
    text = tiny.bench_file.read_text().replace(
        "command = \"python -c 'import calc, util'\"\ntimeout = 30",
        'command = "sleep 3600 & sleep 3600"\ntimeout = 0.5',
    )
    tiny.bench_file.write_text(text)
    run = _one(tiny, "noop", tmp_path)
    lint = run.after("lint")
    assert lint is not None
    assert (lint.status, lint.exit_code) == ("timeout", None)
    assert lint.duration_s < PATIENCE_S  # stopped: long before its sleeps' end, however busy


@pytest.mark.parametrize("broken", ["", "<testsuite", "<html>not a report</html>"])
def test_a_bad_test_report_is_never_a_pass(tiny: TinyRepo, tmp_path: Path, broken: str) -> None:
    text = tiny.bench_file.read_text().replace(
        'command = "python -m pytest -q -p no:cacheprovider --junitxml {report}"',
        f'command = ["python", "-c", "open(\'junit.xml\', \'w\').write({broken!r})"]',
    )
    tiny.bench_file.write_text(text)
    run = _one(tiny, "noop", tmp_path)
    test = run.after("test")
    assert test is not None
    assert test.status == "fail"
    assert test.count is None
    assert test.note is not None and "junit.xml" in test.note


def test_a_test_report_path_that_is_a_folder_is_never_a_pass(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """`report` names a folder (the runner writes its report inside it): the test check
    fails, its note says why, and the pilot is recorded, at base as after."""
    text = tiny.bench_file.read_text().replace('report = "junit.xml"', 'report = "reports"')
    text = text.replace(
        'command = "python -m pytest -q -p no:cacheprovider --junitxml {report}"',
        'command = "python -m pytest -q -p no:cacheprovider --junitxml {report}/junit.xml"',
    )
    tiny.bench_file.write_text(text)
    run = _one(tiny, "human", tmp_path)
    assert run.status == "ok", run.failure_detail
    for phase in ("base", "after"):
        [test] = [c for c in run.checks if c.check == "test" and c.phase == phase]
        assert test.status == "fail" and test.note == "reports: a folder, not a test report"
    assert run.gate is not None and run.gate.verdict == "error"


@dataclass(frozen=True)
class Raising(Arm):
    """A real arm that edits a file, then stops the way a user or a bug stops it."""

    error: BaseException
    name: str = "raising"

    def run(self, context: ArmContext) -> ArmOutcome:
        (context.worktree / "util.py").write_text("NAME = 'calc'\nVERSION = 2\n")
        raise self.error


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (KeyboardInterrupt(), "interrupted", "interrupted"),
        (RuntimeError("boom"), "failed", "other"),
    ],
)
def test_a_pilot_stopped_half_way_is_still_recorded(
    tiny: TinyRepo, tmp_path: Path, error: BaseException, status: str, kind: str
) -> None:
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="noop")])
    p = replace(p, arm=Raising(error))
    with pytest.raises(type(error)):
        execute_plan(p, Store(tmp_path))
    row = benchkit.runs(tmp_path).row(0, named=True)
    assert (row["status"], row["failure_kind"]) == (status, kind)
    assert row["sites_covered"] == 1  # the partial edit was scored ...
    patch = Path(row["artifacts"], "agent.patch").read_text()
    assert "+VERSION = 2" in patch  # ... and kept
    assert list((cache_dir() / "pilots").iterdir()) == []


def test_compare_counts_neither_a_stopped_run_nor_an_unjudged_one_as_the_arms(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Real runs: a human run that passed, one interrupted half way (the lab's doing,
    not the arm's) and one whose tests never ran (`checks=["lint"]`): the interrupted
    one is left out of the means, and the one without a gate verdict is no pass."""
    _one(tiny, "human", tmp_path)
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="human", trial=2)])
    with pytest.raises(KeyboardInterrupt):
        execute_plan(replace(p, arm=Raising(KeyboardInterrupt())), Store(tmp_path))
    linted = _one(tiny, "noop", tmp_path, checks=["lint"])
    assert linted.status == "ok" and linted.gate is None  # finished; its tests never ran
    runs = benchkit.runs(tmp_path)
    assert sorted(runs["status"]) == ["interrupted", "ok", "ok"]
    result = benchkit.compare(runs, by="arm", metrics=["coverage", "pass"])
    human, noop = result.frame.sort("arm").to_dicts()
    assert (human["runs"], human["coverage_mean"], human["pass_mean"]) == (1, 1.0, 1.0)
    assert (noop["runs"], noop["pass_n"], noop["pass_mean"]) == (1, 0, None)  # unknown
    table = result.to_markdown()
    assert "| noop | 1 (few) | 0.0% | - |" in table  # coverage a share, in percent
    assert "1 run left out: interrupted, crashed or still running" in table


def test_the_baseline_is_cached_by_base_sha_and_checks(tiny: TinyRepo, tmp_path: Path) -> None:
    first = _one(tiny, "noop", tmp_path, seeded=False)
    second = _one(tiny, "human", tmp_path)
    assert (first.baseline_cached, second.baseline_cached) == (False, True)
    assert first.baseline_key == second.baseline_key
    base = [c for c in second.checks if c.phase == "base"]
    assert base == [c for c in first.checks if c.phase == "base"]  # the same records
    assert second.phases["baseline"] < first.phases["baseline"]
    assert [t.case.name for t in second.tests if t.phase == "base"] == ["test_add"]
    # Other checks are another baseline.
    tiny.bench_file.write_text(tiny.bench_file.read_text().replace("timeout = 30", "timeout = 31"))
    third = _one(tiny, "noop", tmp_path)
    assert not third.baseline_cached
    assert third.baseline_key != first.baseline_key


def test_a_corrupt_baseline_is_run_again(tiny: TinyRepo, tmp_path: Path) -> None:
    first = _one(tiny, "noop", tmp_path)
    (tmp_path / "baselines" / "checks" / f"{first.baseline_key}.parquet").write_bytes(b"junk")
    with pytest.warns(UserWarning, match="skipped .*baselines/checks"):
        again = _one(tiny, "noop", tmp_path)
    assert not again.baseline_cached
    assert _one(tiny, "noop", tmp_path).baseline_cached  # written afresh


def test_a_pilots_git_folders_are_those_git_init_makes(tiny: TinyRepo, tmp_path: Path) -> None:
    """The worktree's repository and benchkit's reader are made without `git init`
    processes, as `git init --template=` makes them on that file system."""
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="noop")])
    mirror, base = p.repository.mirror, p.repository.base_sha
    worktree = add_worktree(mirror, base, tmp_path / "tree")
    own = reader(mirror, tmp_path / "git")
    for flags, made in (([], worktree / ".git"), (["--bare"], own)):
        fresh = tmp_path / f"fresh{len(flags)}"
        subprocess.run(["git", "init", "-q", *flags, "--template=", str(fresh)], check=True)
        fresh_git = fresh if flags else fresh / ".git"
        assert (made / "config").read_text() == (fresh_git / "config").read_text()
        folders = {q.relative_to(fresh_git) for q in fresh_git.rglob("*") if q.is_dir()}
        assert folders <= {q.relative_to(made) for q in made.rglob("*") if q.is_dir()}
    status = ["git", "-C", str(worktree), "status", "--porcelain"]
    assert subprocess.run(status, capture_output=True, text=True, check=True).stdout == ""
    head = ["git", "-C", str(worktree), "rev-parse", "HEAD"]
    assert subprocess.run(head, capture_output=True, text=True, check=True).stdout.strip() == base


def test_a_same_size_edit_right_after_checkout_is_in_the_diff(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    # Racy git: an edit in the same second as the checkout, of the same size, looks
    # unchanged by its stat data; the snapshot must still see it.
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="noop")])
    mirror, base = p.repository.mirror, p.repository.base_sha
    for n in range(3):
        worktree = add_worktree(mirror, base, tmp_path / f"wt{n}")
        own = reader(mirror, tmp_path / f"git{n}")
        (worktree / "util.py").write_text("NAME = 'calc'\nVERSION = 9\n")  # same size
        time.sleep(1.1)  # the snapshot comes a second later
        tree = snapshot(worktree, own, base)
        assert "+VERSION = 9" in diff(own, base, tree), n
        remove_worktree(worktree)


def test_a_sigint_while_a_10000_line_change_is_scored_stops_benchkit_within_a_second(
    tmp_path: Path,
) -> None:
    """2,000 human sites in a 10,000-line file, 2,000 of the arm's hunks against them:
    a Ctrl-C that lands while they are scored stops benchkit, the run recorded, in
    under a second (scoring once took 19 s here, with the interrupt held back). The
    pilot beats every 5 ms, so that its 50 ms of scoring is seen in its heartbeat (a
    stage shows there within 0.1 s, else)."""
    lines = [f"value_{i} = {i}\n" for i in range(10_000)]
    human = [f"value_{i} = {i} + 1\n" if i % 5 == 0 else line for i, line in enumerate(lines)]
    agent = [
        f"value_{i} = {i} - 1\n" if i % 5 in (0, 2) and i % 10 else line
        for i, line in enumerate(lines)
    ]
    repo = tmp_path / "repo"
    make_repo(repo, {"big.py": "".join(lines)}, {"big.py": "".join(human)}, "human")
    bench = tmp_path / "bench"
    (bench / "patches").mkdir(parents=True)
    (repo / "big.py").write_text("".join(agent))
    patch = sh_git(repo, "diff")
    sh_git(repo, "checkout", "--", "big.py")
    (bench / "patches" / "big.patch").write_text(patch + "\n")
    (bench / "bench.toml").write_text(
        f'name = "big"\ninstruction = "Bump every fifth value."\n\n[repo]\ngit = "{repo}"\n'
        'base = "main"\n\n[human]\nref = "human"\n\n[[checks]]\nname = "lint"\n'
        'command = "python -c pass"\ntimeout = 30\n'
    )
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(bench)]
    with started_as_a_terminal_starts_it():
        proc = subprocess.Popen(
            [*argv, "--arm", "replay:big", "--store", str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "BENCHKIT_HEARTBEAT_S": "0.005"},
        )
    deadline = time.monotonic() + PATIENCE_S
    while not any(b.stage == "score" for b in Store(store).beats().values()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.002)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=PATIENCE_S)
    took = time.monotonic() - sent
    assert proc.returncode == 128 + signal.SIGINT, err
    assert took < 1.0, f"benchkit took {took:.2f} s to stop"
    [row] = benchkit.runs(store).to_dicts()
    assert row["sites_total"] == 2_000 and row["sites_covered"] == 1_000


def test_a_pilots_folders_go_to_the_trash_and_a_killed_ones_leftovers_are_removed(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """The folders a pilot is done with are out of the way when it returns and gone
    once the command exits; what a killed benchkit left in the trash, the next one
    removes."""
    left = cache_dir() / TRASH / "20260101T000000-deadbeef-0123abcd"
    (left / "tree" / "src").mkdir(parents=True)
    (left / "tree" / "src" / "x.py").write_text("x = 1\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchkit",
            "pilot",
            "--bench",
            str(tiny.bench_dir),
            "--arm",
            "noop",
            "--store",
            str(tiny.seeded(tmp_path / "store")),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0, done.stderr
    assert list((cache_dir() / "pilots").iterdir()) == []
    trash_gone()  # what its thread had not removed as it exited: by the `rm` it left
    assert list((cache_dir() / TRASH).iterdir()) == []  # its own, and the leftover
    folder = tmp_path / "doomed"
    (folder / "a").mkdir(parents=True)
    discard(folder)
    assert not folder.exists()  # at once: renamed
    trash_emptied()
    assert list((cache_dir() / TRASH).iterdir()) == []


def test_a_store_full_as_a_pilot_starts_leaves_nothing_of_the_pilot(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its `running` row cannot be written: the pilot says so and leaves nothing. Its
    worktree, which a thread makes from the pilot's start, is waited for and removed."""
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="noop")])
    store = Store(tiny.seeded(tmp_path / "store"))

    def full(self: Store, run: benchkit.Run) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path / "runs"))

    monkeypatch.setattr(Store, "record_row", full)
    with pytest.raises(StoreError, match="no space left; nothing of it was written"):
        execute_plan(p, store)
    trash_emptied()
    assert list((cache_dir() / "pilots").iterdir()) == []
    assert list((cache_dir() / TRASH).iterdir()) == []
    assert not (store.path / "runs").exists() or list((store.path / "runs").iterdir()) == []
    assert [a.name for a in (store.path / "artifacts").iterdir()] == ["baselines"]


def test_a_cache_too_full_for_a_pilots_folder_says_so_not_the_store(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pilot's folder (in benchkit's cache) cannot be made: the error names it, and
    is not told as the store's."""
    [p] = plan([PilotSpec(bench=str(tiny.bench_dir), arm="noop")])
    store = Store(tiny.seeded(tmp_path / "store"))
    mkdir = Path.mkdir

    def full(self: Path, *args: object, **kwargs: object) -> None:
        if self.parent == cache_dir() / "pilots":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", full)
    with pytest.raises(OSError) as raised:
        execute_plan(p, store)
    assert not isinstance(raised.value, StoreError)
    assert str(cache_dir() / "pilots") in str(raised.value.filename)
    monkeypatch.undo()
    assert not (store.path / "runs").exists() or list((store.path / "runs").iterdir()) == []


def test_the_environments_node_modules_is_never_in_the_arms_diff(tmp_path: Path) -> None:
    """Even when the repository does not ignore it and the arm stages everything."""
    source = tmp_path / "source"
    make_repo(source, {"a.js": "x\n"}, {"a.js": "y\n"}, "human")
    base = sh_git(source, "rev-parse", "main")
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(source), str(mirror)], check=True)
    tree = add_worktree(mirror, base, tmp_path / "tree")
    git_dir = reader(mirror, tmp_path / "git")
    (tree / "node_modules" / "pkg").mkdir(parents=True)
    (tree / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1;\n")
    exclude(git_dir, "node_modules")
    (tree / "a.js").write_text("y\n")
    assert "node_modules" not in diff(git_dir, base, snapshot(tree, git_dir, base))
    sh_git(tree, "add", "-A")  # what an agent commonly does
    patch = diff(git_dir, base, snapshot(tree, git_dir, base))
    assert "node_modules" not in patch and "+y" in patch


WHERE = (  # messages that print the tree's paths whole (pytest's own asserts shorten them)
    "import os\n\n\ndef test_where():\n    raise AssertionError(os.path.abspath('calc.py'))\n\n\n"
    "def test_here():\n    raise AssertionError(f'in {os.getcwd()}')\n"
)
BROKEN = (  # an error at setup: the test could not run
    "import os\n\nimport pytest\n\n\n@pytest.fixture\ndef broken():\n"
    "    raise RuntimeError(os.path.abspath('missing.py'))\n\n\n"
    "def test_broken(broken):\n    pass\n"
)


def test_stored_test_messages_and_notes_name_paths_from_the_tree_not_the_pilots_folder(
    tmp_path: Path,
) -> None:
    """A test's message and a check's note hold the tree's paths as the runner printed
    them; stored, they are the repository's own (`calc.py`, `.`), the same for every
    pilot and at base as after, never a pilot's throwaway folder."""
    from tests.conftest import BASE_FILES, HUMAN_FILES, TINY_BENCH

    repo = tmp_path / "repo"
    make_repo(
        repo, {**BASE_FILES, "test_where.py": WHERE, "test_broken.py": BROKEN}, HUMAN_FILES, "human"
    )
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "bench.toml").write_text(TINY_BENCH.format(repo=repo))
    [first] = benchkit.pilot(str(bench), arm="human", store=tmp_path / "store", sandbox="none")
    [again] = benchkit.pilot(
        str(bench), arm="human", store=tmp_path / "store", trials=2, sandbox="none"
    )
    tests = benchkit.table("tests", tmp_path / "store")
    messages = tests.filter(pl.col("message").is_not_null())
    assert set(messages["phase"]) >= {"base", "after"}
    for text in [
        *messages["message"],
        *benchkit.table("checks", tmp_path / "store")["note"].drop_nulls(),
    ]:
        assert "pilots" not in text and str(tmp_path) not in text, text
    where = messages.filter(pl.col("test") == "test_where")["message"].unique().to_list()
    assert where == ["AssertionError: calc.py"], where
    here = messages.filter(pl.col("test") == "test_here")["message"].unique().to_list()
    assert here == ["AssertionError: in ."], here
    note = first.after("test")
    assert note is not None and note.note is not None
    assert note.note.startswith("1 could not run: test_broken.py: ")
    assert "RuntimeError: missing.py" in note.note
    assert again.run_id != first.run_id
