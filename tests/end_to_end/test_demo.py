"""The bundled demo bench, end to end: what `make demo` shows, and why it can be trusted."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import benchkit
from benchkit.analysis import listing, text
from benchkit.bench.find import find_bench
from benchkit.bench.sites import human_sites, parse_diff
from benchkit.workspace.git import diff
from benchkit.workspace.repository import prepare_repository
from tests.conftest import DEMO, a_cache, with_checks_at_base
from tests.helpers import DEMO_BASE_SHA, DEMO_HUMAN_SHA

pytestmark = pytest.mark.slow

# The demo's commits are built with a fixed author and fixed dates: the same on
# every machine. A change to base/ or human.patch changes them, on purpose.
ARMS = ["human", "noop", "replay:agent-a", "replay:agent-b", "fake-agent"]


@pytest.fixture(scope="module")
def demo_runs(
    tmp_path_factory: pytest.TempPathFactory, shared_environments: Path
) -> Iterator[pl.DataFrame]:
    store = tmp_path_factory.mktemp("demo-store")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        benchkit.pilot("demo", arm=ARMS, store=store, max_cost=0.5)
        yield benchkit.runs(store)


def _store(runs: pl.DataFrame) -> Path:
    """The store the demo's runs were read from: their artifacts' folder's."""
    return Path(str(_row(runs, "noop")["artifacts"])).parent.parent


def _row(runs: pl.DataFrame, arm: str) -> dict[str, object]:
    [row] = runs.filter(pl.col("arm") == arm).to_dicts()
    return row


def test_demo_shas_are_the_same_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two fresh copies of the bench, as two clones would have them, each built in its
    # own cache: same shas, and the pinned ones.
    shas = []
    for n in (1, 2):
        copy = tmp_path / f"clone{n}" / "demo"
        shutil.copytree(DEMO, copy)
        (copy / "base" / "README.md").touch()  # another mtime changes nothing
        monkeypatch.setenv("BENCHKIT_CACHE", str(tmp_path / f"cache{n}"))
        repo = prepare_repository(find_bench(copy))
        shas.append((repo.base_sha, repo.human_sha))
    assert shas[0] == shas[1] == (DEMO_BASE_SHA, DEMO_HUMAN_SHA)


def test_the_human_change_is_big_enough() -> None:
    bench = find_bench("demo")
    repo = prepare_repository(bench)
    sites = human_sites(
        parse_diff(diff(repo.mirror, repo.base_sha, repo.human_sha)), bench.file.sites.exclude
    )
    assert len(sites) >= 12
    assert len({s.file for s in sites}) >= 3
    assert any(s.kind == "insert" for s in sites)
    removals = [
        c
        for c in parse_diff(diff(repo.mirror, repo.base_sha, repo.human_sha))
        for h in c.hunks
        if h.length and not h.new_lines
    ]
    assert removals


def test_the_demo_table(demo_runs: pl.DataFrame) -> None:
    assert sorted(demo_runs["arm"]) == sorted(ARMS)
    assert set(demo_runs["status"]) == {"ok"}
    assert set(demo_runs["base_sha"]) == {DEMO_BASE_SHA}
    human, noop = _row(demo_runs, "human"), _row(demo_runs, "noop")
    a, b = _row(demo_runs, "replay:agent-a"), _row(demo_runs, "replay:agent-b")
    total = human["sites_total"]
    assert total == 15
    assert (human["sites_covered"], human["sites_matched"], human["sites_unrelated"]) == (15, 15, 0)
    assert (noop["sites_covered"], noop["sites_unrelated"]) == (0, 0)
    assert (a["sites_covered"], a["sites_unrelated"]) == (7, 1)  # about half, one unrelated
    assert (b["sites_covered"], b["sites_unrelated"]) == (13, 0)  # most
    assert 0 < a["sites_matched"] < a["sites_covered"]  # type: ignore[operator]
    assert 0 < b["sites_matched"] < b["sites_covered"]  # type: ignore[operator]


def test_the_demo_checks(demo_runs: pl.DataFrame) -> None:
    for arm in ARMS:
        row = _row(demo_runs, arm)
        for check in ("install", "typecheck", "build"):
            assert row[f"{check}_status"] == "ok", (arm, check)
    # One test file fails at base for every arm (the month-end bug).
    assert _row(demo_runs, "noop")["test_count"] == 1
    assert _row(demo_runs, "human")["test_count"] == 1
    # agent-a's run stalls the timing test once on purpose (.flake-once).
    assert _row(demo_runs, "replay:agent-a")["test_count"] == 2
    # agent-b breaks a test that passes at base, and leaves lint findings.
    assert _row(demo_runs, "replay:agent-b")["test_count"] == 2
    assert _row(demo_runs, "replay:agent-b")["lint_status"] == "fail"
    assert _row(demo_runs, "replay:agent-b")["lint_count"] == 2


def test_the_base_checks_fail_one_test_file(demo_runs: pl.DataFrame) -> None:
    store = _store(demo_runs)
    checks = benchkit.table("checks", store)
    base = checks.filter((pl.col("phase") == "base") & (pl.col("check") == "test"))
    assert base["count"].to_list() == [1] * len(ARMS)
    log = Path(base["log_path"][0]).read_text()
    assert "FAILED tests/test_dates.py::test_due_next_month_from_a_month_end" in log
    assert log.count("FAILED") == 1


def test_checks_test_the_worktree_not_a_shadowing_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_runs: pl.DataFrame
) -> None:
    # A base copy of tally on the caller's PYTHONPATH must not hide agent-b's
    # regression: the checks see only the worktree's code.
    shadow = tmp_path / "shadow"
    shutil.copytree(DEMO / "base" / "src", shadow)
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    store = with_checks_at_base(tmp_path / "store", _store(demo_runs))
    checks = ["install", "test"]  # the tests import what install put in .bench/site
    [run] = benchkit.pilot("demo", arm="replay:agent-b", store=store, checks=checks)
    test = run.after("test")
    assert test is not None
    assert (test.status, test.count) == ("fail", 2)
    assert "test_half_cent_rounds_up" in Path(test.log_path).read_text()


def test_the_gate_on_the_demo(demo_runs: pl.DataFrame) -> None:
    for arm in ARMS:
        # the month-end bug fails at base: never charged to any arm
        assert _row(demo_runs, arm)["preexisting_files"] == ["tests/test_dates.py"], arm
    for arm in ("human", "noop"):
        row = _row(demo_runs, arm)
        assert (row["test_verdict"], row["flaky_files"], row["regression_files"]) == (
            "pass",
            [],
            [],
        )
    a = _row(demo_runs, "replay:agent-a")
    assert (a["test_verdict"], a["flaky_files"], a["regressions"]) == (
        "flaky-pass",
        ["tests/test_clock.py"],
        0,
    )
    b = _row(demo_runs, "replay:agent-b")
    assert (b["test_verdict"], b["regression_files"], b["regressions"]) == (
        "fail",
        ["tests/test_tax.py"],
        1,
    )
    first = b["first_failures"][0]  # type: ignore[index]
    assert (first["file"], first["test"]) == ("tests/test_tax.py", "test_half_cent_rounds_up")
    assert "assert" in first["message"]


def test_the_baseline_runs_once(demo_runs: pl.DataFrame) -> None:
    assert demo_runs["baseline_cached"].to_list() == [False, True, True, True, True]
    assert demo_runs["baseline_key"].n_unique() == 1
    first, *later = demo_runs["baseline_s"].to_list()
    assert max(later) < first / 5


def test_the_tests_table(demo_runs: pl.DataFrame) -> None:
    store = _store(demo_runs)
    tests = benchkit.table("tests", store)
    b = _row(demo_runs, "replay:agent-b")["run_id"]
    mine = tests.filter(pl.col("run_id") == b)
    phases = dict(mine.group_by("phase").len().iter_rows())
    assert phases == {"base": 23, "after": 23, "rerun": 4}  # test_tax.py alone: 4 tests
    failing_rerun = mine.filter((pl.col("phase") == "rerun") & (pl.col("outcome") == "failed"))
    assert failing_rerun["test"].to_list() == ["test_half_cent_rounds_up"]


def test_the_demo_command_arm_reports_its_cost(demo_runs: pl.DataFrame) -> None:
    fake = _row(demo_runs, "fake-agent")
    assert (fake["status"], fake["cost_usd"], fake["cost_source"]) == ("ok", 0.0548, "reported")
    assert (fake["sessions"], fake["turns"], fake["executor"]) == (1, 4, "cli")
    assert (fake["sites_covered"], fake["sites_matched"], fake["sites_unrelated"]) == (4, 4, 0)
    assert fake["test_verdict"] == "pass"
    for arm in ("human", "noop", "replay:agent-a", "replay:agent-b"):
        row = _row(demo_runs, arm)
        assert (row["cost_usd"], row["cost_source"]) == (None, "missing")  # never invented


def test_the_pilot_table_of_two_demo_runs(demo_runs: pl.DataFrame) -> None:
    frame = pl.concat(
        [demo_runs.filter(pl.col("arm") == arm) for arm in ("replay:agent-a", "fake-agent")]
    )
    table = str(benchkit.evidence(frame, labels=["agent-a", "fake agent"]))
    header = ["run", "run id", "bench", "base", "arm (executor, model)", "install", "typecheck"]
    header += ["lint", "test", "build", "gate", "flaky files", "sessions", "cost", "wall", "CI"]
    agent_a = ["agent-a", "ID", "demo", "SHA", "replay:agent-a (local)", "ok", "ok", "ok"]
    agent_a += ["fail (2 fail)", "ok", "flaky-pass", "tests/test_clock.py", "-"]
    fake = ["fake agent", "ID", "demo", "SHA", "fake-agent (cli, fake-sonnet)", "ok", "ok", "ok"]
    fake += ["fail (1 fail)", "ok", "pass", "none", "1", "$0.05 on a $0.50 cap"]
    expected = [
        [*header, "coverage vs human"],
        ["---"] * 17,
        [*agent_a, "-", "WALL", "-", "7/15, 1 unrelated, no regressions"],
        [*fake, "WALL", "-", "4/15, 0 unrelated, no regressions"],
    ]
    lines = table.splitlines()
    assert len(lines) == len(expected)
    for line, cells in zip(lines, expected, strict=True):
        got = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(got) == len(cells)
        for have, want in zip(got, cells, strict=True):
            if want == "WALL":
                assert re.fullmatch(r"\d+\.\d s", have), have
            elif want == "ID":
                assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{8}", have), have
            elif want == "SHA":
                assert re.fullmatch(r"[0-9a-f]{10}", have), have
            else:
                assert have == want


def test_the_simulated_agent_is_seeded_and_says_so(tmp_path: Path) -> None:
    """The same figures in two stores, trial by trial. Lint alone is checked, the demo's
    quickest: the simulated figures are the agent's, not the checks'; the second store
    starts from the first's checks at base."""

    def two_trials(store: Path) -> list[benchkit.Run]:
        return benchkit.pilot(
            "demo",
            arm="simulated-agent",
            executor="sdk",
            model="large",
            trials=2,
            checks=["lint"],
            store=store,
        )

    first = two_trials(tmp_path / "a")
    again = two_trials(with_checks_at_base(tmp_path / "b", tmp_path / "a"))
    assert [r.sites_covered for r in first] == [r.sites_covered for r in again]
    assert [r.report.cost_usd for r in first] == [r.report.cost_usd for r in again]
    runs = benchkit.runs(tmp_path / "a")
    assert set(runs["origin"]) == {"simulated"}
    assert set(runs["arm"]) == {"simulated-agent"}
    assert runs["cost_source"].to_list() == ["reported", "reported"]
    assert "lint_status" in runs.columns  # only the checks asked for
    assert not {"install_status", "test_status"} & set(runs.columns)


def _as_printed(rows: list[dict[str, Any]]) -> str:
    """What `print_runs` shows of a store's rows, a row at a time."""
    block = text.tests_block(rows)
    return text.table(rows, every=True) + (f"\n\n{block}" if block else "")


def test_benchkit_runs_lists_a_frame_as_its_rows_whole(demo_runs: pl.DataFrame) -> None:
    """`benchkit runs` makes each column's cells once per distinct value of the fields
    they read (`listing.runs_listing`): the text is that of every row, with every
    column, made a row at a time; flaky, regression, tampered and cost alike, and a
    store whose runs repeat their values, some unjudged, one with fields unset."""
    listed = listing.runs_listing(demo_runs)
    assert listed == _as_printed(demo_runs.to_dicts())
    assert "flaky tests/test_clock.py" in listed  # what the block is made of
    assert "tampered tests/test_report.py (edited)" in listed
    at = pl.int_range(pl.len())
    copies = pl.concat([demo_runs] * 3).with_columns(
        run_id=pl.format("copy-{}", at),
        wall_s=pl.when(at == 5).then(-0.0).otherwise(at / 7),  # -0.0 beside row 0's 0.0
        test_verdict=pl.when(at % 4 == 1).then(None).otherwise("test_verdict"),
        cost_usd=pl.when(at == 2)
        .then(None)
        .when(at == 4)
        .then(-0.0)
        .when(at == 6)
        .then(0.0)
        .otherwise("cost_usd"),
        tampered=pl.when(at == 3).then([]).otherwise("tampered"),
    )
    listed = listing.runs_listing(copies)
    assert listed == _as_printed(copies.to_dicts())
    assert listed.count("copy-") == copies.height
    few = copies.select("run_id", "arm", "status", "test_verdict")  # imported: few columns
    assert listing.runs_listing(few) == _as_printed(few.to_dicts())


class _Reading(dict[str, Any]):
    """A row that keeps the names of the fields read of it."""

    def __init__(self, row: dict[str, Any]) -> None:
        super().__init__(row)
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)


def test_each_cell_of_a_runs_table_reads_only_the_fields_it_names(demo_runs: pl.DataFrame) -> None:
    """A cell made once per distinct value of the fields it names (`text.cell_of`,
    `NAME_READS`, `GATE_READS`, and `COLUMNS_READS` for the columns shown) must read
    no other: else two runs that differ in it would show one cell."""
    rows = demo_runs.to_dicts()
    for column in text.columns(rows, every=True):
        reads, make = text.cell_of(column)
        for row in rows:
            make(reading := _Reading(row))
            assert reading.read <= set(reads), column
    readings = [_Reading(row) for row in rows]
    text.columns(readings)  # the spec columns that vary, as well
    assert set().union(*(r.read for r in readings)) <= set(text.COLUMNS_READS)
    for row in rows:
        text.gate_findings(reading := _Reading(row))
        assert reading.read <= set(text.GATE_READS)
        text.name(reading := _Reading(row), text.SPEC_COLUMNS)
        assert reading.read <= set(text.NAME_READS)
