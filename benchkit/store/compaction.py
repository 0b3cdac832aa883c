"""Compaction: the runs' own files, and small imports, merged into one file per table,
for fast reads.

Only finished runs are merged (a `running` run's files are still being written). The
merged part is written atomically first, then the merged files are removed; a stop in
between leaves files that readers skip and the next compaction removes. A part names
the imports it holds in its footer, so that importing a file again replaces its runs
wherever they are. One compaction at a time: whoever merges or replaces holds the
store's compaction lock; a command that compacts as it goes, or as it ends, passes
when another holds it, and never blocks a pilot's writes.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from benchkit.store.layout import COMPACT_LOCK, IMPORTED, PART, all_files, part_name
from benchkit.store.parquet import write_arrow
from benchkit.store.reads import (
    IMPORTS_NOTE,
    compacted_ids,
    declared_schema,
    merged_imports,
    read_arrow,
    read_at_once,
    readable,
    scan_table,
    stray_files,
    stray_rows,
)
from benchkit.store.schema import TABLES

if TYPE_CHECKING:  # imported by a compaction, not by a command that finds none due
    import pyarrow as pa

AUTO_COMPACT = 64  # files to merge in a table past which a command that wrote compacts
LOOK_EVERY = 8  # recorded runs: what other writers add to a store is seen this often
IMPORT_MERGED_BELOW = 8 << 20  # bytes: an import's file past this is a part of its own


@contextmanager
def merging(store: Path, *, wait: bool = True) -> Iterator[bool]:
    """The store's compaction lock, held for the block: whether it is held (without
    `wait`, False at once when another benchkit holds it)."""
    with open(store / COMPACT_LOCK, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


def compact(store: Path, *, least: int = 2, wait: bool = True) -> dict[str, int]:
    """Merge the runs' own files, and the imports' small files, into one part per
    table (reads get fast); the number of files merged per table. A command that
    wrote runs does it past `AUTO_COMPACT` such files (`compact_when_due`)."""
    store.mkdir(parents=True, exist_ok=True)
    with merging(store, wait=wait) as held:
        return _compacted(store, least) if held else {}


def _compacted(store: Path, least: int) -> dict[str, int]:
    merged: dict[str, int] = {}
    listed = {table: all_files(store, table) for table in TABLES}  # each folder listed once
    loose = {  # the runs some loose file is of: their rows only, not a large store's all
        f.stem
        for table, columns in TABLES.items()
        if columns[0].name == "run_id"
        for f in listed[table]
        if not f.name.startswith((PART, IMPORTED))
    }
    runs = scan_table(store, "runs").filter(pl.col("run_id").is_in(list(loose))).collect()
    finished = set(runs.filter(pl.col("status") != "running")["run_id"].to_list())
    for table, everything in listed.items():
        held = compacted_ids(table, [f for f in everything if f.name.startswith(PART)])
        own = [f for f in everything if not f.name.startswith(PART)]
        for leftover in [f for f in own if f.stem in held]:
            leftover.unlink(missing_ok=True)  # merged before, not removed then
        left = [f for f in own if f.stem not in held]
        merged[table] = _merge_imports(store, [f for f in left if _mergeable_import(f)], least)
        if TABLES[table][0].name == "run_id":  # a run's: once it is finished
            candidates = [f for f in left if f.stem in finished]
        else:  # an A/B's, a probe's: written whole, once
            candidates = left
        if len(candidates) < max(least, 1):
            continue
        read = _read_already(runs, candidates) if table == "runs" else None
        files, combined = read or _combined(store, table, candidates)
        if combined is None or len(files) < least:
            continue
        write_arrow(store, table, part_name(), combined)
        for f in files:
            f.unlink(missing_ok=True)
        merged[table] += len(files)
    return merged


def _mergeable_import(path: Path | os.DirEntry[str]) -> bool:
    """An import's file small enough to merge (a large one reads as fast as a part)."""
    if not path.name.startswith(IMPORTED):
        return False
    try:
        return path.stat().st_size < IMPORT_MERGED_BELOW
    except OSError:
        return False


def _imports_note(imports: list[tuple[str, int]]) -> dict[str, str]:
    """A part's footer note of the imports it holds, from each import's name and rows
    in the part's order: where each one's rows begin, and how many."""
    held, row = {}, 0
    for name, rows in imports:
        held[name] = [row, rows]
        row += rows
    return {IMPORTS_NOTE: json.dumps(held)} if held else {}


def _merge_imports(store: Path, imports: list[Path], least: int) -> int:
    """Merge imports' files into one part whose footer names each import and its rows;
    how many were merged."""
    if len(imports) < max(least, 1):
        return 0
    files, combined = _combined(store, "runs", imports)
    if combined is None or len(files) < least:
        return 0
    import pyarrow.parquet as pq

    counts = [(f.stem, pq.read_metadata(f).num_rows) for f in files]
    if sum(rows for _, rows in counts) != combined.num_rows:  # a file changed: merge none
        return 0
    write_arrow(store, "runs", part_name(), combined, notes=_imports_note(counts))
    for f in files:
        f.unlink(missing_ok=True)
    return len(files)


def drop_imports(store: Path, names: list[str]) -> bool:
    """Take the rows of these imports out of the parts that hold them, each part
    replaced at once by one without them (under the compaction lock, which the caller
    holds); whether any part held one."""
    import pyarrow as pa

    dropped = False
    for part in [f for f in all_files(store, "runs") if f.name.startswith(PART)]:
        held = merged_imports(part)
        gone = sorted(held[n] for n in names if n in held)
        if not gone:
            continue
        dropped = True
        table, kept, at = read_arrow(part), [], 0
        for row, rows in gone:
            kept.append(table.slice(at, row - at))
            at = row + rows
        kept.append(table.slice(at))
        rest = pa.concat_tables(kept)
        if not rest.num_rows:
            part.unlink(missing_ok=True)
            continue
        still = sorted(((n, r) for n, r in held.items() if n not in names), key=lambda i: i[1][0])
        notes = _imports_note([(name, rows) for name, (_, rows) in still])
        write_arrow(store, "runs", part.stem, rest.combine_chunks(), notes=notes)
    return dropped


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
    """The files to merge and their rows as one table, file after file: all of them in
    one scan with the columns declared and noted; when that fails, file by file, a bad
    file left where it is (None: no file readable)."""
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
    import pyarrow as pa
    import pyarrow.parquet as pq

    combined = pa.concat_tables(
        [read_arrow(f).cast(_widen(pq.read_schema(f), unified)) for f in files],
        promote_options="permissive",
    )
    return files, combined.combine_chunks()  # a chunk a file: slow to write


def _widen(schema: pa.Schema, unified: pa.Schema) -> pa.Schema:
    """A file's own columns, with the types the unified schema gives them."""
    import pyarrow as pa

    return pa.schema([unified.field(name) for name in schema.names])


def compact_when_due(store: Path) -> int:
    """Compact a store once `AUTO_COMPACT` files to merge have piled up in a table
    (what a command that wrote runs does as it goes and as it ends); passed when
    another benchkit is compacting it. How many more files a table may take before
    it may be due, after this look (1 after a compaction: look again)."""
    most = max(_to_merge(store / t) for t in TABLES)
    if most < AUTO_COMPACT:
        return AUTO_COMPACT - most
    compact(store, wait=False)
    return 1


def runs_to_next_look(room: int) -> int:
    """How many runs a matrix records before it looks at the store again, told how
    many more files its fullest table has room for (`compact_when_due`): a run adds a
    table one file at most, and what other writers add is seen within `LOOK_EVERY`."""
    return max(1, min(room, LOOK_EVERY))


def _to_merge(folder: Path) -> int:
    """How many files of a table folder a compaction would merge, or about: a look at
    the names (and an import's size), no file opened."""
    try:
        with os.scandir(folder) as entries:
            names = [e for e in entries if e.name.endswith(".parquet") and e.name[0] != PART[0]]
    except OSError:
        return 0
    return sum(1 for e in names if not e.name.startswith(IMPORTED) or _mergeable_import(e))
