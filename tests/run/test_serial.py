"""The serial launcher on real pilots: each pilot's trees made while the one before it
runs (`benchkit.run.spares`), and its record written while the next one starts
(`benchkit.run.behind`)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.records import PilotSpec
from benchkit.run.events import Event, Recorded, StageBegun, ignore
from benchkit.run.launcher import Serial
from benchkit.run.pilot import pilots_folder
from benchkit.run.plan import plan
from benchkit.run.spares import SPARE, Spares
from benchkit.store.store import Store
from benchkit.workspace.cache import trash_emptied
from benchkit.workspace.proc import Stoppable
from benchkit.workspace.repository import Repository
from tests.conftest import TinyRepo
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


def test_a_run_is_told_once_its_record_is_written_while_the_next_pilot_starts(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Each run is told `Recorded` once it is whole in the store (its row and its
    detail tables), in the order the pilots ran; the next pilot has begun by then,
    but for the last."""
    store = Store(tiny.seeded(tmp_path / "store"))
    seen: list[tuple[str, str]] = []
    whole: list[bool] = []

    def sink(event: Event) -> None:
        if isinstance(event, StageBegun) and event.stage == "prepare":
            seen.append(("start", event.run_id))
        if isinstance(event, Recorded):
            seen.append(("recorded", event.run.run_id))
            runs = benchkit.runs(store.path).filter(pl.col("run_id") == event.run.run_id)
            tests = pl.read_parquet(store.path / "tests" / f"{event.run.run_id}.parquet")
            whole.append(runs["status"].to_list() == ["ok"] and tests.height > 0)

    launched = Serial().launch(
        _plans(tiny, ["noop", "human", "noop"]), store, keep=False, events=sink
    )
    ids = [r.run_id for r in launched.runs]
    assert whole == [True, True, True]
    assert [e for e in seen if e[0] == "recorded"] == [("recorded", i) for i in ids]
    assert seen.index(("start", ids[1])) < seen.index(("recorded", ids[0]))
    assert seen.index(("start", ids[2])) < seen.index(("recorded", ids[1]))
    assert list(pilots_folder().iterdir()) == []


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
    assert sorted(told) == ["interrupted", "ok"]
    assert list(pilots_folder().iterdir()) == []


def _trees(made: list[str], fails: bool = False):  # type: ignore[no-untyped-def]
    def trees(repo: Repository, folder: Path, making: Stoppable) -> None:
        (folder / "tree").mkdir(parents=True)
        made.append(repo.base_sha)
        if fails:
            raise OSError("no room")

    return trees


def test_a_spare_for_another_base_or_one_that_failed_is_not_taken(tmp_path: Path) -> None:
    a = Repository(mirror=tmp_path / "m.git", base_sha="a" * 40, human_sha="c" * 40)
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


def test_a_spare_being_made_is_stopped_and_discarded_by_drop(tmp_path: Path) -> None:
    a = Repository(mirror=tmp_path / "m.git", base_sha="a" * 40, human_sha="c" * 40)
    begun, release = threading.Event(), threading.Event()

    def slow(repo: Repository, folder: Path, making: Stoppable) -> None:
        folder.mkdir(parents=True)
        begun.set()
        release.wait(timeout=60)

    with ThreadPoolExecutor(1) as executor:
        spares = Spares([a, a], trees=slow, folder=tmp_path / "pilots", executor=executor)
        spares.take(a, tmp_path / "pilots" / "1")
        spares.make_next()
        assert begun.wait(timeout=60)
        release.set()
        spares.drop()
    trash_emptied()
    assert list((tmp_path / "pilots").iterdir()) == []
