"""The serial launcher on real pilots: each pilot's trees made while the one before it
runs its checks (`benchkit.run.spares`), and its record written while the one after it
runs them (`benchkit.run.behind`)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import benchkit
import benchkit.run.baseline
import benchkit.run.pilot
import benchkit.run.record
import benchkit.run.verify
import benchkit.workspace.checks
import benchkit.workspace.git
from benchkit.bench.bench_file import Bench
from benchkit.errors import StoreError
from benchkit.records import PilotSpec
from benchkit.run.behind import Behind
from benchkit.run.events import Event, Planned, Recorded, StageBegun, ignore
from benchkit.run.launcher import Serial
from benchkit.run.pilot import pilots_folder
from benchkit.run.plan import plan
from benchkit.run.spares import SPARE, Spares, Taken, sweep_spares
from benchkit.store.store import Store
from benchkit.workspace.cache import trash_emptied
from benchkit.workspace.checks import CheckRun
from benchkit.workspace.proc import ProcError, Stoppable, capture
from benchkit.workspace.processes import process_start
from benchkit.workspace.repository import Repository
from tests.conftest import TinyRepo
from tests.helpers import PATIENCE_S
from tests.run.test_pilot import Raising

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early


def _plans(tiny: TinyRepo, arms: list[str]) -> list:  # type: ignore[type-arg]
    return plan(
        [PilotSpec(bench=str(tiny.bench_dir), arm=arm, trial=n) for n, arm in enumerate(arms, 1)]
    )


def test_each_pilot_takes_the_trees_made_while_the_one_before_ran(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Kept worktrees tell when they were made: the first pilot's as it started, the
    others' before (while the pilot before them ran its checks). Their runs are what
    pilots that make their own trees record."""
    store = Store(tiny.seeded(tmp_path / "store"))
    launched = Serial().launch(
        _plans(tiny, ["human", "noop", "human"]), store, keep=True, events=ignore
    )
    assert not launched.faults
    first, second, third = launched.runs
    made = [
        (pilots_folder() / r.run_id / "tree" / ".git" / "HEAD").stat().st_mtime
        for r in launched.runs
    ]
    started = [r.started_at.timestamp() for r in launched.runs]
    assert made[0] >= started[0]
    assert made[1] < started[1] and made[2] < started[2]
    assert [r.status for r in launched.runs] == ["ok", "ok", "ok"]
    assert (first.sites_covered, second.sites_covered, third.sites_covered) == (2, 0, 2)
    assert first.gate is not None and third.gate is not None
    assert first.gate.verdict == third.gate.verdict
    assert not [p for p in pilots_folder().iterdir() if p.name.startswith(SPARE)]


def test_an_interrupt_in_the_next_pilot_leaves_the_one_before_recorded(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = Store(tiny.seeded(tmp_path / "store"))
    first, second = _plans(tiny, ["noop", "noop"])
    told: list[str] = []

    def sink(event: Event) -> None:
        if isinstance(event, Recorded):
            told.append(event.run.status)

    with pytest.raises(KeyboardInterrupt):
        Serial().launch(
            [first, replace(second, arm=Raising(KeyboardInterrupt()))],
            store,
            keep=False,
            events=sink,
        )
    runs = benchkit.runs(store.path).sort("trial")
    assert runs["status"].to_list() == ["ok", "interrupted"]
    ok = runs["run_id"][0]
    assert pl.read_parquet(store.path / "tests" / f"{ok}.parquet").height > 0
    assert told == ["ok", "interrupted"]
    assert list(pilots_folder().iterdir()) == []


def _cleanup_said(store: Path, run_id: str) -> str:
    return (store / "artifacts" / run_id / "logs" / "pilot.log").read_text()


def _running_rows_slowed(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Every `running` row written `seconds` late (as by a slow store)."""
    record_row = Store.record_row

    def slow(self: Store, run: benchkit.Run) -> None:
        if run.status == "running":
            time.sleep(seconds)
        record_row(self, run)

    monkeypatch.setattr(Store, "record_row", slow)


def _second_interrupted_and_gone(store: Store) -> None:
    """Two pilots recorded, the first `ok`, the second `interrupted`; no pilot folder left."""
    runs = benchkit.runs(store.path).sort("trial")
    assert runs.select("trial", "status").rows() == [(1, "ok"), (2, "interrupted")]
    trash_emptied()
    assert list(pilots_folder().iterdir()) == []


def _checks_after_counted(
    monkeypatch: pytest.MonkeyPatch, said: list[tuple[str, str]]
) -> list[int]:
    """A list that grows as each pilot's checks after its arm begin, by how much was
    told (`said`) by then."""
    counted: list[int] = []
    run_checks = benchkit.workspace.checks.run_checks

    def counting(bench: Bench, **kwargs: Any) -> tuple[CheckRun, ...]:
        if kwargs["phase"] == "after":
            counted.append(len(said))
        return run_checks(bench, **kwargs)

    monkeypatch.setattr(benchkit.run.verify, "run_checks", counting)
    return counted


def test_each_record_is_written_by_a_thread_and_told_as_the_next_pilot_goes_on(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's record is written by a thread, then its cleanup, beside the next pilot,
    and told at a stage of the next pilot, at the latest as its checks begin (its arm
    only applies a patch, see the next test); the last
    pilot's at once. Each run's phases still sum to its wall time, its record phase the
    writing's own time; every pilot's folder is gone as the launch ends."""
    store = Store(tiny.seeded(tmp_path / "store"))
    said: list[tuple[str, str]] = []  # (stage or "recorded", run id), in the order told

    def sink(event: Event) -> None:
        if isinstance(event, Recorded):
            said.append(("recorded", event.run.run_id))
        elif isinstance(event, StageBegun):
            said.append((event.stage, event.run_id))

    checked = _checks_after_counted(monkeypatch, said)
    launched = Serial().launch(
        _plans(tiny, ["human", "noop", "human"]), store, keep=False, events=sink
    )
    assert not launched.faults
    a, b, c = ids = [r.run_id for r in launched.runs]
    assert [r.spec.trial for r in launched.runs] == [1, 2, 3]
    assert [i for what, i in said if what == "recorded"] == ids
    for before, n in ((a, 1), (b, 2)):
        told = said.index(("recorded", before))  # at a stage of the next, its checks' at last
        assert said.index(("cleanup", before)) < told < checked[n]
    assert said[-1] == ("recorded", c)
    rows = benchkit.runs(store.path).sort("trial")
    assert rows.select("run_id", "status").rows() == [(i, "ok") for i in ids]
    beside = "by the record's thread" if rows["sandbox"][0] != "none" else "written by a thread"
    for held in (a, b):  # a copy of the environment (no sandbox) is checked on the path
        assert beside in _cleanup_said(store.path, held)
    assert "after the record" in _cleanup_said(store.path, c)
    assert not [i for i in ids if (pilots_folder() / i).exists()]
    for row in rows.iter_rows(named=True):
        parts = [row[f"{p}_s"] for p in ("start", "prepare", "environment", "baseline")]
        parts += [row[f"{p}_s"] for p in ("execute", "verify", "score", "record")]
        assert row["record_s"] > 0 and row["wall_s"] == pytest.approx(sum(parts), abs=1e-3)
    assert [r.wall_s for r in launched.runs] == pytest.approx(rows["wall_s"].to_list())
    assert all(r.phases["record"] > 0 for r in launched.runs)  # the runs as written
    assert not list((store.path / "heartbeats").glob("*.json"))  # each stopped once written


def test_a_record_written_slowly_is_told_before_a_tools_arm_and_an_instant_arms_checks(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each record written slowly: a command arm (a tool) begins once the run before is
    told; an arm that only applies a patch (`human`) begins at once, and its checks
    wait for it."""
    store = Store(tiny.seeded(tmp_path / "store"))
    record_row = Store.record_row
    third_arm = threading.Event()  # the third pilot's arm begun

    def slow(self: Store, run: benchkit.Run) -> None:
        if run.status != "running" and run.spec.trial == 1:
            time.sleep(0.5)  # the tool's pilot reaches its arm meanwhile: it waits
        if run.status != "running" and run.spec.trial == 2:
            third_arm.wait(PATIENCE_S)  # written once the third pilot's arm has begun
        record_row(self, run)

    monkeypatch.setattr(Store, "record_row", slow)
    tool = tmp_path / "tool.toml"
    tool.write_text('name = "tool"\ndescription = "changes nothing"\ncommand = ["true"]\n')
    said: list[tuple[str, str]] = []

    def sink(event: Event) -> None:
        if isinstance(event, Recorded):
            said.append(("recorded", event.run.run_id))
        elif isinstance(event, StageBegun):
            said.append((event.stage, event.run_id))
            if event.stage == "execute" and event.label.endswith("#3"):
                third_arm.set()

    checked = _checks_after_counted(monkeypatch, said)
    launched = Serial().launch(
        _plans(tiny, ["human", str(tool), "human"]), store, keep=False, events=sink
    )
    assert not launched.faults
    a, b, c = [r.run_id for r in launched.runs]
    assert said.index(("recorded", a)) < said.index(("execute", b))  # the tool's arm waits
    assert said.index(("execute", c)) < said.index(("recorded", b)) < checked[2]


@pytest.mark.parametrize("failing", [1, 2])  # a run written behind, the last at once
def test_a_sink_that_fails_on_a_run_loses_no_run(
    tiny: TinyRepo, tmp_path: Path, failing: int
) -> None:
    store = Store(tiny.seeded(tmp_path / "store"))
    told: list[int] = []

    def sink(event: Event) -> None:
        if isinstance(event, Recorded):
            told.append(event.run.spec.trial)
            if event.run.spec.trial == failing:
                raise RuntimeError("the sink's own fault")

    launched = Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=sink)
    assert [str(f) for f in launched.faults] == ["the sink's own fault"]
    assert told == [1, 2] and [r.spec.trial for r in launched.runs] == [1, 2]
    assert benchkit.runs(store.path)["status"].to_list() == ["ok", "ok"]


def test_a_cleanup_that_fails_in_the_records_thread_is_a_fault_and_its_run_is_told(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """The record's thread cleans up once it wrote a record: what the cleanup raises is
    kept as a fault of its own, and the run written is told all the same."""
    store = Store(tiny.seeded(tmp_path / "store"))
    [run] = Serial().launch(_plans(tiny, ["noop"]), store, keep=False, events=ignore).runs
    told: list[Event] = []
    ended: list[str] = []
    behind = Behind(told.append)

    def cleanup() -> None:
        ended.append("cleanup")
        raise OSError("the cleanup's own fault")

    behind.hold(lambda: run, then=lambda: ended.append("then"), after=cleanup)
    behind.settle()
    assert [str(f) for f in behind.faults] == ["the cleanup's own fault"]
    assert ended == ["cleanup", "then"]
    assert [e.run.run_id for e in told if isinstance(e, Recorded)] == [run.run_id]


def test_telling_a_run_is_no_phase_of_the_next_pilots(tiny: TinyRepo, tmp_path: Path) -> None:
    """A sink that takes its time over the first run (told during the second pilot):
    the second pilot's phases, and its wall time, leave that time out."""
    store = Store(tiny.seeded(tmp_path / "store"))
    slept: list[float] = []
    told_at: dict[int, float] = {}

    def sink(event: Event) -> None:
        if isinstance(event, Recorded):
            if event.run.spec.trial == 1:
                began = time.monotonic()
                time.sleep(1.0)
                slept.append(time.monotonic() - began)
            told_at[event.run.spec.trial] = time.time()

    launched = Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=sink)
    assert not launched.faults
    second = launched.runs[1]
    elapsed = told_at[2] - second.started_at.timestamp()  # its start until it was told
    assert second.wall_s < elapsed - 0.9 * slept[0]
    assert second.wall_s == pytest.approx(sum(second.phases.values()))


def test_a_record_that_cannot_be_written_is_a_fault_and_the_others_go_on(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """The first pilot's detail tables cannot be written (the store's `checks` folder
    is a file from its score to the second pilot's arm, which begins once the first's
    record was tried, by the thread that writes it): none of them is kept,
    its `running` row stays (a crashed run, once its benchkit is gone), its heartbeat
    stops, and the error is handed back; the second and third pilots are recorded."""
    store = Store(tiny.seeded(tmp_path / "store"))
    checks = store.path / "checks"
    trials: dict[str, int] = {}

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun) and event.run_id not in trials:  # its first
            trials[event.run_id] = len(trials) + 1
        if isinstance(event, StageBegun) and (trials[event.run_id], event.stage) == (1, "score"):
            shutil.rmtree(checks, ignore_errors=True)
            checks.write_text("not a folder")
        elif isinstance(event, StageBegun) and (trials[event.run_id], event.stage) == (
            2,
            "execute",
        ):
            checks.unlink()

    launched = Serial().launch(
        _plans(tiny, ["noop", "noop", "noop"]), store, keep=False, events=sink
    )
    [fault] = launched.faults
    assert isinstance(fault, OSError) and str(checks) in str(fault)
    assert [r.spec.trial for r in launched.runs] == [2, 3]
    first = next(i for i, n in trials.items() if n == 1)
    rows = benchkit.runs(store.path).sort("trial")
    assert rows.select("trial", "status").rows() == [(1, "running"), (2, "ok"), (3, "ok")]
    for table in ("sites", "tests", "checks"):
        assert not (store.path / table / f"{first}.parquet").exists()
    assert not list((store.path / "heartbeats").glob("*.json"))


@pytest.mark.parametrize(
    ("room", "shared"),
    [(True, True), (False, True), (False, False)],
    ids=["room made", "still full", "still full, the pilots elsewhere"],
)
def test_a_store_full_as_a_pilot_starts_fails_it_before_its_arm(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: bool, shared: bool
) -> None:
    """The first pilot's `running` row, written by a thread, finds the store full: the
    pilot stops before its arm (its first command: the checks at base are read). Its
    record is written once its
    logs make room; else nothing of it is (its logs neither), it is a fault, and its
    folder goes all the same (where the pilots' folders are on another file system than
    the store's, making room leaves it). The others go on."""
    store = Store(tiny.seeded(tmp_path / "store"))
    record_row = Store.record_row
    if not shared:

        def logs_only(pilot: object) -> str:
            shutil.rmtree(pilot.artifacts, ignore_errors=True)  # type: ignore[attr-defined]
            return "its logs"

        monkeypatch.setattr(benchkit.run.record, "room_made", logs_only)

    def full(self: Store, run: benchkit.Run) -> None:
        if run.spec.trial == 1 and (run.status == "running" or not room):
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path / "runs"))
        record_row(self, run)

    monkeypatch.setattr(Store, "record_row", full)
    stages: list[tuple[str, str]] = []

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun):
            stages.append((event.run_id, event.stage))

    launched = Serial().launch(_plans(tiny, ["human", "noop"]), store, keep=False, events=sink)
    first = stages[0][0]
    assert (first, "execute") not in stages and (first, "score") in stages
    rows = benchkit.runs(store.path).sort("trial")
    if room:
        assert not launched.faults
        assert rows.select("trial", "status", "failure_kind").rows() == [
            (1, "failed", "disk"),
            (2, "ok", None),
        ]
        assert rows["execute_s"][0] is None  # its arm never ran
    else:
        [fault] = launched.faults
        assert isinstance(fault, StoreError) and "nothing of it was written" in str(fault)
        assert rows.select("trial", "status").rows() == [(2, "ok")]
    assert [r.spec.trial for r in launched.runs] == ([1, 2] if room else [2])
    trash_emptied()
    assert list(pilots_folder().iterdir()) == []
    kept = {a.name for a in (store.path / "artifacts").iterdir()} - {"baselines"}
    assert len(kept) == (2 if room else 1)  # the run's logs, if it was recorded
    assert not list((store.path / "heartbeats").glob("*.json"))


def test_a_running_row_that_cannot_be_written_leaves_nothing_of_its_pilot(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No row can be written (the `runs` folder refused): each pilot fails before its
    checks, is a fault of its own, and leaves nothing: no folder, no logs, no heartbeat."""
    store = Store(tiny.seeded(tmp_path / "store"))

    def refused(self: Store, run: benchkit.Run) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self.path / "runs"))

    monkeypatch.setattr(Store, "record_row", refused)
    stages: list[str] = []

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun):
            stages.append(event.stage)

    launched = Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=sink)
    assert [type(f) for f in launched.faults] == [PermissionError, PermissionError]
    assert not launched.runs and "execute" not in stages
    trash_emptied()
    assert list(pilots_folder().iterdir()) == []
    assert [a.name for a in (store.path / "artifacts").iterdir()] == ["baselines"]
    assert not list((store.path / "heartbeats").glob("*.json"))


def test_a_pilot_interrupted_as_its_spare_is_made_stops_the_checkout_as_its_own(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second pilot's spare is made by a command that would work for half an hour
    (a checkout, say); that pilot, interrupted before its trees are made, stops it at
    once: the spare's commands are its own."""
    store = Store(tiny.seeded(tmp_path / "store"))
    trees = benchkit.run.pilot._trees

    def slow(
        repo: Repository,
        folder: Path,
        making: Stoppable,
        together: bool = False,
        *,
        clean: bool = True,
    ) -> None:
        if folder.name.startswith(SPARE):
            folder.mkdir(parents=True)
            capture(["sleep", str(PATIENCE_S)], within=making, timeout_s=PATIENCE_S)
        trees(repo, folder, making, together, clean=clean)

    monkeypatch.setattr(benchkit.run.pilot, "_trees", slow)
    seen: list[str] = []
    interrupted: list[float] = []

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun) and event.run_id not in seen:
            seen.append(event.run_id)
            if len(seen) == 2:
                interrupted.append(time.monotonic())
                raise KeyboardInterrupt  # as the second pilot's first stage begins

    with pytest.raises(KeyboardInterrupt):
        Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=sink)
    assert time.monotonic() - interrupted[0] < PATIENCE_S / 10  # not once the command ended
    _second_interrupted_and_gone(store)


def _checks_at_base_counted(monkeypatch: pytest.MonkeyPatch, store: Path) -> list[int]:
    """A list that grows as checks at base begin, by the number of runs' rows the
    store holds then."""
    counted: list[int] = []
    run_checks = benchkit.workspace.checks.run_checks

    def counting(bench: Bench, **kwargs: Any) -> tuple[CheckRun, ...]:
        counted.append(len(list((store / "runs").glob("*.parquet"))))
        return run_checks(bench, **kwargs)

    monkeypatch.setattr(benchkit.run.baseline, "run_checks", counting)
    return counted


def test_each_running_row_stands_as_its_pilots_first_command_in_its_sandbox_begins(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However slowly the thread writes a pilot's `running` row, the pilot's first
    command in its sandbox waits for it: its checks at base (the first pilot's), else
    its arm (the second's reads them from the cache). A benchkit killed then leaves a
    row that recovery finds (with the folder and the process groups to clean)."""
    store = Store(tmp_path / "store")  # no checks at base kept: the first pilot runs them
    _running_rows_slowed(monkeypatch, 0.3)
    at_base = _checks_at_base_counted(monkeypatch, store.path)
    rows_then: dict[str, bool] = {}

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun) and event.stage == "execute":
            rows_then[event.run_id] = (store.path / "runs" / f"{event.run_id}.parquet").exists()

    launched = Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=sink)
    assert not launched.faults and len(rows_then) == 2
    assert all(rows_then.values())
    assert at_base == [1]  # the first pilot's row, and the checks at base run once


def test_an_interrupt_as_a_pilot_takes_its_spare_leaves_nothing_behind(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C that comes as the second pilot takes the spare made for it waits until
    the spare is that pilot's: it is recorded as interrupted, and its folder goes."""
    store = Store(tiny.seeded(tmp_path / "store"))
    take = Spares.take

    def interrupted(self: Spares, repo: Repository, folder: Path) -> Taken | None:
        taken = take(self, repo, folder)
        if taken is not None:
            signal.raise_signal(signal.SIGINT)  # the moment after it is handed on
        return taken

    monkeypatch.setattr(Spares, "take", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=ignore)
    _second_interrupted_and_gone(store)


def test_a_pilot_interrupted_before_its_running_row_is_written_is_recorded_over_it(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread writes the `running` row slowly; the pilot is interrupted at its first
    stage: its record is written once the row is, never under it."""
    store = Store(tiny.seeded(tmp_path / "store"))
    _running_rows_slowed(monkeypatch, 0.5)

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun) and event.stage == "prepare":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Serial().launch(_plans(tiny, ["noop", "noop"]), store, keep=False, events=sink)
    Behind(ignore).running_row(lambda: None).result()  # whatever the thread had to write, written
    assert benchkit.runs(store.path).select("trial", "status").rows() == [(1, "interrupted")]


def test_a_spare_made_for_another_base_is_stopped_not_waited_for(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as executor:
        spares, ended = _being_made(tmp_path, executor)
        other = replace(_repo(tmp_path), base_sha="b" * 40)
        assert spares.take(other, tmp_path / "pilots" / "2") is None  # the pilot makes its own
        discarded = executor.submit(lambda: None)  # after the thread discarded it
        assert discarded.result(timeout=PATIENCE_S / 2) is None  # not once the sleep ended
    assert ended == ["stopped"]  # its checkout stopped
    trash_emptied()
    assert list((tmp_path / "pilots").iterdir()) == []


def test_a_matrix_begins_its_first_pilots_trees_as_it_reads_the_store(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """As the matrix is told planned (its store read, its units claimed), the first
    pilot's trees are being made in a spare folder, which that pilot takes."""
    seen: list[list[str]] = []

    def sink(event: Event) -> None:
        if isinstance(event, Planned):
            deadline = time.monotonic() + PATIENCE_S
            while not (spares := list(pilots_folder().glob(f"{SPARE}*"))):
                assert time.monotonic() < deadline, "no spare made as the store was read"
                time.sleep(0.01)
            seen.append([p.name for p in spares])

    runs = benchkit.pilot(
        str(tiny.bench_dir),
        arm=["noop"],
        trials=2,
        store=tiny.seeded(tmp_path / "store"),
        sandbox="none",
        events=sink,
    )
    assert len(seen) == 1 and len(seen[0]) == 1
    assert [r.status for r in runs] == ["ok", "ok"]
    assert list(pilots_folder().iterdir()) == []  # taken, then removed with its pilot


def test_the_first_pilots_two_trees_are_made_side_by_side(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trees a pilot waits for (the first one's, begun as the store is read) are
    checked out at the same time, each with its sandbox's folders: two checkouts that
    wait for each other meet; one after the other, they never would."""
    add_worktree = benchkit.workspace.git.add_worktree
    meet = threading.Barrier(2, timeout=PATIENCE_S)
    threads: set[str] = set()

    def met(mirror: Path, sha: str, where: Path, *, within: Stoppable | None = None) -> Path:
        threads.add(threading.current_thread().name)
        meet.wait()  # BrokenBarrierError after PATIENCE_S when made one after the other
        return add_worktree(mirror, sha, where, within=within)

    monkeypatch.setattr(benchkit.run.pilot, "add_worktree", met)
    [p] = _plans(tiny, ["noop"])
    folder = tmp_path / "spare"
    benchkit.run.pilot._trees(p.repository, folder, Stoppable(), True)
    assert len(threads) == 2
    made = ["git", "home", "tmp", "tree", "verify", "verify-home", "verify-tmp"]
    assert sorted(path.name for path in folder.iterdir()) == made


def _repo(tmp_path: Path) -> Repository:
    """A repository as a plan names it; no git is run on it here."""
    return Repository(mirror=tmp_path / "m.git", base_sha="a" * 40, human_sha="c" * 40)


def _trees(made: list[str], fails: bool = False):  # type: ignore[no-untyped-def]
    def trees(repo: Repository, folder: Path, making: Stoppable, together: bool) -> None:
        (folder / "tree").mkdir(parents=True)
        made.append(repo.base_sha)
        if fails:
            raise OSError("no room")

    return trees


def test_a_spare_for_another_base_or_one_that_failed_is_not_taken(tmp_path: Path) -> None:
    a = _repo(tmp_path)
    b = replace(a, base_sha="b" * 40)
    made: list[str] = []
    with ThreadPoolExecutor(1) as executor:
        spares = Spares(
            [a, b, a], trees=_trees(made), folder=tmp_path / "pilots", executor=executor
        )
        assert spares.take(a, tmp_path / "pilots" / "1") is None  # the first: none made
        spares.make_next()  # for b
        assert spares.take(a, tmp_path / "pilots" / "2") is None  # made for b: not a's
        spares.make_next()  # for a
        taken = spares.take(a, tmp_path / "pilots" / "3")
        assert taken is not None and taken.moved.result()
        assert (tmp_path / "pilots" / "3" / "tree").is_dir()
        spares.drop()
        failing = Spares(
            [a, a], trees=_trees(made, fails=True), folder=tmp_path / "pilots", executor=executor
        )
        assert failing.take(a, tmp_path / "pilots" / "4") is None
        failing.make_next()
        taken = failing.take(a, tmp_path / "pilots" / "4")
        assert taken is not None and not taken.moved.result()  # the pilot makes its own
    assert made == ["b" * 40, "a" * 40, "a" * 40]
    trash_emptied()
    assert sorted(p.name for p in (tmp_path / "pilots").iterdir()) == ["3"]


def _being_made(tmp_path: Path, executor: ThreadPoolExecutor) -> tuple[Spares, list[str]]:
    """Spares whose second is being made by a real command (as git's checkout would
    be), begun; and what became of that command."""
    a = _repo(tmp_path)
    begun = threading.Event()
    ended: list[str] = []

    def slow(repo: Repository, folder: Path, making: Stoppable, together: bool) -> None:
        folder.mkdir(parents=True)
        begun.set()
        try:
            capture(["sleep", str(PATIENCE_S)], within=making)
            ended.append("finished")
        except ProcError:
            ended.append("stopped")
            raise

    spares = Spares([a, a], trees=slow, folder=tmp_path / "pilots", executor=executor)
    spares.take(a, tmp_path / "pilots" / "1")
    spares.make_next()
    assert begun.wait(timeout=PATIENCE_S)
    return spares, ended


def test_a_spare_being_made_is_stopped_and_discarded_by_drop(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as executor:
        spares, ended = _being_made(tmp_path, executor)
        spares.drop()
        assert ended == ["stopped"]  # at once: its checkout stopped, not waited for
    trash_emptied()
    assert list((tmp_path / "pilots").iterdir()) == []


def test_a_spare_taken_while_it_is_made_is_stopped_with_its_pilot(tmp_path: Path) -> None:
    """A pilot takes its spare without waiting for it; interrupted, it stops the spare's
    checkout as its own (`Taken.making`): the spare is then discarded, not moved."""
    with ThreadPoolExecutor(1) as executor:
        spares, ended = _being_made(tmp_path, executor)
        taken = spares.take(_repo(tmp_path), tmp_path / "pilots" / "2")
        assert taken is not None and not taken.moved.done()  # taken, not waited for
        taken.making.stop()  # as the interrupted pilot does
        assert not taken.moved.result(timeout=PATIENCE_S / 2)  # not once the sleep ended
        spares.drop()  # as the launcher does, as the interrupt passes: nothing left to it
    assert ended == ["stopped"]
    trash_emptied()
    assert list((tmp_path / "pilots").iterdir()) == []


def test_spares_a_killed_benchkit_left_are_swept(tmp_path: Path) -> None:
    """A spare of a process that is gone is discarded; one of a live process stays."""
    folder = tmp_path / "pilots"
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    dead = folder / f"{SPARE}{gone.stdout.strip()}-1-0123456789ab"
    live = folder / f"{SPARE}{os.getpid()}-{process_start(os.getpid())}-0123456789ab"
    for spare in (dead, live):
        (spare / "tree").mkdir(parents=True)
    assert sweep_spares(folder) == 1
    trash_emptied()
    assert sorted(p.name for p in folder.iterdir()) == [live.name]
