"""A CSV import reads its file a block at a time: what it says and records is the
same as reading it whole, and its memory does not grow with the file; many imports
are merged into parts as they come, and each, imported again, replaced in its part."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.errors import ImportFileError
from benchkit.store import compaction, imports
from benchkit.store.compaction import AUTO_COMPACT
from benchkit.store.reads import merged_imports
from benchkit.store.words import OUTCOME_RULE

CLI = str(Path(sys.executable).with_name("benchkit"))


def _published(path: Path, rows: int, bad: dict[int, str] | None = None) -> Path:
    """A file of `rows` runs (ci words, an outcome, a cost); `bad`: a row's own line."""
    lines = ["bench,arm,ci,outcome,cost_usd,run_id"]
    for n in range(1, rows + 1):
        outcome = "no: service error" if n % 4 == 0 else "yes"
        ci = "1 pass 0 fail" if n % 2 else "0 pass 1 fail"
        lines.append((bad or {}).get(n, f"b-{n % 3},arm,{ci},{outcome},0.{n % 10},run-{n}"))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imports, "BLOCK", 512)  # a few rows a block


def test_a_file_read_in_many_blocks_is_recorded_as_one(small_blocks: None, tmp_path: Path) -> None:
    path = _published(tmp_path / "many.csv", 400)
    ids = benchkit.import_runs(path, tmp_path / "store")
    assert list(ids) == [f"run-{n}" for n in range(1, 401)]
    assert ids.notes == (
        "ci: the text kept as `ci`, read as ci_status: ok 200, fail 200",
        "outcome: 100 of 400 runs did not succeed, status failed (kind outcome): " + OUTCOME_RULE,
    )
    runs = benchkit.runs(tmp_path / "store")
    assert runs.height == 400 and runs["run_id"].n_unique() == 400
    assert runs.filter(pl.col("status") == "failed").height == 100
    files = list((tmp_path / "store" / "runs").glob("*.parquet"))
    assert len(files) == 1  # one file, whatever the blocks


def test_runs_without_ids_are_numbered_by_their_row_across_blocks(
    small_blocks: None, tmp_path: Path
) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("bench,arm\n" + "".join(f"b,arm-{n}\n" for n in range(1, 301)))
    ids = benchkit.import_runs(path, tmp_path / "store")
    stem = imports.import_name(path)
    assert list(ids) == [f"{stem}-{n}" for n in range(1, 301)]
    runs = benchkit.runs(tmp_path / "store").select("run_id", "arm")
    assert all(r.endswith(f"-{a.removeprefix('arm-')}") for r, a in runs.iter_rows())


def test_bad_cells_in_later_blocks_are_named_by_their_row_and_nothing_is_written(
    small_blocks: None, tmp_path: Path
) -> None:
    path = _published(
        tmp_path / "bad.csv",
        300,
        bad={3: "b,arm,,yes,-1,run-3", 250: "b,arm,,yes,0.1,run-7", 299: "b,arm,,yes,x,run-299"},
    )
    with pytest.raises(ImportFileError) as raised:
        benchkit.import_runs(path, tmp_path / "store")
    said = str(raised.value)
    assert "row 4, cost_usd: negative: -1.0" in said  # the file's rows: the header is row 1
    assert "row 251, run_id: row 8 has it too" in said  # an id given twice, blocks apart
    assert "row 300, cost_usd: not a Float64: 'x'" in said
    assert not tmp_path.joinpath("store").exists()  # a bad first block: no store made
    bad_late = _published(tmp_path / "bad-late.csv", 300, bad={299: "b,arm,,yes,x,run-299"})
    with pytest.raises(ImportFileError, match="row 300, cost_usd: not a Float64"):
        benchkit.import_runs(bad_late, tmp_path / "late")
    # its first blocks were written: the store is made, and holds no file of them, not
    # even the temporary one (the lock an import holds against a merge stays)
    left = sorted(str(p.relative_to(tmp_path / "late")) for p in (tmp_path / "late").rglob("*"))
    assert left == [".compact.lock", ".gitignore", "runs"]


def test_an_import_s_memory_does_not_grow_with_its_file(tmp_path: Path) -> None:
    """A 10 MB file takes a little more memory than a one-row file, not 30 times its
    size (seen: 2,871 MB peak for 10 MB, each row a Python dict of every column)."""
    one = _published(tmp_path / "one.csv", 1)
    big = tmp_path / "big.csv"
    with big.open("w") as file:
        file.write("bench,arm,status,test_verdict,cost_usd,wall_s,trial\n")
        n = 0
        while file.tell() < 10 * 1024 * 1024:
            file.write(f"b-{n % 50},arm-{n % 7},ok,pass,0.{n % 100:02},{n % 600}.5,{n % 5 + 1}\n")
            n += 1

    def peak_mb(path: Path) -> float:
        process = subprocess.Popen(
            [CLI, "import", str(path), "--store", str(tmp_path / path.stem)],
            stdout=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(process.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        return usage.ru_maxrss / 1024

    grown = peak_mb(big) - peak_mb(one)
    assert grown < 200, f"{grown:.0f} MB more for a 10 MB file"
    assert benchkit.runs(tmp_path / "big").height == n


def _one_run(path: Path, n: int, cost: str = "0.1") -> Path:
    path.write_text(f"bench,arm,cost_usd,run_id\nb,arm-{n % 3},{cost},run-{n}\n")
    return path


def test_many_imports_are_merged_as_they_come_and_each_replaced_where_it_went(
    tmp_path: Path,
) -> None:
    """An import past `AUTO_COMPACT` files to merge compacts the store, imports
    included: 150 one-run imports leave far fewer files, every run once; each file
    imported again (corrected) replaces its runs inside the part that merged them; an
    id held by a merged import is named with the part."""
    store = tmp_path / "store"
    files = [_one_run(tmp_path / f"runs-{n}.csv", n) for n in range(150)]
    for path in files:
        benchkit.import_runs(path, store)
    on_disk = list((store / "runs").glob("*.parquet"))
    assert len(on_disk) < AUTO_COMPACT
    parts = [f for f in on_disk if f.name.startswith("part-")]
    assert parts and all(merged_imports(p) for p in parts)
    runs = benchkit.runs(store)
    assert sorted(runs["run_id"]) == sorted(f"run-{n}" for n in range(150))

    corrected = _one_run(files[3], 3, cost="0.9")
    again = benchkit.import_runs(corrected, store)
    assert (list(again), again.replaced) == (["run-3"], True)
    runs = benchkit.runs(store)
    assert runs.height == runs["run_id"].n_unique() == 150
    assert runs.filter(pl.col("run_id") == "run-3")["cost_usd"].to_list() == [0.9]

    other = _one_run(tmp_path / "other.csv", 5)  # run-5, merged from runs-5.csv
    with pytest.raises(ImportFileError, match=r"row 2, run_id: .* run-5 already \(in runs/part-"):
        benchkit.import_runs(other, store)


def test_an_import_merged_but_not_yet_removed_is_read_once(tmp_path: Path) -> None:
    """A compaction stopped between writing its part and removing the files it merged
    leaves an import's file that its part holds: read once, removed by the next."""
    store = tmp_path / "store"
    for n in range(3):
        benchkit.import_runs(_one_run(tmp_path / f"runs-{n}.csv", n), store)
    saved = {f.name: f.read_bytes() for f in (store / "runs").glob("*.parquet")}
    assert benchkit.compact(store)["runs"] == 3
    for name, data in saved.items():
        (store / "runs" / name).write_bytes(data)  # as if never removed
    assert sorted(benchkit.runs(store)["run_id"]) == ["run-0", "run-1", "run-2"]
    benchkit.compact(store)
    assert len(list((store / "runs").glob("*.parquet"))) == 1


def test_a_large_import_stays_a_file_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An import's file past `IMPORT_MERGED_BELOW` reads as fast as a part: never
    merged, nor counted toward a compaction."""
    store = tmp_path / "store"
    for n in range(3):
        benchkit.import_runs(_one_run(tmp_path / f"runs-{n}.csv", 5000 + n), store)
    small = max(f.stat().st_size for f in (store / "runs").glob("*.parquet"))
    monkeypatch.setattr(compaction, "IMPORT_MERGED_BELOW", small + 1)
    big = benchkit.import_runs(_published(tmp_path / "big.csv", 2000), store)
    kept = store / "runs" / f"{imports.import_name(tmp_path / 'big.csv')}.parquet"
    assert kept.stat().st_size > small + 1
    assert benchkit.compact(store)["runs"] == 3
    assert kept.is_file()
    assert benchkit.runs(store).height == len(big) + 3
