"""Compaction: the runs' own files merged into one file per table, for fast reads.

Only finished runs are merged (a `running` run's files are still being written).
The merged part is written atomically first, then the merged files are removed; a
stop in between leaves files that readers skip and the next compaction removes.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from benchkit.store.layout import COMPACT_LOCK, PART, all_files, part_name
from benchkit.store.parquet import write_arrow
from benchkit.store.reads import (
    compacted_ids,
    declared_schema,
    read_arrow,
    read_at_once,
    read_table,
    readable,
    stray_files,
    stray_rows,
)
from benchkit.store.schema import TABLES

AUTO_COMPACT = 64  # runs' own files in a store past which a pilot command compacts it


def compact(store: Path, *, least: int = 2) -> dict[str, int]:
    """Merge the runs' own files into one part per table (reads get fast); the number
    of files merged per table. `benchkit pilot` does it past 64 runs' own files."""
    store.mkdir(parents=True, exist_ok=True)
    merged: dict[str, int] = {}
    with open(store / COMPACT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one compaction at a time
        runs = read_table(store, "runs")
        finished = set(runs.filter(pl.col("status") != "running")["run_id"].to_list())
        for table in TABLES:
            everything = all_files(store, table)
            held = compacted_ids([f for f in everything if f.name.startswith(PART)])
            own = [f for f in everything if not f.name.startswith(PART)]
            for leftover in [f for f in own if f.stem in held]:
                leftover.unlink(missing_ok=True)  # merged before, not removed then
            candidates = [f for f in own if f.stem in finished and f.stem not in held]
            merged[table] = 0
            if len(candidates) < max(least, 1):
                continue
            read = _read_already(runs, candidates) if table == "runs" else None
            files, combined = read or _combined(store, table, candidates)
            if combined is None or len(files) < least:
                continue
            write_arrow(store, table, part_name(), combined)
            for f in files:
                f.unlink(missing_ok=True)
            merged[table] = len(files)
    return merged


def _read_already(runs: pl.DataFrame, candidates: list[Path]) -> tuple[list[Path], pa.Table] | None:
    """The candidates' rows from the runs table the compaction read first (a run's own
    file holds its one row): one read of the table, not two. None when a candidate's
    row is not there once (read the files then)."""
    ids = [f.stem for f in candidates]
    chosen = runs.filter(pl.col("run_id").is_in(ids))
    if chosen.height != len(ids) or chosen["run_id"].n_unique() != len(ids):
        return None
    return candidates, chosen.to_arrow()


def _combined(
    store: Path, table: str, candidates: list[Path]
) -> tuple[list[Path], pa.Table | None]:
    """The files to merge and their rows as one table: all of them in one scan with
    the columns declared and noted; when that fails, file by file, a bad file left
    where it is (None: no file readable)."""
    try:
        rows = read_at_once(candidates, declared_schema(store, table))
    except FileNotFoundError:  # one removed by hand under the lock: file by file
        rows = None
    if rows is not None and not rows.select(stray_rows(table).any()).item():
        return candidates, rows.to_arrow()
    files, unified = readable(store, table, candidates)
    strays = stray_files(table, files) if files else set()
    files = [f for f in files if str(f) not in strays]  # a stray row's file stays put
    if not files:
        return [], None
    combined = pa.concat_tables(
        [read_arrow(f).cast(_widen(pq.read_schema(f), unified)) for f in files],
        promote_options="permissive",
    )
    return files, combined.combine_chunks()  # a chunk a file: slow to write


def _widen(schema: pa.Schema, unified: pa.Schema) -> pa.Schema:
    """A file's own columns, with the types the unified schema gives them."""
    return pa.schema([unified.field(name) for name in schema.names])


def compact_when_due(store: Path) -> None:
    """Compact a store once `AUTO_COMPACT` runs' own files have piled up in a table."""
    own = (len(list((store / t).glob(f"[!{PART[0]}]*.parquet"))) for t in TABLES)
    if max(own, default=0) >= AUTO_COMPACT:
        compact(store)
