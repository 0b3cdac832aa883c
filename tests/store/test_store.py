"""The Parquet store: atomic files, every reader, corrupt files skipped, parallel writers."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import benchkit
from benchkit.errors import StoreWarning
from benchkit.run.events import Recorded, StageBegun
from benchkit.run.launch import _compacting
from benchkit.store import reads
from benchkit.store.compaction import AUTO_COMPACT, LOOK_EVERY
from benchkit.store.parquet import update_run, write_arrow
from benchkit.store.reads import SCAN_AT_ONCE, read_table
from benchkit.store.schema import (
    RUN_COLUMNS,
    SCHEMA_VERSION,
    TABLES,
    arrow_schema,
    table_columns,
    table_schema,
)
from benchkit.store.store import Store
from tests.conftest import TinyRepo, a_cache, tiny_repo
from tests.helpers import PATIENCE_S, benchkit_cli, benchkit_in_process

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early


def test_every_column_is_declared_once_with_a_meaning() -> None:
    for columns in TABLES.values():
        names = [c.name for c in columns]
        assert len(names) == len(set(names))
        assert all(c.doc for c in columns)
        assert names[0].endswith("_id") and names[1] == "schema_version"
    required = [
        "run_id",
        "schema_version",
        "bench",
        "arm",
        "executor",
        "model",
        "max_cost",
        "trial",
        "status",
        "failure_kind",
        "base_sha",
        "human_sha",
        "benchkit_version",
        "started_at",
        "wall_s",
        "sites_total",
        "sites_covered",
        "sites_matched",
        "sites_unrelated",
        "files_recall",
        "files_precision",
    ]
    assert set(required) <= {c.name for c in RUN_COLUMNS}


def test_the_store_reads_in_pyarrow_polars_pandas_and_duckdb(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    benchkit.pilot(str(tiny.bench_dir), arm=["human", "noop"], store=tiny.seeded(tmp_path))
    files = sorted((tmp_path / "runs").glob("*.parquet"))
    assert len(files) == 2
    assert not list(tmp_path.rglob("*.tmp"))

    arrow = pq.read_table(tmp_path / "runs")
    # every declared type: pyarrow's (a run's own file keeps polars' large strings and
    # lists in the footer), polars' exactly
    declared = arrow_schema("runs", ["lint", "test"])
    assert [(f.name, _plain(f.type)) for f in arrow.schema] == [(f.name, f.type) for f in declared]
    assert pl.read_parquet_schema(files[0]) == table_schema("runs", ["lint", "test"])
    for table in ("checks", "tests", "sites"):
        read = pq.read_table(tmp_path / table).schema
        want = [(f.name, f.type) for f in arrow_schema(table)]
        assert [(f.name, _plain(f.type)) for f in read] == want, table
    assert set(arrow.column("schema_version").to_pylist()) == {SCHEMA_VERSION}

    polars = pl.read_parquet(tmp_path / "runs" / "*.parquet")
    assert sorted(polars["arm"]) == ["human", "noop"]

    pandas = pd.read_parquet(tmp_path / "runs")
    assert sorted(pandas["sites_covered"]) == [0, 2]
    assert list(pandas["lint_status"]) == ["ok", "ok"]

    runs_glob = str(tmp_path / "runs" / "*.parquet")
    sites_glob = str(tmp_path / "sites" / "*.parquet")
    relation = duckdb.sql(
        f"select r.arm, count(*) filter (where s.covered) as covered "
        f"from '{runs_glob}' r join '{sites_glob}' s using (run_id) group by r.arm order by r.arm"
    )
    assert relation is not None
    rows = relation.fetchall()
    assert rows == [("human", 2), ("noop", 0)]

    api = benchkit.runs(tmp_path)
    assert isinstance(api, pl.DataFrame)
    assert isinstance(api.to_pandas(), pd.DataFrame)

    benchkit.compact(tmp_path)  # the parts: the same types, from Parquet's own
    for table in ("runs", "checks", "tests", "sites"):
        [part] = (tmp_path / table).glob("part-*.parquet")
        checks = ["lint", "test"] if table == "runs" else []
        read = [(f.name, f.type) for f in pq.read_table(part).schema]
        assert read == [(f.name, f.type) for f in arrow_schema(table, checks)], table
    assert benchkit.runs(tmp_path).sort("run_id").equals(api.sort("run_id"))


def _plain(kind: pa.DataType) -> pa.DataType:
    """An Arrow type with its large strings and lists as the plain ones."""
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_list(kind) or pa.types.is_list(kind):
        return pa.list_(_plain(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([(f.name, _plain(f.type)) for f in kind])
    return kind


@pytest.mark.parametrize("garbage", [b"", b"PAR1 not really parquet", b"\x00" * 100])
def test_a_corrupt_file_is_skipped_with_a_warning_naming_it(
    tiny: TinyRepo, tmp_path: Path, garbage: bytes
) -> None:
    benchkit.pilot(str(tiny.bench_dir), arm="noop", store=tiny.seeded(tmp_path))
    bad = tmp_path / "runs" / "20990101T000000-deadbeef.parquet"
    bad.write_bytes(garbage)
    with pytest.warns(StoreWarning, match=r"skipped .*20990101T000000-deadbeef\.parquet"):
        frame = benchkit.runs(tmp_path)
    assert frame.height == 1


def test_a_scan_again_reads_no_footer_again_and_sees_each_file_that_changed(
    tiny: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook scans a store again and again: files read before, every one whole
    and no row stray, are not read again; a file rewritten (here made garbage) or a
    new one is."""
    benchkit.pilot(str(tiny.bench_dir), arm="noop", store=tiny.seeded(tmp_path))
    read: list[list[Path]] = []
    footers_of = reads.footers_of

    def counted(files: list[Path]) -> reads.Footers:
        read.append(files)
        return footers_of(files)

    monkeypatch.setattr(reads, "footers_of", counted)
    assert benchkit.scan(store=tmp_path).collect().height == 1
    assert len(read) == 1
    assert benchkit.scan(store=tmp_path).collect().height == 1
    assert len(read) == 1
    benchkit.pilot(str(tiny.bench_dir), arm="human", store=tmp_path)
    assert benchkit.scan(store=tmp_path).collect().height == 2
    assert len(read) == 2
    (first,) = read[0]
    first.write_bytes(b"PAR1 not really parquet")
    with pytest.warns(StoreWarning, match=rf"skipped .*{re.escape(first.name)}"):
        assert benchkit.scan(store=tmp_path).collect().height == 1
    assert len(read) == 3
    assert benchkit.scan(store=tmp_path).collect().height == 1  # one unreadable: not kept
    assert len(read) == 4


def test_an_empty_store_has_the_declared_columns(tmp_path: Path) -> None:
    frame = read_table(tmp_path / "nothing", "runs")
    assert frame.is_empty()
    assert frame.columns == [c.name for c in RUN_COLUMNS]


def test_a_run_with_no_row_in_a_table_leaves_no_file_there(tiny: TinyRepo, tmp_path: Path) -> None:
    """A noop pilot has no session, commit nor CI run: it writes its runs, checks, tests
    and sites files and no other, and the tables it left out read as empty, with their
    columns."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path), sandbox="none")
    [run_id] = benchkit.runs(tmp_path)["run_id"]
    held = {p.parent.name for p in tmp_path.glob(f"*/{run_id}.parquet")}
    assert held == {"runs", "checks", "tests", "sites"}
    for table in ("sessions", "commits", "ci"):
        frame = benchkit.table(table, tmp_path)
        assert frame.is_empty() and frame.columns == list(table_schema(table)), table


def test_two_matrices_write_and_compact_one_store_at_once(tiny: TinyRepo, tmp_path: Path) -> None:
    """Two commands' matrices at once on a store one run short of `AUTO_COMPACT` files
    a table: each compacts as it goes and as it ends (one passing while the other
    merges), and no run is lost or doubled, nor any of its rows."""
    store = tmp_path / "shared"
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(store), sandbox="none")
    ids = [f"20260101T0000{n:02d}-{n:08x}" for n in range(AUTO_COMPACT - 1)]
    for table in ("runs", "checks", "tests", "sites"):  # noop's: no session, commit nor CI run
        _copies(store, table, ids)
    before = {"sites": benchkit.table("sites", store).height}
    env = {**os.environ, "BENCHKIT_STORE": str(store)}
    command = [sys.executable, "-m", "benchkit.cli", "pilot", "--bench", str(tiny.bench_dir)]
    command += ["--arm", "human", "--arm", "noop", "--quiet"]
    procs = [  # two sets: each runs both units
        subprocess.Popen(
            [*command, "--set", name], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for name in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=PATIENCE_S)
        assert proc.returncode == 0, err.decode()
    frame = benchkit.runs(store)
    assert frame.height == frame["run_id"].n_unique() == AUTO_COMPACT + 4
    assert sorted(frame.filter(pl.col("run_set") != "default")["arm"]) == [
        "human",
        "human",
        "noop",
        "noop",
    ]
    checks = benchkit.table("checks", store)
    assert checks.select("run_id", "phase", "check").n_unique() == checks.height  # none twice
    assert set(checks["run_id"]) == set(frame["run_id"])  # every run's, none lost
    assert benchkit.table("sites", store).height == before["sites"] + 8
    for table in ("runs", "checks", "sites"):
        loose = [f for f in (store / table).glob("*.parquet") if not f.name.startswith("part-")]
        assert len(loose) < AUTO_COMPACT, table
        assert list((store / table).glob("part-*.parquet")), table  # compacted meanwhile
    assert not list(store.rglob("*.tmp"))


def test_a_matrix_compacts_as_it_goes(tiny: TinyRepo, tmp_path: Path) -> None:
    """The store one run short of `AUTO_COMPACT` files a table: the matrix's first
    recorded run makes it due, and its second pilot finds the store compacted by the
    time its arm begins (when the record before is told at the latest; at `prepare` it
    may still be being written, by a thread, on a busy machine)."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path), sandbox="none")
    ids = [f"20260101T0000{n:02d}-{n:08x}" for n in range(AUTO_COMPACT - 2)]
    for table in ("runs", "checks"):
        _copies(tmp_path, table, ids)
    seen: list[int] = []

    def parts(event: object) -> None:
        if isinstance(event, StageBegun) and event.stage == "execute":
            seen.append(len(list((tmp_path / "runs").glob("part-*.parquet"))))

    benchkit.pilot(
        str(tiny.bench_dir),
        arm=["noop"],
        trials=2,
        run_set="m",
        store=tmp_path,
        sandbox="none",
        events=parts,
    )
    assert seen == [0, 1]
    assert benchkit.runs(tmp_path).height == AUTO_COMPACT + 1


def test_a_matrix_looks_at_the_store_again_once_a_table_may_be_full(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A look says how many more files the fullest table has room for; the matrix's
    sink looks as its first run is recorded, then not until that many more are (a
    recorded run adds a table one file at most), nor more than `LOOK_EVERY` later
    (what other writers add), and compacts at that look."""
    run = benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path))[0]
    store = Store(tmp_path)

    def loose() -> int:
        return len([f for f in (tmp_path / "runs").glob("*.parquet") if f.name[0] != "p"])

    def ids(day: int, n: int) -> list[str]:
        return [f"202601{day:02d}T0000{k:02d}-{k:08x}" for k in range(n)]

    source = tmp_path / "a-run.parquet"  # outside the store: its rows, copied as others'
    shutil.copy(tmp_path / "runs" / f"{run.run_id}.parquet", source)
    tell = _compacting(store)
    tell(Recorded(run=run))  # the first: a look, room for 63, the next in LOOK_EVERY
    _copies(tmp_path, "runs", ids(1, AUTO_COMPACT), source)  # others', due now
    for _ in range(LOOK_EVERY - 1):
        tell(Recorded(run=run))
    assert loose() == AUTO_COMPACT + 1
    tell(Recorded(run=run))
    assert loose() == 0  # merged at the LOOK_EVERY-th
    _copies(tmp_path, "runs", ids(2, AUTO_COMPACT - 3), source)
    assert store.compact_when_due() == 3
    tell(Recorded(run=run))  # a look after a compaction: room for 3, the next in 3
    _copies(tmp_path, "runs", ids(3, 3), source)
    tell(Recorded(run=run))
    tell(Recorded(run=run))
    assert loose() == AUTO_COMPACT
    tell(Recorded(run=run))
    assert loose() == 0
    assert benchkit.runs(tmp_path).height == 2 * AUTO_COMPACT + 1


def test_two_processes_on_one_set_share_its_units_and_run_none_twice(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tmp_path / "shared"
    command = [sys.executable, "-m", "benchkit.cli", "pilot", "--bench", str(tiny.bench_dir)]
    command += ["--arm", "human", "--arm", "noop", "--trials", "3", "--set", "s"]
    command += ["--sandbox", "none", "--quiet", "--store", str(store)]
    procs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=PATIENCE_S)
        assert proc.returncode == 0, err.decode()
    frame = benchkit.runs(store)
    assert frame.height == 6  # each of the six units once, whoever ran it
    assert frame.select("arm", "trial").n_unique() == 6
    assert not list((store / "claims").rglob("*.json"))  # every claim released


def test_compaction_keeps_every_row_and_reads_once(tiny: TinyRepo, tmp_path: Path) -> None:
    benchkit.pilot(str(tiny.bench_dir), arm=["human", "noop", "noop"], store=tiny.seeded(tmp_path))
    before = {t: benchkit.table(t, tmp_path).sort(pl.all()) for t in ("runs", "checks", "tests")}
    merged = benchkit.compact(tmp_path)
    assert merged["runs"] == 3 and merged["checks"] == 3
    assert [f.name[:5] for f in (tmp_path / "runs").glob("*.parquet")] == ["part-"]
    for table, frame in before.items():
        assert benchkit.table(table, tmp_path).sort(pl.all()).equals(frame), table
    # A compaction stopped before it removed a merged file: that file is not read twice,
    # and the next compaction removes it.
    run_id = before["runs"]["run_id"][0]
    leftover = tmp_path / "checks" / f"{run_id}.parquet"
    pq.write_table(
        pa.Table.from_pylist(before["checks"].filter(pl.col("run_id") == run_id).to_dicts()),
        leftover,
    )
    assert benchkit.table("checks", tmp_path).height == before["checks"].height
    benchkit.compact(tmp_path)
    assert not leftover.exists()


def test_a_read_of_many_loose_runs_writes_nothing_and_a_compaction_merges_them(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Past AUTO_COMPACT finished runs' own files, a read reads them and writes
    nothing, even with no compaction under way; `benchkit compact` merges the finished
    ones into one part (a running run stays loose), the same rows read after, and a
    second compaction doubles nothing."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path))
    [path] = (tmp_path / "runs").glob("*.parquet")
    row = pq.read_table(path)
    ids = [f"20260101T0000{n:02d}-{n:08x}" for n in range(AUTO_COMPACT + 6)]
    for n, run_id in enumerate(ids):
        copy = row.set_column(row.schema.get_field_index("run_id"), "run_id", pa.array([run_id]))
        if n == 0:
            copy = copy.set_column(
                copy.schema.get_field_index("status"), "status", pa.array(["running"])
            )
        pq.write_table(copy, tmp_path / "runs" / f"{run_id}.parquet")
    before = read_table(tmp_path, "runs").sort("run_id")
    assert before.height == AUTO_COMPACT + 7
    listed = sorted(os.listdir(tmp_path / "runs"))
    assert benchkit.runs(tmp_path).sort("run_id").equals(before)
    assert benchkit.scan(store=tmp_path).collect().sort("run_id").equals(before)
    assert sorted(os.listdir(tmp_path / "runs")) == listed  # a read wrote nothing
    checks = benchkit.table("checks", tmp_path)
    benchkit.compact(tmp_path)
    loose = sorted(f.stem for f in (tmp_path / "runs").glob("*.parquet"))
    assert loose[0] == ids[0] and loose[1].startswith("part-") and len(loose) == 2
    assert benchkit.runs(tmp_path).sort("run_id").equals(before)  # from the part
    benchkit.compact(tmp_path)
    assert benchkit.runs(tmp_path).sort("run_id").equals(before)  # nothing twice
    assert benchkit.table("checks", tmp_path).equals(checks)
    # the parts, as plain pyarrow reads them: every declared type, from Parquet's own
    declared = [(f.name, f.type) for f in arrow_schema("runs", ["lint", "test"])]
    for part in sorted((tmp_path / "runs").glob("part-*.parquet")):
        assert [(f.name, f.type) for f in pq.read_schema(part)] == declared, part.name


def _copies(store: Path, table: str, ids: list[str], source: Path | None = None) -> None:
    """The one run's file of a table (or `source`), copied under other run ids, as
    pilots leave them."""
    [path] = [source] if source else (store / table).glob("*.parquet")
    rows = pq.read_table(path)
    where = rows.schema.get_field_index("run_id")
    for run_id in ids:
        copy = rows.set_column(where, "run_id", pa.array([run_id] * rows.num_rows))
        pq.write_table(copy, store / table / f"{run_id}.parquet")


def test_a_lazy_scan_of_many_loose_files_reads_them_at_once_and_skips_a_bad_one(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Past SCAN_AT_ONCE runs' own files, `bk.scan` reads them in one scan, not footer
    by footer: the same rows as a read, nothing written, a corrupt file still skipped
    with a warning naming it, the filters still applied."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path))
    ids = [f"20260101T0000{n:02d}-{n:08x}" for n in range(SCAN_AT_ONCE + 6)]
    for table in ("runs", "checks"):
        _copies(tmp_path, table, ids)
    runs = read_table(tmp_path, "runs").sort("run_id")
    order = ["run_id", "phase", "check"]
    checks = read_table(tmp_path, "checks").sort(order)
    assert runs.height == SCAN_AT_ONCE + 7 and checks.height > runs.height

    scanned = benchkit.scan(store=tmp_path).collect().sort("run_id")
    assert scanned.equals(runs)
    assert not list((tmp_path / "runs").glob("part-*"))  # a scan merges nothing
    benchkit.compact(tmp_path)
    assert benchkit.scan(store=tmp_path).collect().sort("run_id").equals(runs)  # the part
    assert benchkit.scan("checks", tmp_path).collect().sort(order).equals(checks)

    bad = tmp_path / "checks" / "20990101T000000-deadbeef.parquet"
    bad.write_bytes(b"PAR1 not really parquet")
    with pytest.warns(StoreWarning, match=r"skipped .*20990101T000000-deadbeef\.parquet"):
        again = benchkit.scan("checks", tmp_path, arm="noop").collect()
    assert again.sort(order).equals(checks)
    assert benchkit.scan("checks", tmp_path, arm="human").collect().height == 0


def test_a_file_a_part_holds_is_read_once_when_parts_have_other_columns(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A later part holds a check the first does not (a second bench's): the runs a
    part holds are still known, so a file a stopped merge left is not read twice."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path))
    [path] = (tmp_path / "runs").glob("*.parquet")
    row = pq.read_table(path)
    first = [f"20260101T0000{n:02d}-{n:08x}" for n in range(AUTO_COMPACT + 1)]
    _copies(tmp_path, "runs", first)
    benchkit.compact(tmp_path)  # the first part
    assert benchkit.runs(tmp_path).height == AUTO_COMPACT + 2
    more = row.append_column("mypy_status", pa.array(["ok"])).append_column(
        "mypy_count", pa.array([0], pa.int64())
    )
    for n in range(AUTO_COMPACT + 1):
        run_id = f"20260102T0000{n:02d}-{n:08x}"
        copy = more.set_column(more.schema.get_field_index("run_id"), "run_id", pa.array([run_id]))
        write_arrow(tmp_path, "runs", run_id, copy)
    benchkit.compact(tmp_path)  # the second part
    assert benchkit.runs(tmp_path).height == 2 * AUTO_COMPACT + 3
    parts = sorted((tmp_path / "runs").glob("part-*.parquet"))
    assert sorted("mypy_status" in pq.read_schema(part).names for part in parts) == [False, True]
    pq.write_table(row, path)  # left by a merge that stopped before removing it
    runs = benchkit.runs(tmp_path)
    assert runs.height == runs["run_id"].n_unique() == 2 * AUTO_COMPACT + 3
    assert benchkit.scan(store=tmp_path).collect().height == 2 * AUTO_COMPACT + 3
    benchkit.compact(tmp_path)
    assert benchkit.runs(tmp_path).height == 2 * AUTO_COMPACT + 3


def _without_root_reads() -> None:
    """In the child, before it runs its program: root's power to read any file gone
    (CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped from its bounding set)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_file_this_user_cannot_read_is_skipped_by_a_scan_and_a_read(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A store shared by a lab: a file another user wrote for themselves only is
    skipped with a warning naming it, by the scan of many files as by the read."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path))
    ids = [f"20260101T0000{n:02d}-{n:08x}" for n in range(SCAN_AT_ONCE + 6)]
    _copies(tmp_path, "checks", ids)
    everything = read_table(tmp_path, "checks").height
    hidden = tmp_path / "checks" / f"{ids[5]}.parquet"
    lost = pq.read_table(hidden).num_rows
    hidden.chmod(0)
    code = (
        "import sys, benchkit; store = sys.argv[1]; "
        "print(benchkit.scan('checks', store).collect().height, "
        "benchkit.table('checks', store).height)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        preexec_fn=_without_root_reads if os.geteuid() == 0 else None,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(everything - lost)] * 2
    assert re.search(rf"skipped .*{ids[5]}\.parquet", done.stderr), done.stderr


def test_a_read_survives_a_merge_under_it(tiny: TinyRepo, tmp_path: Path) -> None:
    """A compaction merges the files a read listed: the read lists them again."""
    benchkit.pilot(str(tiny.bench_dir), arm=["noop"], store=tiny.seeded(tmp_path))
    [path] = (tmp_path / "runs").glob("*.parquet")
    row = pq.read_table(path)
    for n in range(AUTO_COMPACT + 6):
        run_id = f"20260101T0000{n:02d}-{n:08x}"
        copy = row.set_column(row.schema.get_field_index("run_id"), "run_id", pa.array([run_id]))
        pq.write_table(copy, tmp_path / "runs" / f"{run_id}.parquet")
    heights: list[int] = []
    faults: list[BaseException] = []

    def read_on() -> None:
        try:
            for _ in range(40):
                heights.append(read_table(tmp_path, "runs").height)
        except BaseException as exc:
            faults.append(exc)

    reader = threading.Thread(target=read_on)
    reader.start()
    time.sleep(0.05)
    benchkit.compact(tmp_path)
    reader.join()
    assert faults == [] and set(heights) == {AUTO_COMPACT + 7}
    assert len(list((tmp_path / "runs").glob("*.parquet"))) == 1


def test_a_running_run_is_not_compacted(tiny: TinyRepo, tmp_path: Path) -> None:
    benchkit.pilot(str(tiny.bench_dir), arm=["noop", "noop"], store=tiny.seeded(tmp_path))
    [first, _] = benchkit.runs(tmp_path)["run_id"].to_list()
    update_run(tmp_path, first, {"status": "running"})
    merged = benchkit.compact(
        tmp_path,
    )
    assert merged["runs"] == 0  # one finished run alone is not worth a part
    assert (tmp_path / "runs" / f"{first}.parquet").exists()


def _cli(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    """The command on `store`, in this process: what it says and its exit status."""
    return benchkit_in_process(*args, "--store", str(store))


def _process(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    """The command on `store` as a process of its own, which warns of a file skipped
    whether or not this one has (benchkit warns of a file once a process)."""
    return benchkit_cli(*args, "--store", str(store))


def test_a_file_of_the_wrong_schema_is_skipped_once_by_reads_and_compaction(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    benchkit.pilot(str(tiny.bench_dir), arm=["noop", "noop"], store=tiny.seeded(tmp_path))
    wrong = tmp_path / "runs" / "20990101T000000-wrongtyp.parquet"
    pq.write_table(pa.table({"run_id": ["x"], "status": [3], "trial": ["one"]}), wrong)
    corrupt = tmp_path / "checks" / "20990101T000000-corrupt0.parquet"
    corrupt.write_bytes(b"PAR1 not really parquet")
    done = _process("runs", store=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len([line for line in done.stdout.splitlines() if line[:8].isdigit()]) == 2
    warned = [line for line in done.stderr.splitlines() if "wrongtyp" in line]
    assert len(warned) == 1 and "skipped" in warned[0]  # one warning, not one per read
    compacted = _process("compact", store=tmp_path)
    assert compacted.returncode == 0, compacted.stderr
    assert "runs: 2 files" in compacted.stdout and "checks: 2 files" in compacted.stdout
    assert wrong.exists() and corrupt.exists()  # left as they were, not merged or lost
    with pytest.warns(StoreWarning, match="wrongtyp"):
        assert benchkit.runs(tmp_path).height == 2


def _newer_file(runs: Path, versions: tuple[int, ...] = (99,)) -> Path:
    """A runs file as a newer benchkit would write it: the first run's row, under a
    new id, of schema `versions` (one row each; a current one and 99: a newer part)."""
    [own] = sorted(runs.glob("2*.parquet"))[:1]
    row = pq.read_table(own)
    where = row.schema.get_field_index("schema_version")
    rows = []
    for n, version in enumerate(versions):
        copy = row.set_column(where, "schema_version", pa.array([version], pa.int32()))
        rows.append(copy.set_column(0, "run_id", pa.array([f"20990101T000002-newer99{n}"])))
    name = "part-20990101T000002-newer" if len(versions) > 1 else "20990101T000002-newer990"
    path = runs / f"{name}.parquet"
    pq.write_table(pa.concat_tables(rows), path)
    return path


@pytest.mark.parametrize("loose", [1, SCAN_AT_ONCE + 2])
def test_a_file_of_another_table_or_of_no_table_is_no_run(
    tiny: TinyRepo, tmp_path: Path, loose: int
) -> None:
    """A `sites` file copied into `runs/`, a Parquet file of someone else's, and a file
    written by a newer benchkit (schema 99) are not read as runs with empty columns:
    each is skipped with a warning that names it and says why; the runs all read."""
    benchkit.pilot(str(tiny.bench_dir), arm="noop", store=tiny.seeded(tmp_path))
    _copies(tmp_path, "runs", [f"20260101T0000{n:02d}-{n:08x}" for n in range(loose - 1)])
    runs = tmp_path / "runs"
    [sites] = (tmp_path / "sites").glob("*.parquet")
    shutil.copy(sites, runs / "20990101T000000-sitesrow.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), runs / "20990101T000001-foreignf.parquet")
    _newer_file(runs)
    with pytest.warns(StoreWarning) as warned:
        frame = benchkit.runs(tmp_path)
    assert frame.height == loose
    assert frame["status"].null_count() == 0 and frame["run_id"].null_count() == 0
    said = sorted(str(w.message) for w in warned)
    assert len(said) == 3, said
    assert "sitesrow" in said[0] and "not a runs file" in said[0] and "'site'" in said[0]
    assert "foreignf" in said[1] and "not a runs file: no column 'run_id'" in said[1]
    assert "newer990" in said[2] and "schema version 99" in said[2] and "newer" in said[2]
    scanned = benchkit.scan(store=tmp_path).collect()  # warned once a process: no warning
    assert scanned.sort("run_id").equals(frame.sort("run_id"))
    done = _process("runs", store=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line[:8].isdigit()] != []
    assert len([line for line in done.stderr.splitlines() if "skipped" in line]) == 3


def test_a_newer_benchkits_file_among_many_is_neither_read_nor_merged(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Read in one scan and compacted, the runs' own files leave out a newer schema's
    file: named in a warning, not in the part, and still where it was."""
    benchkit.pilot(str(tiny.bench_dir), arm="noop", store=tiny.seeded(tmp_path))
    _copies(tmp_path, "runs", [f"20260101T0000{n:02d}-{n:08x}" for n in range(AUTO_COMPACT + 1)])
    runs = tmp_path / "runs"
    _newer_file(runs)
    with pytest.warns(StoreWarning, match=r"newer990\.parquet: 1 row of schema version 99, newer"):
        frame = benchkit.runs(tmp_path)
    assert frame.height == AUTO_COMPACT + 2
    assert "20990101T000002-newer990" not in frame["run_id"].to_list()
    benchkit.compact(tmp_path)  # nor merged, nor lost, by a compaction
    [part] = runs.glob("part-*.parquet")
    assert pq.read_table(part).num_rows == AUTO_COMPACT + 2
    assert (runs / "20990101T000002-newer990.parquet").exists()
    assert benchkit.runs(tmp_path).height == AUTO_COMPACT + 2


@pytest.mark.parametrize("loose", [1, SCAN_AT_ONCE + 2])
def test_a_part_of_a_newer_benchkit_gives_its_current_rows_to_every_read(
    tiny: TinyRepo, tmp_path: Path, loose: int
) -> None:
    """A part a newer benchkit merged holds a current row and a row of schema 99: a
    read in one scan, a lazy scan and a read footer by footer (a corrupt file beside
    it) all take the first and leave out the second, saying so."""
    benchkit.pilot(str(tiny.bench_dir), arm="noop", store=tiny.seeded(tmp_path))
    _copies(tmp_path, "runs", [f"20260101T0000{n:02d}-{n:08x}" for n in range(loose - 1)])
    part = _newer_file(tmp_path / "runs", versions=(SCHEMA_VERSION, 99))
    with pytest.warns(StoreWarning, match=rf"{part.name}: 1 row of schema version 99"):
        read = benchkit.runs(tmp_path).sort("run_id")
    assert read.height == loose + 1 and read["schema_version"].to_list() == [SCHEMA_VERSION] * (
        loose + 1
    )
    scanned = benchkit.scan(store=tmp_path).collect().sort("run_id")
    assert scanned.equals(read)
    (tmp_path / "runs" / "20990101T000000-corrupt0.parquet").write_bytes(b"PAR1 nope")
    with pytest.warns(StoreWarning, match="corrupt0"):
        slow = read_table(tmp_path, "runs").sort("run_id")
    assert slow.select(read.columns).equals(read)


def _as_file(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.write_text("not a folder\n")


def _as_folder(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


BROKEN: dict[str, tuple[Callable[[Path], None], str]] = {  # how, and where it is said
    "runs is a file": (lambda s: _as_file(s / "runs"), "runs"),
    "heartbeats is a file": (lambda s: _as_file(s / "heartbeats"), "heartbeats"),
    "artifacts is a file": (lambda s: _as_file(s / "artifacts"), "artifacts"),
    "a baseline table is a file": (
        lambda s: _as_file(s / "baselines" / "checks"),
        "baselines/checks",
    ),
    "the checks note is a folder": (lambda s: _as_folder(s / "runs" / ".checks"), "runs/.checks"),
    "the compaction lock is a folder": (lambda s: _as_folder(s / ".compact.lock"), ".compact.lock"),
}


@pytest.fixture(scope="module")
def noop_store(
    tmp_path_factory: pytest.TempPathFactory, shared_environments: Path
) -> tuple[TinyRepo, Path]:
    """The tiny bench and a store of one `noop` run on it, made once for the module:
    a test that breaks or changes the store does so in a copy of its own."""
    folder = tmp_path_factory.mktemp("noop-store")
    tiny = tiny_repo(folder)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, shared_environments)))
        benchkit.pilot(str(tiny.bench_dir), arm="noop", store=folder / "store")
    return tiny, folder / "store"


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_store_of_a_broken_layout_is_one_line_naming_the_place(
    noop_store: tuple[TinyRepo, Path], tmp_path: Path, broken: str
) -> None:
    """A store folder whose table, heartbeats or artifacts are a file, or whose files
    benchkit keeps are folders: every command says where, in one line, exit 2, and a
    pilot writes nothing."""
    tiny, made = noop_store
    store = tmp_path / "store"
    shutil.copytree(made, store, symlinks=True)
    breaking, where = BROKEN[broken]
    breaking(store)
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    pilot = ("pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--set", "other")
    for command in (("runs",), ("status",), ("compact",), ("compare",), pilot):
        done = _cli(*command, store=store)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.startswith(f"benchkit: {store / where}: "), (command, done.stderr)
        assert len(done.stderr.splitlines()) == 1, (command, done.stderr)
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_a_checks_note_that_is_not_text_is_read_past(
    noop_store: tuple[TinyRepo, Path], tmp_path: Path
) -> None:
    """The note of the checks a store's runs files hold is a help to reads: bytes that
    are not UTF-8 in it, or lines that name no check, are passed over."""
    tiny, made = noop_store
    store = tmp_path / "store"
    shutil.copytree(made, store, symlinks=True)
    note = store / "runs" / ".checks"
    note.write_bytes(b"\xff\xfe garbage\n" + note.read_bytes() + b"not a check!\n")
    for command in (("runs",), ("compact",)):
        done = _cli(*command, store=store)
        assert done.returncode == 0, (command, done.stderr)
    done = _cli("pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--set", "b", store=store)
    assert done.returncode == 0, done.stderr
    assert benchkit.runs(store).height == 2


def test_a_plot_of_no_runs_or_to_no_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = _cli("plot", "wall", "--out", str(tmp_path / "w.png"), store=tmp_path / "empty")
    assert (done.returncode, done.stderr) == (
        2,
        "benchkit: plot wall: no runs to plot: the selection is empty\n",
    )
    csv = tmp_path / "runs.csv"
    csv.write_text("bench,arm,wall_s\nb,a,1.5\nb,a,2.5\n")
    assert _cli("import", str(csv), store=tmp_path / "s").returncode == 0
    out = tmp_path / "no" / "such" / "folder" / "w.png"
    done = _cli("plot", "wall", "--out", str(out), store=tmp_path / "s")
    assert done.returncode == 2 and done.stderr.startswith(f"benchkit: {out}: --out: ")
    assert len(done.stderr.splitlines()) == 1
    text = tmp_path / "w.txt"  # a name matplotlib cannot save: was a traceback
    done = _cli("plot", "wall", "--out", str(text), store=tmp_path / "s")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"benchkit: {text}: --out: not an image file name (")
    assert len(done.stderr.splitlines()) == 1 and not text.exists()


def test_a_store_reads_in_one_scan_and_a_check_never_noted_still_reads(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    benchkit.pilot(
        str(tiny.bench_dir), arm=["human", "noop"], store=tiny.seeded(tmp_path), sandbox="none"
    )
    note = tmp_path / "runs" / ".checks"
    assert note.read_text().split() == ["lint", "test"]  # written beside the runs files
    fast = benchkit.runs(tmp_path)
    note.unlink()  # as a store written before the note was
    slow = benchkit.runs(tmp_path)
    assert slow.equals(fast) and {"lint_status", "test_count"} <= set(slow.columns)
    assert not note.exists()  # a read writes nothing
    benchkit.compact(tmp_path)  # a write notes the checks of what it writes
    assert note.read_text().split() == ["lint", "test"]
    assert benchkit.runs(tmp_path).equals(fast)


def test_wall_time_is_the_whole_pilot_and_its_phases_sum_to_it(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    before = datetime.now(UTC)
    [run] = benchkit.pilot(
        str(tiny.bench_dir), arm="human", store=tiny.seeded(tmp_path), sandbox="none"
    )
    after = datetime.now(UTC)
    row = benchkit.runs(tmp_path).row(0, named=True)
    phases = ["start", "prepare", "environment", "baseline", "execute", "verify", "score"]
    parts = [row[f"{p}_s"] for p in [*phases, "record"]]
    assert all(p is not None and p >= 0 for p in parts) and row["record_s"] > 0
    assert row["wall_s"] == pytest.approx(sum(parts), abs=1e-3)
    assert row["wall_s"] <= (after - before).total_seconds()  # from its start to its record
    log = (tmp_path / "artifacts" / run.run_id / "logs" / "pilot.log").read_text()
    assert re.fullmatch(r"cleanup: \d+\.\d{3} s after the record\n", log)


def test_a_stores_files_take_the_users_umask_not_owner_only(tiny: TinyRepo, tmp_path: Path) -> None:
    """A store a lab shares: its files read for the group and others as the umask lets
    them (0640 under umask 027), as any file the user makes, not mkstemp's 0600."""
    store = tmp_path / "store"
    code = (
        "import os, sys, benchkit; os.umask(0o027); "
        "benchkit.pilot(sys.argv[1], arm='noop', store=sys.argv[2])"
    )
    subprocess.run([sys.executable, "-c", code, str(tiny.bench_dir), str(store)], check=True)
    files = [p for p in store.rglob("*.parquet")]
    assert len(files) >= 5
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {"0o640"}


def test_the_a_b_and_probe_tables_compact_too(tmp_path: Path) -> None:
    """An A/B's rows, a probe's: written whole, once, so merged as they are."""
    for table in ("ab", "probes"):
        schema = table_schema(table)
        key = table_columns(table)[0].name
        for n in range(3):
            row = dict.fromkeys(schema) | {key: f"x{n}", "schema_version": 1}
            write_arrow(tmp_path, table, f"x{n}", pl.DataFrame([row], schema=schema).to_arrow())
    merged = benchkit.compact(tmp_path)
    assert (merged["ab"], merged["probes"]) == (3, 3)
    for table in ("ab", "probes"):
        assert [f.name[:5] for f in (tmp_path / table).glob("*.parquet")] == ["part-"]
        assert sorted(benchkit.table(table, tmp_path)[table_columns(table)[0].name]) == [
            "x0",
            "x1",
            "x2",
        ]
