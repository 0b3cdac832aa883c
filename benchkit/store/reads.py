"""Reading a store's tables: every file's rows in one scan where the files agree,
footer by footer or file by file where they do not, a file that cannot be read skipped
with a warning naming it, rows of a newer schema left out, and everything upgraded to
the current schema. A read writes nothing."""

from __future__ import annotations

import contextlib
import json
import threading
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from benchkit.errors import StoreWarning
from benchkit.store.layout import PART, all_files, noted_checks
from benchkit.store.schema import (
    DECLARED_NAMES,
    SCHEMA_VERSION,
    TABLES,
    arrow_schema,
    check_of,
    table_schema,
)
from benchkit.store.upgrade import upgrade

if TYPE_CHECKING:  # read only where a footer is: a run's own files are read without it
    import pyarrow as pa
    import pyarrow.parquet as pq

LISTINGS = 5  # times a read lists a table's files when one vanished under it (merged)
RECHUNK_PAST = 64  # chunks (a file each) past which a read makes one: not for a few parts
SCAN_AT_ONCE = 64  # runs' own files of a table past which a lazy scan reads them at once


IMPORTS_NOTE = "benchkit.imports"  # a part's footer: the imports it holds, {name: [row, rows]}


def compacted_ids(table: str, parts: list[Path]) -> set[str]:
    """What a table's compacted parts hold: every key (a run's id, an A/B's; of every
    part, whatever its other columns: a later part may hold checks an earlier one does
    not) and the name of every import merged; a part that cannot be read holds none
    (readers skip it, so the files it merged are read instead)."""
    key = TABLES[table][0].name
    held: set[str] = set()
    for part in parts:  # a few: one a merge
        with contextlib.suppress(pl.exceptions.PolarsError, OSError):
            ids = pl.scan_parquet(
                part, schema={key: pl.String}, missing_columns="insert", extra_columns="ignore"
            )
            held.update(ids.select(pl.col(key).drop_nulls()).collect()[key])
            held.update(merged_imports(part))
    return held


def merged_imports(part: Path) -> dict[str, tuple[int, int]]:
    """The imports a part holds, by name: the first of its rows and how many (its
    footer says); none when the footer does not say or cannot be read."""
    try:
        said = pl.read_parquet_metadata(part).get(IMPORTS_NOTE)
        held = json.loads(said) if said else {}
        return {str(name): (int(row), int(rows)) for name, (row, rows) in held.items()}
    except (OSError, pl.exceptions.PolarsError, ValueError, TypeError, AttributeError):
        return {}


def _files(store: Path, table: str) -> list[Path]:
    """The table's files; a run's own file, or an import's, that a compacted part
    already holds (left by a compaction that stopped before removing it) is not read
    twice."""
    files = all_files(store, table)
    parts = [f for f in files if f.name.startswith(PART)]
    if not parts or len(parts) == len(files):
        return files
    held = compacted_ids(table, parts)
    return [f for f in files if f.name.startswith(PART) or f.stem not in held]


_SKIPPED: set[str] = set()  # what this process has warned of: each file once


def _warn_skipped(path: Path, exc: Exception | str) -> None:
    message = f"skipped {path}: {exc}"
    if message not in _SKIPPED:  # a command may read a table twice (recovery, then rows)
        _SKIPPED.add(message)
        warnings.warn(message, StoreWarning, stacklevel=3)


def readable(
    store: Path, table: str, files: list[Path], footers: Footers | None = None
) -> tuple[list[Path], pa.Schema]:
    """The files whose footer reads and whose columns agree with the table's declared
    ones and with each other, and their unified schema; the others are skipped with a
    warning that names them. `footers`: the files' footers, read already."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    unified = arrow_schema(table)
    kept = []
    taken: list[pa.Schema] = []  # the files' schemas unified already: most files share one
    for path in files:
        try:
            footer = footers[path] if footers is not None else pq.read_metadata(path)
            if isinstance(footer, Exception):
                raise footer
            schema = footer.schema.to_arrow_schema()
            if not any(schema.equals(seen) for seen in taken):
                stray = not_of(table, schema.names)
                if stray:
                    _warn_skipped(path, stray)
                    continue
                unified = pa.unify_schemas([unified, schema], promote_options="permissive")
                taken.append(schema)
        except Exception as exc:  # unreadable, or a column of another type: name it
            _warn_skipped(path, exc)
            continue
        kept.append(path)
    return kept, unified


Footers = dict[Path, "pq.FileMetaData | Exception"]


def footers_of(files: list[Path]) -> Footers:
    """Each file's footer, read once (what it cannot be read for, in its place)."""
    if not files:
        return {}
    import pyarrow.parquet as pq

    footers: Footers = {}
    for path in files:
        try:
            footers[path] = pq.read_metadata(path)
        except Exception as exc:  # named by whoever reads it
            footers[path] = exc
    return footers


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
    import pyarrow as pa

    frame = pl.from_arrow(pa.Table.from_batches([], schema=schema))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _empty(table: str) -> pl.LazyFrame:
    return pl.LazyFrame(schema=table_schema(table))


def scan_table(store: Path, table: str, *, upgraded: bool = True) -> pl.LazyFrame:
    """One table of the store, lazily: every file's rows, upgraded to the current
    schema. A file whose footer cannot be read, or whose columns have other types, is
    skipped with a warning naming it. Past `SCAN_AT_ONCE` runs' own files, those are
    read in one scan with the columns declared and noted, not footer by footer, the
    compacted parts lazily."""
    folder = store
    at_once = _listed_and_read(folder, table, loose_past=SCAN_AT_ONCE)
    if at_once is None:
        scanned, oldest = _scanned(folder, table, _files(folder, table))
    else:
        files, rows = at_once
        parts, oldest = _scanned(folder, table, [f for f in files if f.name.startswith(PART)])
        loose = rows["schema_version"].min()
        oldest = min(oldest, loose) if isinstance(loose, int) else oldest
        scanned = pl.concat([parts, rows.lazy()], how="diagonal_relaxed")
    # the steps from the oldest version held: none for a store of this benchkit's
    return upgrade(table, scanned, oldest=oldest) if upgraded else scanned


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


def _by_footer(
    folder: Path, table: str, files: list[Path], footers: Footers | None = None
) -> tuple[pl.LazyFrame, list[Path], pl.Schema | None]:
    """The files' rows, lazily, with the file of each (`FROM`), once each footer is
    read: those unreadable or of other types skipped with a warning. A lazy read
    leaves out the stray rows in `_scanned`. Beside the rows, the files kept and the
    columns they are read with (None: no file)."""
    if files:  # none: no footer to read (nor pyarrow to import)
        files, unified = readable(folder, table, files, footers)
    if not files:
        return _empty(table).with_columns(pl.lit(None, pl.String).alias(FROM)), [], None
    columns = empty_frame(unified).schema
    return _scan_of(files, columns), files, columns


def _scan_of(files: list[Path], columns: pl.Schema) -> pl.LazyFrame:
    return pl.scan_parquet(
        files,
        schema=columns,
        missing_columns="insert",
        extra_columns="ignore",
        include_file_paths=FROM,
    )


Identity = tuple[str, tuple[tuple[str, int, int, int, int, int], ...]]
_SAID: dict[Identity, tuple[pl.Schema, int]] = {}  # see `_scanned`: clean files' columns
_SAYING = threading.Lock()  # `_SAID` changed by one thread at a time
SAID_KEPT = 256  # sets of files whose reading `_SAID` keeps (the oldest forgotten first)


def _identity(table: str, files: list[Path]) -> Identity | None:
    """The files as they are now (each one's device, inode, size and times: a file
    rewritten, or replaced by a rename, is another), or None when one is gone
    (merged)."""
    known = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            return None
        known.append((str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return table, tuple(known)


def _scanned(folder: Path, table: str, files: list[Path]) -> tuple[pl.LazyFrame, int]:
    """The files' rows as a lazy scan gives them (see `_by_footer`): the stray rows
    left out, each file that holds them named now, from a look at two columns of
    each (a lazy scan reads parts and a few runs' own files this way); and the
    oldest schema version among them, as far as their footers say (1 where not).
    Files never change once written: the same files, every one read and no row
    stray, are scanned again with what their reading said (a notebook scans a
    store again and again), their footers not read again."""
    identity = _identity(table, files) if files else None
    said = _SAID.get(identity) if identity is not None else None
    if said is not None:
        return _scan_of(files, said[0]).drop(FROM), said[1]
    footers = footers_of(files)
    rows, kept, columns = _by_footer(folder, table, files, footers)
    key = TABLES[table][0].name
    clean, oldest = _footers_say(key, footers)
    if not clean:  # a look at two columns of each file
        with contextlib.suppress(pl.exceptions.PolarsError, OSError):
            looked = rows.select(key, "schema_version", FROM).collect()
            _left_out(table, looked)  # its warnings
            clean = not (looked.height and looked.select(stray_rows(table).any()).item())
    if not clean:
        return rows.filter(~stray_rows(table)).drop(FROM), oldest
    if identity is not None and columns is not None and len(kept) == len(files):
        with _SAYING:
            while len(_SAID) >= SAID_KEPT:
                _SAID.pop(next(iter(_SAID)), None)
            _SAID[identity] = columns, oldest
    return rows.drop(FROM), oldest


def _footers_say(key: str, footers: Footers) -> tuple[bool, int]:
    """Whether the files' footers say that no row is stray (every row group's key and
    `schema_version` without nulls, and no version past this benchkit's), and the
    oldest version they hold: (False, 1) where a footer does not say (a run's own
    file is written without statistics)."""
    oldest = SCHEMA_VERSION
    if not footers:
        return True, oldest
    import pyarrow as pa

    try:
        for footer in footers.values():
            if isinstance(footer, Exception):
                return False, 1
            names = footer.schema.names
            if key not in names or "schema_version" not in names:
                return False, 1
            at = names.index(key), names.index("schema_version")
            for group in range(footer.num_row_groups):
                keyed, version = (footer.row_group(group).column(i).statistics for i in at)
                if keyed is None or version is None or not version.has_min_max:
                    return False, 1
                if keyed.null_count != 0 or version.null_count != 0:
                    return False, 1
                if version.max > SCHEMA_VERSION:
                    return False, 1
                oldest = min(oldest, int(version.min))
    except (OSError, pa.ArrowException):
        return False, 1
    return True, oldest


def declared_schema(folder: Path, table: str) -> pl.Schema:
    """The table's declared columns, with the checks its `runs` files were noted with."""
    return table_schema(table, noted_checks(folder / table) if table == "runs" else [])


def read_at_once(files: list[Path], declared: pl.Schema) -> pl.DataFrame | None:
    """The files' rows in one scan, with the declared columns; None when a file is
    unreadable, of other types, or has a column never noted. Raises FileNotFoundError
    when a file went meanwhile (merged)."""
    try:
        rows = pl.scan_parquet(
            files,
            schema=declared,
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
    files = _files(folder, table)
    if not files:  # a new store's: made at once, no lazy frame collected (2 to 20 ms)
        return pl.DataFrame(schema=table_schema(table))
    try:  # then each file's footer
        rows = _by_footer(folder, table, files)[0].collect()
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
        return pl.DataFrame(schema=table_schema(table))
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
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        return handle.read()


def read_kept(path: Path) -> list[dict[str, Any]] | None:
    """The rows of one Parquet file that is written whole and replaced, never changed
    (a baseline's): read once a process while it stays the same file (its device,
    inode, times and size), as every pilot of a matrix asks; each caller has rows of
    its own. None when absent or unreadable."""
    try:
        stat = path.stat()
    except OSError:
        return None
    stamp = (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)
    rows = _rows_of(path, stamp)
    return None if rows is None else [dict(row) for row in rows]


@lru_cache(maxsize=64)
def _rows_of(path: Path, stamp: tuple[int, ...]) -> tuple[dict[str, Any], ...] | None:
    rows = read_file(path)
    return None if rows is None else tuple(rows)


def read_file(path: Path) -> list[dict[str, Any]] | None:
    """The rows of one Parquet file; None when it is absent or unreadable (with a warning)."""
    if not path.exists():
        return None
    try:
        rows: list[dict[str, Any]] = pl.read_parquet(path).to_dicts()
    except Exception as exc:  # unreadable: name it, let the caller do without
        _warn_skipped(path, exc)
        return None
    return rows
