"""The store: a folder of Parquet datasets, one file per pilot per table.

Each file is written under a temporary name and renamed into place, so parallel
pilots never collide and a crash never leaves half a file. A run's detail tables
are written before its `runs` row, which is what makes the run visible.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from benchkit.bench.names import NAME
from benchkit.errors import StoreError, StoreWarning
from benchkit.records import Run
from benchkit.store.atomic import temporary_file
from benchkit.store.rows import check_rows, run_row, session_rows, site_rows, test_rows
from benchkit.store.schema import DECLARED_NAMES, SCHEMA_VERSION, TABLES, check_of, table_schema
from benchkit.store.upgrade import upgrade

CHECKS_NOTED = ".checks"  # in `runs/`: every check whose columns a runs file holds, a line each
COMPACT_LOCK = ".compact.lock"  # in a store: held by whoever merges files
LISTINGS = 5  # times a read lists a table's files when one vanished under it (merged)
RECHUNK_PAST = 64  # chunks (a file each) past which a read makes one: not for a few parts
SCAN_AT_ONCE = 64  # runs' own files of a table past which a lazy scan reads them at once


class RowError(ValueError):
    """A row whose keys are not its table's columns: a fault of benchkit's own."""


def store_path(path: Path, named: str = "") -> Path:
    """The store folder at `path` (`named` by an option or a variable, for the error),
    checked: a file there, or a folder whose layout is not a store's, raises
    `StoreError`; a folder not there yet is an empty store."""
    if path.exists() and not path.is_dir():
        raise StoreError(path, named, "not a folder: a store is a folder of tables")
    if path.is_dir():
        _check_layout(path)
    return path


# What a store holds, when it holds it: folders (its tables, and what pilots keep
# beside them) and the files benchkit keeps in it.
FOLDERS = (*TABLES, "artifacts", "baselines", "claims", "heartbeats", "matrices")
WITHIN = ("baselines/checks", "baselines/tests")  # folders within those: the baselines' tables
KEPT_FILES = (COMPACT_LOCK, f"runs/{CHECKS_NOTED}")


def _check_layout(store: Path) -> None:
    """Raises `StoreError` naming the first place in the store that is not what it
    must be (a table that is a file, say), before anything reads or writes there."""
    with os.scandir(store) as entries:
        kinds = {e.name: e.is_dir() for e in entries}
    for name in FOLDERS:
        if not kinds.get(name, True):
            raise StoreError(store / name, "", f"not a folder, as a store's {name} must be")
    for name in WITHIN:
        if (store / name).exists() and not (store / name).is_dir():
            raise StoreError(store / name, "", f"not a folder, as a store's {name} must be")
    for name in KEPT_FILES:
        if (store / name).is_dir():
            raise StoreError(store / name, "", "a folder, where benchkit keeps a file")


def writable_store(path: Path, named: str = "") -> Path:
    """The store folder, checked writable (not on a read-only mount, not a folder
    benchkit may not write, not on a full disk) without making it: raises `StoreError`
    before anything is written."""
    store_path(path, named)
    if path.is_dir():
        try:
            handle, probe = tempfile.mkstemp(prefix=".benchkit-probe.", dir=path)
            try:
                os.write(handle, b"benchkit")
            finally:
                os.close(handle)
                Path(probe).unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(path, "", f"cannot write the store: {exc.strerror}") from None
        return path
    parent = next(p for p in path.absolute().parents if p.exists())
    if not parent.is_dir():
        raise StoreError(path, "", f"cannot make the store: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):  # root too, on a read-only mount
        read_only = os.statvfs(parent).f_flag & os.ST_RDONLY
        reason = os.strerror(errno.EROFS if read_only else errno.EACCES)
        raise StoreError(path, "", f"cannot write the store: {reason}")
    return path


IGNORED = "# benchkit's store: never part of a repository's change\n*\n"


def made_store(store: Path) -> Path:
    """The store folder, made when it is not there yet, with a `.gitignore` of all it
    holds: a store made inside a repository (`data/runs` where `benchkit ab` runs, say)
    never shows in its `git status` or joins a `git add -A`."""
    try:
        store.mkdir(parents=True)
    except FileExistsError:
        return store
    (store / ".gitignore").write_text(IGNORED)
    return store


def checked_rows(table: str, rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """The rows as an Arrow table, once every row's keys are exactly the columns."""
    names = set(schema.names)
    for row in rows:
        if row.keys() != names:
            unknown = sorted(row.keys() - names)
            absent = sorted(names - row.keys())
            raise RowError(
                f"a row of table {table!r} does not match its columns: "
                f"unknown {unknown or 'none'}, missing {absent or 'none'}"
            )
    return arrow_rows(rows, schema)


def rows_frame(rows: list[dict[str, Any]], schema: pa.Schema) -> pl.DataFrame:
    """Rows of Python values as a polars frame of this schema's columns (not through
    pyarrow's own conversion, `pa.array`, which imports pandas: a fifth of a second of
    every command that writes)."""
    frame = empty_frame(schema)
    return pl.from_dicts(rows, schema=frame.schema) if rows else frame


def arrow_rows(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows of Python values as an Arrow table of this schema's columns. Its strings
    and lists are Arrow's large ones, as polars makes them, which Parquet stores as it
    stores the others (a file without Arrow's copy of the schema reads back as
    declared); a cast to the schema would import `pyarrow.compute`."""
    return rows_frame(rows, schema).to_arrow()


def write_table(
    store: Path, table: str, name: str, rows: list[dict[str, Any]], schema: pa.Schema
) -> Path:
    """Write rows as one Parquet file, atomically; each row must hold exactly the columns."""
    return write_arrow(store, table, name, checked_rows(table, rows, schema))


def write_arrow(store: Path, table: str, name: str, data: pa.Table) -> Path:
    """Write one Parquet file atomically: a temporary name in the same folder, then rename.
    Without Arrow's copy of the schema: Parquet's own types give every declared type
    back (Arrow's large strings and lists, as polars makes them, are stored as the
    others are), to pyarrow, polars, pandas and DuckDB alike."""
    folder = store / table
    if not folder.is_dir():
        made_store(store).joinpath(table).mkdir(exist_ok=True)
    final = folder / f"{name}.parquet"
    handle, tmp = temporary_file(folder, f".{name}.")
    try:
        # written through the handle made with the name, buffered: opened again by
        # its name, truncated, ext4 would write each file out as it closes (its
        # `auto_da_alloc`); unbuffered, pyarrow writes a run's row in 200 small writes
        part = name.startswith(PART)
        with os.fdopen(handle, "wb") as sink:
            if table == "runs":
                _note_checks(folder, data.schema)
            # a run's own file: statistics and a dictionary for one row only cost reads
            own = {} if part else {"write_statistics": False, "use_dictionary": data.num_rows > 1}
            pq.write_table(data, sink, store_schema=False, **own)
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
        # pyarrow's own error names no file: the one it could not write, as the CLI says
        raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def _sync_folder(folder: Path) -> None:
    """A folder's entries (a rename into it) on disk."""
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def write_run(store: Path, run: Run) -> None:
    """A run's files, detail tables first: its `runs` row is what makes it visible."""
    write_details(store, run)
    write_run_row(store, run)


DETAILS = ("sites", "sessions", "tests", "checks")  # a run's tables beside its `runs` row


def write_details(store: Path, run: Run) -> None:
    """A run's detail tables, what must be written before its `runs` row: all or none
    (one that cannot be written takes back those written before it)."""
    rows = {
        "sites": site_rows(run),
        "sessions": session_rows(run),
        "tests": test_rows(run.run_id, run.tests),
        "checks": check_rows(run.run_id, run.checks),
    }
    try:
        for table in DETAILS:
            write_table(store, table, run.run_id, rows[table], table_schema(table))
    except BaseException:
        remove_details(store, run.run_id)
        raise


def remove_details(store: Path, run_id: str) -> None:
    """A run's own detail files, gone: a run whose last row cannot be written keeps none."""
    for table in DETAILS:
        (store / table / f"{run_id}.parquet").unlink(missing_ok=True)


PART = "part-"  # a compacted file: many runs in one


def _is_part(name: str) -> bool:
    return name.startswith(PART) and name.endswith(".parquet")


def part_name() -> str:
    """A new compacted file's name: when it was made, and a random tail."""
    return f"{PART}{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def _note_checks(folder: Path, schema: pa.Schema) -> None:
    """Add the checks of a runs file's columns to the folder's note, before the file is
    written: a reader then knows every column without opening every file."""
    checks = {c for n in schema.names if n.endswith("_status") and (c := check_of(n))}
    new = sorted(checks - set(noted_checks(folder)))
    if new:
        with (folder / CHECKS_NOTED).open("a") as note:  # small appends: whole lines
            note.write("".join(f"{c}\n" for c in new))


def noted_checks(folder: Path) -> list[str]:
    """The checks noted: a line each, those that are no check's name passed over (the
    note only spares reads a look at every file)."""
    try:
        text = (folder / CHECKS_NOTED).read_bytes().decode(errors="replace")
    except OSError:
        return []
    return sorted({c for c in text.splitlines() if re.match(NAME, c)})


def all_files(store: Path, table: str) -> list[Path]:
    """The table's files, by name (a run's own files in the order they were started)."""
    folder = store / table
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".parquet"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [folder / name for name in names]


def compacted_ids(parts: list[Path]) -> set[str]:
    """The runs the compacted parts hold: of every part, whatever its other columns
    (a later part may hold checks an earlier one does not); a part that cannot be
    read holds none (readers skip it, so its runs' own files are read instead)."""
    held: set[str] = set()
    for part in parts:  # a few: one a merge
        with contextlib.suppress(pl.exceptions.PolarsError, OSError):
            ids = pl.scan_parquet(
                part, schema={"run_id": pl.String}, missing_columns="insert", extra_columns="ignore"
            )
            held.update(ids.select(pl.col("run_id").drop_nulls()).collect()["run_id"])
    return held


def _files(store: Path, table: str) -> list[Path]:
    """The table's files; a run's own file that a compacted part already holds (left
    by a compaction that stopped before removing it) is not read twice."""
    files = all_files(store, table)
    parts = [f for f in files if f.name.startswith(PART)]
    if not parts or len(parts) == len(files):
        return files
    held = compacted_ids(parts)
    return [f for f in files if f.name.startswith(PART) or f.stem not in held]


_SKIPPED: set[str] = set()  # what this process has warned of: each file once


def _warn_skipped(path: Path, exc: Exception | str) -> None:
    message = f"skipped {path}: {exc}"
    if message not in _SKIPPED:  # a command may read a table twice (recovery, then rows)
        _SKIPPED.add(message)
        warnings.warn(message, StoreWarning, stacklevel=3)


def readable(store: Path, table: str, files: list[Path]) -> tuple[list[Path], pa.Schema]:
    """The files whose footer reads and whose columns agree with the table's declared
    ones and with each other, and their unified schema; the others are skipped with a
    warning that names them."""
    unified = table_schema(table)
    kept = []
    for path in files:
        try:
            schema = pq.read_schema(path)
            stray = not_of(table, schema.names)
            if stray:
                _warn_skipped(path, stray)
                continue
            unified = pa.unify_schemas([unified, schema], promote_options="permissive")
        except Exception as exc:  # unreadable, or a column of another type: name it
            _warn_skipped(path, exc)
            continue
        kept.append(path)
    return kept, unified


def not_of(table: str, columns: list[str]) -> str | None:
    """Why a file with these columns is not one of the table's (a file of another
    table, or of no table benchkit writes), or None: it holds the table's key, and
    every other column is one of the table's (any version's; a check's, in `runs`)."""
    declared = DECLARED_NAMES[table]
    key = TABLES[table][0].name
    if key not in columns or "schema_version" not in columns:
        missing = key if key not in columns else "schema_version"
        return f"not a {table} file: no column {missing!r}"
    foreign = [n for n in columns if n not in declared and not _check_column(table, n)]
    if not foreign:
        return None
    named = ", ".join(repr(n) for n in foreign[:4])
    more = f" and {len(foreign) - 4} more" if len(foreign) > 4 else ""
    return f"not a {table} file: its columns {named}{more} are not the table's"


def _check_column(table: str, name: str) -> bool:
    return table == "runs" and check_of(name) is not None


FROM = "__benchkit_file"  # a read's own column: the file of each row, dropped once read


def stray_rows(table: str) -> pl.Expr:
    """A row this benchkit cannot take as one of the table's: no key, no version, or a
    schema newer than its own (written by a later benchkit: what it means is unknown)."""
    key, version = pl.col(TABLES[table][0].name), pl.col("schema_version")
    return key.is_null() | version.is_null() | (version > SCHEMA_VERSION)


def _left_out(table: str, rows: pl.DataFrame) -> pl.DataFrame:
    """The rows read (with the file of each, `FROM`), less the stray ones, each file
    that holds them named in a warning; `FROM` dropped. One look at the rows when there
    is none, as there is in a store benchkit wrote."""
    stray = stray_rows(table)
    if rows.height and rows.select(stray.any()).item():
        key = TABLES[table][0].name
        found = (
            rows.filter(stray)
            .group_by(FROM)
            .agg(
                pl.col(key).null_count().alias("keyless"),
                pl.col("schema_version").null_count().alias("versionless"),
                pl.col("schema_version").max().alias("newest"),
                pl.len().alias("rows"),
            )
            .sort(FROM)
        )
        for path, keyless, versionless, newest, count in found.iter_rows():
            _warn_skipped(Path(path), _why_left_out(table, keyless, versionless, newest, count))
        rows = rows.filter(~stray)
    return rows.drop(FROM)


def _looked(table: str, files: list[Path]) -> pl.DataFrame:
    """The key, the schema version and the file (`FROM`) of every row of the files: a
    look at two columns of each. Raises FileNotFoundError when a file went (merged)."""
    return pl.scan_parquet(
        files,
        schema={TABLES[table][0].name: pl.String, "schema_version": pl.Int32},
        missing_columns="insert",
        extra_columns="ignore",
        include_file_paths=FROM,
    ).collect()


def stray_files(table: str, files: list[Path]) -> set[str]:
    """The files (as their paths read) that hold a stray row (see `stray_rows`)."""
    return set(_looked(table, files).filter(stray_rows(table))[FROM])


def _without_strays(table: str, rows: pl.DataFrame, files: list[Path]) -> pl.DataFrame:
    """The rows of one scan of the files, less the stray ones: the files that hold
    them are looked at again (see `_looked`) only when there is one, for the warning
    that names each, so a read of a store benchkit wrote pays nothing for it."""
    stray = stray_rows(table)
    if not (rows.height and rows.select(stray.any()).item()):
        return rows
    _left_out(table, _looked(table, files))  # its warnings
    return rows.filter(~stray)


def _why_left_out(table: str, keyless: int, versionless: int, newest: int, rows: int) -> str:
    if keyless or versionless:
        missing = TABLES[table][0].name if keyless else "schema_version"
        return f"not a {table} file: no column {missing!r}"
    said = "1 row" if rows == 1 else f"{rows} rows"
    return (
        f"{said} of schema version {newest}, newer than this benchkit's ({SCHEMA_VERSION}), "
        "left out: read them with the benchkit that wrote them, or a later one"
    )


def empty_frame(schema: pa.Schema) -> pl.DataFrame:
    """No rows, with these columns as polars types (`Schema.empty_table` would import
    pandas: a third of a second of every read)."""
    frame = pl.from_arrow(pa.Table.from_batches([], schema=schema))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _empty(table: str) -> pl.LazyFrame:
    return empty_frame(table_schema(table)).lazy()


def scan_table(store: Path, table: str, *, upgraded: bool = True) -> pl.LazyFrame:
    """One table of the store, lazily: every file's rows, upgraded to the current
    schema. A file whose footer cannot be read, or whose columns have other types, is
    skipped with a warning naming it. Past `SCAN_AT_ONCE` runs' own files, those are
    read in one scan with the columns declared and noted, not footer by footer, the
    compacted parts lazily."""
    folder = store
    at_once = _listed_and_read(folder, table, loose_past=SCAN_AT_ONCE)
    if at_once is None:
        scanned = _scanned(folder, table, _files(folder, table))
    else:
        files, rows = at_once
        parts = _scanned(folder, table, [f for f in files if f.name.startswith(PART)])
        scanned = pl.concat([parts, rows.lazy()], how="diagonal_relaxed")
    return upgrade(table, scanned) if upgraded else scanned


def _listed_and_read(
    folder: Path, table: str, *, loose_past: int = 0
) -> tuple[list[Path], pl.DataFrame] | None:
    """The table's files listed and read in one scan with the columns declared and
    noted (listed again when one went meanwhile, merged): every file listed, and the
    rows read. With `loose_past`, only the
    runs' own files are read, and only when there are that many. None when there is
    nothing to read or the scan failed."""
    for _ in range(LISTINGS):
        files = _files(folder, table)
        read = [f for f in files if not f.name.startswith(PART)] if loose_past else files
        if not read or len(read) < loose_past:
            return None
        declared = declared_schema(folder, table)
        try:
            rows = read_at_once(read, declared)
            if rows is None:
                return None
            rows = _without_strays(table, rows, read)
        except FileNotFoundError:
            continue
        return files, rows
    return None


def _by_footer(folder: Path, table: str, files: list[Path]) -> pl.LazyFrame:
    """The files' rows, lazily, with the file of each (`FROM`), once each footer is
    read: those unreadable or of other types skipped with a warning. A lazy read
    leaves out the stray rows in `_scanned`."""
    files, unified = readable(folder, table, files)
    if not files:
        return _empty(table).with_columns(pl.lit(None, pl.String).alias(FROM))
    return pl.scan_parquet(
        files,
        schema=empty_frame(unified).schema,
        missing_columns="insert",
        extra_columns="ignore",
        include_file_paths=FROM,
    )


def _scanned(folder: Path, table: str, files: list[Path]) -> pl.LazyFrame:
    """The files' rows as a lazy scan gives them (see `_by_footer`): the stray rows
    left out, each file that holds them named now, from a look at two columns of
    each (a lazy scan reads parts and a few runs' own files this way)."""
    rows = _by_footer(folder, table, files)
    key = TABLES[table][0].name
    with contextlib.suppress(pl.exceptions.PolarsError, OSError):
        _left_out(table, rows.select(key, "schema_version", FROM).collect())  # its warnings
    return rows.filter(~stray_rows(table)).drop(FROM)


def declared_schema(folder: Path, table: str) -> pa.Schema:
    """The table's declared columns, with the checks its `runs` files were noted with."""
    return table_schema(table, noted_checks(folder / table) if table == "runs" else [])


def read_at_once(files: list[Path], declared: pa.Schema) -> pl.DataFrame | None:
    """The files' rows in one scan, with the declared columns; None when a file is
    unreadable, of other types, or has a column never noted. Raises FileNotFoundError
    when a file went meanwhile (merged)."""
    try:
        rows = pl.scan_parquet(
            files,
            schema=empty_frame(declared).schema,
            missing_columns="insert",
            extra_columns="raise",
        ).collect()
    except FileNotFoundError:
        raise
    except (pl.exceptions.PolarsError, OSError):  # unreadable (not this user's, say)
        return None
    return rows.rechunk() if rows.n_chunks() > RECHUNK_PAST else rows  # thousands: slow


def read_table(store: Path, table: str) -> pl.DataFrame:
    """Every row of one table, in one scan of its files with the columns declared
    and noted; when that fails (a file unreadable, of other types, or with a column
    never noted), file by file: an unreadable file is skipped with a warning that
    names it, and the rest loads. A read writes nothing."""
    folder = store
    at_once = _listed_and_read(folder, table)
    if at_once is not None:
        return upgraded(table, at_once[1])
    try:  # then each file's footer
        rows = _by_footer(folder, table, _files(folder, table)).collect()
        return upgraded(table, _left_out(table, rows))
    except (pl.exceptions.PolarsError, FileNotFoundError):
        pass  # a file with a good footer and a bad body: find it file by file
    frames: list[pl.DataFrame] = []
    for path in _files(folder, table):
        try:
            frame = pl.read_parquet(path)
        except Exception as exc:  # any unreadable file: name it, keep the rest
            _warn_skipped(path, exc)
            continue
        stray = not_of(table, frame.columns)
        if stray:
            _warn_skipped(path, stray)
            continue
        frames.append(_left_out(table, frame.with_columns(pl.lit(str(path)).alias(FROM))))
    if not frames:
        return _empty(table).collect()
    return upgraded(table, pl.concat(frames, how="diagonal_relaxed"))


def upgraded(table: str, rows: pl.DataFrame) -> pl.DataFrame:
    """Rows read, brought to the current schema in memory, from their oldest version
    on (in the scan, the steps would cost a quarter of the read of 5,000 files)."""
    oldest = rows["schema_version"].min()
    if not isinstance(oldest, int) or oldest >= SCHEMA_VERSION:
        return rows
    return upgrade(table, rows.lazy(), oldest=oldest).collect()


def read_arrow(path: Path) -> pa.Table:
    """One Parquet file as an Arrow table (not by `pq.read_table`, which imports pandas)."""
    with pq.ParquetFile(path) as handle:
        return handle.read()


def read_file(path: Path) -> list[dict[str, Any]] | None:
    """The rows of one Parquet file; None when it is absent or unreadable (with a warning)."""
    if not path.exists():
        return None
    try:
        rows: list[dict[str, Any]] = read_arrow(path).to_pylist()
    except Exception as exc:  # unreadable: name it, let the caller do without
        _warn_skipped(path, exc)
        return None
    return rows


def write_run_row(store: Path, run: Run) -> None:
    """Only the `runs` row: the `running` record a pilot leaves while it works, and the
    last file of a finished run."""
    write_table(store, "runs", run.run_id, [run_row(run)], table_schema("runs", run.check_names))


def update_run(store: Path, run_id: str, changes: dict[str, Any]) -> None:
    """Change some columns of one stored run, atomically, keeping its schema."""
    path = store / "runs" / f"{run_id}.parquet"
    table = read_arrow(path)
    rows = table.to_pylist()
    for row in rows:
        row.update(changes)
    write_table(store, "runs", run_id, rows, table.schema)
