"""The store: a folder of Parquet datasets, one file per pilot per table.

Each file is written under a temporary name and renamed into place, so parallel
pilots never collide and a crash never leaves half a file. A run's detail tables
are written before its `runs` row, which is what makes the run visible.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from benchkit.records import (
    TABLES,
    Run,
    check_rows,
    run_row,
    session_rows,
    site_rows,
    table_schema,
    test_rows,
)
from benchkit.upgrade import upgrade

DEFAULT_STORE = Path("data/runs")


class StoreWarning(UserWarning):
    """A store file that could not be read and was skipped."""


def store_path(store: Path | str | None = None) -> Path:
    if store is not None:
        return Path(store)
    return Path(os.environ.get("BENCHKIT_STORE") or DEFAULT_STORE)


def write_table(
    store: Path, table: str, name: str, rows: list[dict[str, Any]], schema: pa.Schema
) -> Path:
    """Write rows as one Parquet file, atomically."""
    return write_arrow(store, table, name, pa.Table.from_pylist(rows, schema=schema))


def write_arrow(store: Path, table: str, name: str, data: pa.Table) -> Path:
    """Write one Parquet file atomically: a temporary name in the same folder, then rename."""
    folder = store / table
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{name}.parquet"
    handle, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    os.close(handle)
    try:
        pq.write_table(data, tmp)
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def write_run(store: Path, run: Run) -> None:
    """A run's files, detail tables first: its `runs` row is what makes it visible."""
    write_table(store, "sites", run.run_id, site_rows(run), table_schema("sites"))
    write_table(store, "sessions", run.run_id, session_rows(run), table_schema("sessions"))
    write_table(store, "tests", run.run_id, test_rows(run.run_id, run.tests), table_schema("tests"))
    write_table(
        store, "checks", run.run_id, check_rows(run.run_id, run.checks), table_schema("checks")
    )
    write_table(store, "runs", run.run_id, [run_row(run)], table_schema("runs", run.check_names))


PART = "part-"  # a compacted file: many runs in one


def _all_files(store: Path, table: str) -> list[Path]:
    folder = store / table
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def _compacted_ids(parts: list[Path]) -> set[str]:
    if not parts:
        return set()
    try:
        ids = pl.scan_parquet(parts).select("run_id").unique().collect()
    except pl.exceptions.PolarsError:
        return set()
    return set(ids["run_id"].to_list())


def _files(store: Path, table: str) -> list[Path]:
    """The table's files; a run's own file that a compacted part already holds (left
    by a compaction that stopped before removing it) is not read twice."""
    files = _all_files(store, table)
    parts = [f for f in files if f.name.startswith(PART)]
    if not parts or len(parts) == len(files):
        return files
    held = _compacted_ids(parts)
    return [f for f in files if f.name.startswith(PART) or f.stem not in held]


def _warn_skipped(path: Path, exc: Exception) -> None:
    warnings.warn(f"skipped {path}: {exc}", StoreWarning, stacklevel=3)


def _empty(table: str) -> pl.LazyFrame:
    frame = pl.from_arrow(table_schema(table).empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame.lazy()


def scan_table(store: Path | str | None, table: str) -> pl.LazyFrame:
    """One table of the store, lazily: every file's rows, upgraded to the current
    schema. A file whose footer cannot be read is skipped with a warning naming it."""
    files: list[Path] = []
    schemas: list[pa.Schema] = [table_schema(table)]
    for path in _files(store_path(store), table):
        try:
            schemas.append(pq.read_schema(path))
        except Exception as exc:  # any unreadable file: name it, keep the rest
            _warn_skipped(path, exc)
            continue
        files.append(path)
    if not files:
        return _empty(table)
    unified = pa.unify_schemas(schemas, promote_options="permissive")
    frame = pl.from_arrow(unified.empty_table())
    assert isinstance(frame, pl.DataFrame)
    rows = pl.scan_parquet(
        files, schema=frame.schema, missing_columns="insert", extra_columns="ignore"
    )
    return upgrade(table, rows)


def read_table(store: Path | str | None, table: str) -> pl.DataFrame:
    """Every row of one table; an unreadable file is skipped with a warning that names
    it, and the rest loads."""
    try:
        return scan_table(store, table).collect()
    except pl.exceptions.PolarsError:
        pass  # a file with a good footer and a bad body: find it file by file
    frames: list[pl.DataFrame] = []
    for path in _files(store_path(store), table):
        try:
            frames.append(pl.read_parquet(path))
        except Exception as exc:  # any unreadable file: name it, keep the rest
            _warn_skipped(path, exc)
    if not frames:
        return _empty(table).collect()
    return upgrade(table, pl.concat(frames, how="diagonal_relaxed").lazy()).collect()


def read_file(path: Path) -> list[dict[str, Any]] | None:
    """The rows of one Parquet file; None when it is absent or unreadable (with a warning)."""
    if not path.exists():
        return None
    try:
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    except Exception as exc:  # unreadable: name it, let the caller do without
        warnings.warn(f"skipped {path}: {exc}", StoreWarning, stacklevel=2)
        return None
    return rows


def write_run_row(store: Path, run: Run) -> None:
    """Only the `runs` row: the `running` record a pilot leaves while it works."""
    write_table(store, "runs", run.run_id, [run_row(run)], table_schema("runs", run.check_names))


def update_run(store: Path, run_id: str, changes: dict[str, Any]) -> None:
    """Change some columns of one stored run, atomically, keeping its schema."""
    path = store / "runs" / f"{run_id}.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    for row in rows:
        row.update(changes)
    write_table(store, "runs", run_id, rows, table.schema)


def compact(store: Path, *, least: int = 2) -> dict[str, int]:
    """Merge the runs' own files into one compacted part per table, for fast reading.

    Only finished runs are merged (a `running` run's files are still being written).
    The part is written atomically first, then the merged files are removed; a stop
    in between leaves files that readers skip and the next compaction removes.
    Returns how many files each table merged.
    """
    store.mkdir(parents=True, exist_ok=True)
    merged: dict[str, int] = {}
    with open(store / ".compact.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one compaction at a time
        runs = read_table(store, "runs")
        finished = set(runs.filter(pl.col("status") != "running")["run_id"].to_list())
        for table in TABLES:
            everything = _all_files(store, table)
            held = _compacted_ids([f for f in everything if f.name.startswith(PART)])
            own = [f for f in everything if not f.name.startswith(PART)]
            for leftover in [f for f in own if f.stem in held]:
                leftover.unlink(missing_ok=True)  # merged before, not removed then
            files = [f for f in own if f.stem in finished and f.stem not in held]
            merged[table] = 0
            if len(files) < least:
                continue
            schemas = [pq.read_schema(f) for f in files]
            unified = pa.unify_schemas(
                [table_schema(table), *schemas], promote_options="permissive"
            )
            combined = pa.concat_tables(
                [
                    pq.read_table(f).cast(_widen(schema, unified))
                    for f, schema in zip(files, schemas, strict=True)
                ],
                promote_options="permissive",
            )
            name = f"{PART}{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
            write_arrow(store, table, name, combined)
            for f in files:
                f.unlink(missing_ok=True)
            merged[table] = len(files)
    return merged


def _widen(schema: pa.Schema, unified: pa.Schema) -> pa.Schema:
    """A file's own columns, with the types the unified schema gives them."""
    return pa.schema([unified.field(name) for name in schema.names])
