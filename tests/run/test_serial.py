"""The serial launcher on real pilots: each pilot's trees made while the one before it
runs its checks (`benchkit.run.spares`)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.records import PilotSpec
from benchkit.run.events import Event, Recorded, ignore
from benchkit.run.launcher import Serial
from benchkit.run.pilot import pilots_folder
from benchkit.run.plan import plan
from benchkit.run.spares import SPARE, Spares, sweep_spares
from benchkit.store.store import Store
from benchkit.workspace.cache import trash_emptied
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


def _repo(tmp_path: Path) -> Repository:
    """A repository as a plan names it; no git is run on it here."""
    return Repository(mirror=tmp_path / "m.git", base_sha="a" * 40, human_sha="c" * 40)


def _trees(made: list[str], fails: bool = False):  # type: ignore[no-untyped-def]
    def trees(repo: Repository, folder: Path, making: Stoppable) -> None:
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
        assert not spares.take(a, tmp_path / "pilots" / "1")  # the first: none made
        spares.make_next()  # for b
        assert not spares.take(a, tmp_path / "pilots" / "2")  # made for b: not a's
        spares.make_next()  # for a
        assert spares.take(a, tmp_path / "pilots" / "3")
        assert (tmp_path / "pilots" / "3" / "tree").is_dir()
        spares.drop()
        failing = Spares(
            [a, a], trees=_trees(made, fails=True), folder=tmp_path / "pilots", executor=executor
        )
        assert not failing.take(a, tmp_path / "pilots" / "4")
        failing.make_next()
        assert not failing.take(a, tmp_path / "pilots" / "4")
    assert made == ["b" * 40, "a" * 40, "a" * 40]
    trash_emptied()
    assert sorted(p.name for p in (tmp_path / "pilots").iterdir()) == ["3"]


def _being_made(tmp_path: Path, executor: ThreadPoolExecutor) -> tuple[Spares, list[str]]:
    """Spares whose second is being made by a real command (as git's checkout would
    be), begun; and what became of that command."""
    a = _repo(tmp_path)
    begun = threading.Event()
    ended: list[str] = []

    def slow(repo: Repository, folder: Path, making: Stoppable) -> None:
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


def test_an_interrupt_while_a_pilot_waits_for_its_spare_leaves_it_to_drop(
    tmp_path: Path,
) -> None:
    with ThreadPoolExecutor(1) as executor:
        spares, ended = _being_made(tmp_path, executor)
        main = threading.main_thread().ident or 0
        timer = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT))  # Ctrl-C
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            spares.take(_repo(tmp_path), tmp_path / "pilots" / "2")
        timer.join()
        spares.drop()  # as the launcher does, as the interrupt passes
        assert ended == ["stopped"]  # at once: its checkout stopped, not waited for
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
