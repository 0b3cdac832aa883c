"""Writing the store's Parquet files: one file per pilot per table it has rows in.

Each file is written under a temporary name and renamed into place, so parallel
pilots never collide and a crash never leaves half a file. A run's detail tables
are written before its `runs` row, which is what makes the run visible; each row
holds exactly its table's columns, or the write is refused. A run's own files are
written by polars, so a pilot imports neither pyarrow nor numpy; a compacted part
and an import's file, written a part at a time, by pyarrow.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import polars as pl

from benchkit.records import Run
from benchkit.store.atomic import temporary_file
from benchkit.store.layout import CHECKS_NOTED, PART, made_store, noted_checks
from benchkit.store.rows import (
    check_rows,
    ci_rows,
    commit_rows,
    run_row,
    session_rows,
    site_rows,
    test_rows,
)
from benchkit.store.schema import check_of, table_schema

if TYPE_CHECKING:  # a part's writer only: a run's own files are written by polars
    import pyarrow as pa


class RowError(ValueError):
    """A row whose keys are not its table's columns: a fault of benchkit's own."""


def checked_rows(table: str, rows: list[dict[str, Any]], schema: pl.Schema) -> pl.DataFrame:
    """The rows as a frame of the schema's columns, once every row's keys are exactly
    the columns."""
    names = set(schema)
    for row in rows:
        if row.keys() != names:
            unknown = sorted(row.keys() - names)
            absent = sorted(names - row.keys())
            raise RowError(
                f"a row of table {table!r} does not match its columns: "
                f"unknown {unknown or 'none'}, missing {absent or 'none'}"
            )
    return rows_frame(rows, schema)


def rows_frame(rows: list[dict[str, Any]], schema: pl.Schema) -> pl.DataFrame:
    """Rows of Python values as a polars frame of this schema's columns."""
    return pl.from_dicts(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def write_table(
    store: Path, table: str, name: str, rows: list[dict[str, Any]], schema: pl.Schema
) -> Path:
    """Write rows as one Parquet file, atomically, by polars (a run's own files: no
    pyarrow, nor numpy, imported to write them); each row must hold exactly the
    columns. Polars keeps Arrow's copy of the schema in the footer, its strings and
    lists the large ones; every reader gives them back as the declared types."""
    frame = checked_rows(table, rows, schema)
    made = io.BytesIO()  # then written by Python: a full disk is an OSError with its errno
    frame.write_parquet(made, statistics=False)  # a run's few rows: they only cost reads
    with written(store, table, name, frame.columns) as sink:
        sink.write(made.getbuffer())
    return store / table / f"{name}.parquet"


def write_arrow(
    store: Path, table: str, name: str, data: pa.Table, notes: dict[str, str] | None = None
) -> Path:
    """Write one Parquet file atomically: a temporary name in the same folder, then rename.
    Without Arrow's copy of the schema: Parquet's own types give every declared type
    back (Arrow's large strings and lists, as polars makes them, are stored as the
    others are), to pyarrow, polars, pandas and DuckDB alike. `notes`: key-value
    metadata of its footer."""
    with written_in_parts(store, table, name, data.schema, notes=notes) as write:
        write(data)
    return store / table / f"{name}.parquet"


@contextmanager
def written_in_parts(
    store: Path,
    table: str,
    name: str,
    schema: pa.Schema,
    notes: dict[str, str] | None = None,
) -> Iterator[Callable[[pa.Table], None]]:
    """One Parquet file written a part at a time (`write(part)`, each of `schema`),
    in place once the block ends, atomically as `write_table`'s; an exception in the
    block leaves nothing (the temporary file removed). `notes`: key-value metadata
    of its footer."""
    import pyarrow.parquet as pq

    with (
        written(store, table, name, schema.names) as sink,
        pq.ParquetWriter(sink, schema, store_schema=False) as writer,
    ):
        yield writer.write_table
        if notes:
            writer.add_key_value_metadata(notes)


@contextmanager
def written(store: Path, table: str, name: str, columns: list[str]) -> Iterator[IO[bytes]]:
    """A file of the table written in the block, through a buffered handle, in place
    (`<name>.parquet`) once the block ends: under a temporary name in the same
    folder, then renamed; an exception in the block leaves nothing. A `runs` file's
    checks (from its `columns`) are noted first. A compacted part is on disk before
    it is in place, and its folder's entry after."""
    folder = store / table
    if not folder.is_dir():
        made_store(store).joinpath(table).mkdir(exist_ok=True)
    final = folder / f"{name}.parquet"
    handle, tmp = temporary_file(folder, f".{name}.")
    try:
        # written through the handle made with the name, buffered: opened again by
        # its name, truncated, ext4 would write each file out as it closes (its
        # `auto_da_alloc`); unbuffered, a writer writes a run's row in 200 small writes
        part = name.startswith(PART)
        with os.fdopen(handle, "wb") as sink:
            if table == "runs":
                _note_checks(folder, columns)
            yield sink
            if part:  # the runs' own files it holds go next: on disk first
                sink.flush()
                os.fsync(sink.fileno())
        os.replace(tmp, final)
        if part:
            _sync_folder(folder)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename:
            raise
        # a writer's own error names no file: the one it could not write, as the CLI says
        raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sync_folder(folder: Path) -> None:
    """A folder's entries (a rename into it) on disk."""
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


DETAILS = (
    "sites",
    "sessions",
    "commits",
    "ci",
    "tests",
    "checks",
)  # a run's tables beside its `runs` row


def write_details(store: Path, run: Run) -> None:
    """A run's detail tables, what must be written before its `runs` row: all or none
    (one that cannot be written takes back those written before it). A table the run
    has no row in gets no file: a read gives the same rows, and the store fewer files
    to list, read and compact (a demo pilot has no sessions, commits nor CI runs)."""
    rows = {
        "sites": site_rows(run),
        "sessions": session_rows(run),
        "commits": commit_rows(run),
        "ci": ci_rows(run),
        "tests": test_rows(run.run_id, run.tests),
        "checks": check_rows(run.run_id, run.checks),
    }
    try:
        for table in DETAILS:
            if rows[table]:
                write_table(store, table, run.run_id, rows[table], table_schema(table))
    except BaseException:
        remove_details(store, run.run_id)
        raise


def remove_details(store: Path, run_id: str) -> None:
    """A run's own detail files, gone: a run whose last row cannot be written keeps none."""
    for table in DETAILS:
        (store / table / f"{run_id}.parquet").unlink(missing_ok=True)


def _note_checks(folder: Path, columns: list[str]) -> None:
    """Add the checks of a runs file's columns to the folder's note, before the file is
    written: a reader then knows every column without opening every file."""
    checks = {c for n in columns if n.endswith("_status") and (c := check_of(n))}
    new = sorted(checks - set(noted_checks(folder)))
    if new:
        with (folder / CHECKS_NOTED).open("a") as note:  # small appends: whole lines
            note.write("".join(f"{c}\n" for c in new))


def write_run_row(store: Path, run: Run) -> None:
    """Only the `runs` row: the `running` record a pilot leaves while it works, and the
    last file of a finished run."""
    write_table(store, "runs", run.run_id, [run_row(run)], table_schema("runs", run.check_names))


def update_run(store: Path, run_id: str, changes: dict[str, Any]) -> None:
    """Change some columns of one stored run, atomically, keeping its schema."""
    path = store / "runs" / f"{run_id}.parquet"
    frame = pl.read_parquet(path)
    rows = frame.to_dicts()
    for row in rows:
        row.update(changes)
    write_table(store, "runs", run_id, rows, frame.schema)
