"""Outside records: runs recorded elsewhere, imported from a CSV file.

A published table or a colleague's spreadsheet becomes runs in the store with the
columns it has and nulls for the rest, marked `origin = "imported"`, so that a new
run can be compared with a record nobody can rerun. Column names are the `runs`
table's (`bench` and `arm` are required), or mapped to them (`SOURCE=COLUMN`), columns
can be left out (`ignore`), and a column the file lacks can be given one value for
every row (`consts`: `bench=dms-saas`); a list column (`flaky_files`, ...) is written as
`a.py;b.py`. A bad file gets one line naming it and every unknown column or bad cell
at once (its row and column), and nothing is written: a cell not of its column's
type, or one no run could hold (a time, cost or count below 0, a number that is not
finite, a status that is none, a run id given twice or held by the store from another
file). Importing the same file again replaces its runs.

A published table's own words are kept as it wrote them and read where they can be
(`ImportedRuns.notes` says how): a `ci` cell (`1 pass 0 fail (fork PR)`) gives its
run a `ci_status` where it reads as one; an `outcome` cell (`no: service error`)
that says the run did not succeed makes its status `failed` (kind `outcome`),
unless the file gives a status.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import polars as pl
import pyarrow as pa

from benchkit.arm_report import MOST_USD
from benchkit.bench.names import NAME, NAME_RULE
from benchkit.errors import ImportFileError
from benchkit.gate.ci import CI_STATUSES, status_of_words
from benchkit.gate.verdict import Verdict
from benchkit.records import LAUNCHERS, CheckStatus, RunStatus
from benchkit.store.layout import all_files
from benchkit.store.parquet import write_table
from benchkit.store.reads import empty_frame, read_table
from benchkit.store.schema import RUN_COLUMNS, SCHEMA_VERSION, check_of, table_schema
from benchkit.store.store import Store

REQUIRED = ("bench", "arm")
SET_BY_IMPORT = ("schema_version", "origin")
DECLARED = {c.name: c.type for c in RUN_COLUMNS}


def _kind_of(column: str) -> pa.DataType:
    """A column's type: the runs table's, a check's count, or text."""
    return DECLARED.get(column) or (pa.int64() if column.endswith("_count") else pa.string())


def _arrow_to_polars(kind: pa.DataType) -> pl.DataType:
    return empty_frame(pa.schema([("x", kind)])).schema["x"]


Cell = tuple[int, int, str]  # a bad cell: its row (as the file numbers it), its column's
# place in the file, and what is wrong with it


def _cells(frame: pl.DataFrame, column: str, bad: pl.Series | pl.Expr, said: str) -> list[Cell]:
    """Every row where `bad` holds, with the cell as the file has it."""
    rows = frame.with_row_index().filter(bad)
    place = frame.columns.index(column)
    return [
        (row + 2, place, f"row {row + 2}, {column}: {said}: {value!r}")
        for row, value in zip(rows["index"], rows[column], strict=True)
    ]


def _cast(frame: pl.DataFrame, column: str, kind: pa.DataType) -> tuple[pl.Series, list[Cell]]:
    """A column as its type, null where a cell is not of it, and those cells."""
    raw = frame[column]
    if pa.types.is_list(kind):
        return raw.str.split(";").list.eval(pl.element().str.strip_chars()).alias(column), []
    target = _arrow_to_polars(kind)
    if pa.types.is_boolean(kind):
        lowered = raw.str.to_lowercase().str.strip_chars()
        wrong = lowered.is_not_null() & ~lowered.is_in(["true", "false", "1", "0"])
        read = lowered.is_in(["true", "1"]).alias(column).set(lowered.is_null() | wrong, None)
        return read, _cells(frame, column, wrong, "not true or false")
    if pa.types.is_timestamp(kind):
        when = raw.str.to_datetime(time_zone="UTC", strict=False).alias(column)
        return when, _cells(
            frame, column, raw.is_not_null() & when.is_null(), "not a date and time"
        )
    cast = raw.cast(target, strict=False)
    return cast, _cells(frame, column, raw.is_not_null() & cast.is_null(), f"not a {target}")


SHOWN = 10  # bad cells a message names; the rest it counts


def _said(cells: list[Cell]) -> str:
    """Bad cells in the file's order, row by row: the first `SHOWN`, then how many more."""
    ordered = [said for _, _, said in sorted(cells)]
    more = len(ordered) - SHOWN
    return "; ".join(ordered[:SHOWN]) + (f"; and {more} more bad cells" if more > 0 else "")


FINISHED = tuple(s for s in get_args(RunStatus) if s != "running")  # an import's statuses
CHECK_STATUSES = get_args(CheckStatus)
FRACTIONS = ("files_recall", "files_precision")
FROM_ONE = ("trial", "attempt")
SIGNED = ("arm_exit_code",)  # a signal's is negative
ONE_OF: dict[str, tuple[str, ...]] = {  # the columns of a few known values
    "status": FINISHED,
    "test_verdict": get_args(Verdict),
    "launcher": LAUNCHERS,
    "ci_status": CI_STATUSES,
}


def _known_values(column: str) -> tuple[str, ...]:
    """The values a column of a few known ones may hold (a check's status is one of
    `CHECK_STATUSES`); empty: any."""
    if column in ONE_OF:
        return ONE_OF[column]
    return CHECK_STATUSES if column.endswith("_status") and check_of(column) else ()


def _beyond(cast: pl.DataFrame) -> list[Cell]:
    """The cells of a cast file that no run could hold, every one: seconds, costs and
    counts below 0, numbers that are not finite, fractions beyond 1, a trial below
    1, a status that is none, a run id given twice."""
    bad: list[Cell] = []
    for name in cast.columns:
        column, kind = pl.col(name), cast.schema[name]
        rules: list[tuple[pl.Expr, str]] = []
        if kind.is_float():
            rules += [(~column.is_finite(), "not a finite number"), (column < 0, "negative")]
            if name in FRACTIONS:
                rules.append((column > 1, "not between 0 and 1"))
            if name == "cost_usd":
                rules.append((column > MOST_USD, f"more than {MOST_USD:,.0f} USD"))
        elif kind.is_integer() and name not in SIGNED:
            least = 1 if name in FROM_ONE else 0
            rules.append((column < least, "less than 1" if least else "negative"))
        elif values := _known_values(name):
            rules.append((~column.is_in(values), f"not one of {', '.join(values)}"))
        seen = pl.lit(False)  # a cell is named once, by the first rule it breaks
        for rule, said in rules:
            broken = rule.fill_null(False) & ~seen
            bad += _cells(cast, name, broken, said)
            seen = seen | rule.fill_null(False)
    if "run_id" in cast.columns:
        ids = cast.with_row_index().filter(pl.col("run_id").is_not_null())
        place = cast.columns.index("run_id")
        for rows in (
            ids.filter(pl.col("run_id").is_duplicated()).group_by("run_id").agg("index")["index"]
        ):
            first, *others = sorted(rows)
            bad += [
                (row + 2, place, f"row {row + 2}, run_id: row {first + 2} has it too")
                for row in others
            ]
    return bad


def _renamed(
    path: Path, frame: pl.DataFrame, mapping: Mapping[str, str], ignore: Sequence[str]
) -> pl.DataFrame:
    absent = [c for c in [*mapping, *ignore] if c not in frame.columns]
    if absent:
        raise ImportFileError(
            path, ", ".join(absent), "no such column in the file to map or ignore"
        )
    both = [c for c in mapping if c in ignore]
    kept = [c for c in frame.columns if c not in mapping and c not in ignore]
    targets = [*mapping.values(), *kept]
    if "" in mapping.values():
        raise ImportFileError(path, "--map", "SOURCE=COLUMN names no COLUMN")
    clash = sorted({t for t in targets if targets.count(t) > 1})
    if both or clash:
        said = f"mapped and ignored: {', '.join(both)}" if both else "more than one column"
        raise ImportFileError(path, ", ".join(both or clash), f"{said} (see --map, --ignore)")
    return frame.drop(ignore).rename(dict(mapping))


class ImportedRuns(list[str]):
    """The ids of the runs an import added, and `notes`: how it read the table's own
    words (its `ci` and `outcome` cells)."""

    def __init__(self, ids: Sequence[str], notes: Sequence[str] = ()) -> None:
        super().__init__(ids)
        self.notes = tuple(notes)


NOT_SUCCEEDED = re.compile(
    r"^\W*(no|not|false|fail(ed|ure|s)?|errors?|unresolved|crash(ed|es)?|timed?[ _-]?out)\b",
    re.I,
)
SUCCEEDED = re.compile(r"^\W*(yes|ok|true|pass(ed|es)?|success(ful)?|resolved|verified)\b", re.I)
OUTCOME_RULE = (
    "an outcome whose first word is no, not, false, fail(ed, ure), error, unresolved, "
    "crash(ed) or timeout says the run did not succeed"
)


def _ci_status(frame: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """A `ci_status` read from each `ci` text, and the note that says how."""
    read = [status_of_words(t) if t else None for t in frame["ci"]]
    counted = {s: read.count(s) for s in CI_STATUSES if read.count(s)}
    unread = sum(1 for t, r in zip(frame["ci"], read, strict=True) if t and r is None)
    said = ", ".join(f"{s} {n}" for s, n in counted.items()) or "none of them"
    note = f"ci: the text kept as `ci`, read as ci_status: {said}"
    note += f"; {unread} read as no status (null)" if unread else ""
    return frame.with_columns(ci_status=pl.Series(read, dtype=pl.String)), note


def _outcome_status(frame: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """The status `failed` (kind `outcome`) of each run whose outcome says it did not
    succeed, `ok` of the others, where the file gives the run no status of its own; a
    failure kind or detail the file gives is kept. The note says the rule, and how
    many runs it failed of those it decided."""
    texts = [str(t) if t is not None else "" for t in frame["outcome"]]
    own = frame["status"] if "status" in frame.columns else pl.Series([None] * len(texts))
    decided = own.is_null()
    failed = pl.Series([bool(NOT_SUCCEEDED.match(t)) for t in texts]) & decided
    details = [f"the table's outcome: {t}" for t in texts]
    said = {
        "failure_kind": pl.when(failed).then(pl.lit("outcome")),
        "failure_detail": pl.when(failed).then(pl.Series(details, dtype=pl.String)),
    }
    status = pl.when(failed).then(pl.lit("failed")).otherwise(pl.lit("ok"))
    frame = frame.with_columns(
        (pl.coalesce(pl.col(c), value) if c in frame.columns else value).alias(c)
        for c, value in said.items()
    ).with_columns(status=pl.coalesce(pl.Series(own, dtype=pl.String), status))
    unread = sum(
        1
        for t, f, d in zip(texts, failed, decided, strict=True)
        if d and t and not f and not SUCCEEDED.match(t)
    )
    note = (
        f"outcome: {int(failed.sum())} of {int(decided.sum())} runs did not succeed, status "
        f"failed (kind outcome): {OUTCOME_RULE}"
    )
    if unread:
        note += f"; {unread} outcome{'s' if unread != 1 else ''} read as neither: status ok"
    if not decided.all():
        note += f"; {int((~decided).sum())} with a status of the file's own: kept"
    return frame, note


def _read_words(frame: pl.DataFrame, given: Sequence[str]) -> tuple[pl.DataFrame, list[str]]:
    """A published table's words read where the file gives no status of its own
    (`given`: its columns): `ci` as `ci_status`, `outcome` as the run's status (a
    run's own status cell wins)."""
    notes = []
    if "ci" in frame.columns and "ci_status" not in given:
        frame, note = _ci_status(frame)
        notes.append(note)
    if "outcome" in frame.columns:
        frame, note = _outcome_status(frame)
        notes.append(note)
    return frame, notes


def read_csv(
    path: Path,
    mapping: Mapping[str, str] | None = None,
    ignore: Sequence[str] = (),
    consts: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The runs of a CSV file as rows of the `runs` table, its columns renamed by
    `mapping` (source name to runs column), those in `ignore` left out, and `consts`
    (column to value) added to every row; raises `ImportFileError` naming every
    unknown column, or every bad cell, at once."""
    return read_import(path, mapping, ignore, consts)[0]


def read_import(
    path: Path,
    mapping: Mapping[str, str] | None = None,
    ignore: Sequence[str] = (),
    consts: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """`read_csv`'s rows, and the notes on how the table's own words were read."""
    if path.is_dir():
        raise ImportFileError(path, "", "a folder, not a CSV file")
    header = _header(path)  # its rows checked: polars fills a short row with nulls, unsaid
    try:
        frame = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).strip().splitlines()
        raise ImportFileError(
            path, "", f"not a CSV file: {first[0] if first else type(exc).__name__}"
        ) from None
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise ImportFileError(path, ", ".join(twice), "a column given twice in the header")
    if frame.height == 0:
        raise ImportFileError(path, "", "no runs: the file has a header and no rows")
    frame = _renamed(path, frame, mapping or {}, ignore)
    for column, value in (consts or {}).items():
        if column in frame.columns:
            raise ImportFileError(path, column, "given by the file and by --const: keep one")
        _const_checked(path, column, value)
        frame = frame.with_columns(pl.lit(value, pl.String).alias(column))
    unknown = [
        c for c in frame.columns if c in SET_BY_IMPORT or (c not in DECLARED and not check_of(c))
    ]
    if unknown:
        raise ImportFileError(
            path,
            ", ".join(unknown),
            f"{'an unknown column' if len(unknown) == 1 else f'{len(unknown)} unknown columns'}"
            " (not a runs column, or set by import): map with --map SOURCE=COLUMN, or --ignore",
        )
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ImportFileError(path, ", ".join(missing), "missing column")
    bad: list[Cell] = []
    for column in REQUIRED:
        empty = frame.with_row_index().filter(pl.col(column).is_null())["index"]
        place = frame.columns.index(column)
        bad += [(row + 2, place, f"row {row + 2}, {column}: empty") for row in empty]
    columns = []
    for column in frame.columns:
        kind = _kind_of(column)
        read, wrong = _cast(frame, column, kind)
        columns.append(read)
        bad += wrong
    if columns:  # the cells that are of their type, checked too
        bad += _beyond(pl.DataFrame(columns))
    if bad:
        raise ImportFileError(path, "", _said(bad))
    name = import_name(path)
    words, notes = _read_words(pl.DataFrame(columns), frame.columns)
    rows = words.to_dicts()
    for n, row in enumerate(rows):
        row.setdefault("run_id", None)
        row["run_id"] = row["run_id"] or f"{name}-{n + 1}"
        if not re.match(NAME, str(row["run_id"])):
            said = f"{NAME_RULE}, not {row['run_id']!r}"
            raise ImportFileError(path, f"row {n + 2}, run_id", said)
        row["schema_version"] = SCHEMA_VERSION
        row["origin"] = "imported"
        row["status"] = row.get("status") or "ok"
        row["trial"] = row.get("trial") or 1
        row["cost_source"] = "reported" if row.get("cost_usd") is not None else "missing"
    return rows, notes


def _const_checked(path: Path, column: str, value: str) -> None:
    """Raises `ImportFileError` naming `--const COLUMN` for a column no run has, or
    a value its column cannot hold: said once, not once a row."""
    where = f"--const {column}"
    if not value.strip():
        raise ImportFileError(path, where, "empty: give a value, or leave the column out")
    if column in SET_BY_IMPORT or (column not in DECLARED and not check_of(column)):
        raise ImportFileError(path, where, "not a runs column (see the store's runs table)")
    kind = _kind_of(column)
    one = pl.DataFrame({column: [value]})
    read, wrong = _cast(one, column, kind)
    wrong += _beyond(pl.DataFrame([read])) if not wrong else []
    if wrong:
        said = wrong[0][2].split(": ", 1)[1]  # `row 2, trial: not a Int32: 'two'`, rowless
        raise ImportFileError(path, where, said)


def _header(path: Path) -> list[str]:
    """The file's header, its names as the file has them (polars renames a name given
    twice). Raises `ImportFileError` for a file that is not there, cannot be read as
    text, or has a row of more or fewer fields than the header."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            lines = csv.reader(handle)
            header = next(lines, [])
            for n, fields in enumerate(lines, start=2):
                if fields and len(fields) != len(header):
                    said = f"{len(fields)} field{'' if len(fields) == 1 else 's'}"
                    raise ImportFileError(
                        path, f"row {n}", f"{said}, where the header has {len(header)}"
                    )
    except FileNotFoundError:
        raise ImportFileError(path, "", "no such file") from None
    except (OSError, csv.Error) as exc:
        raise ImportFileError(path, "", f"not a CSV file: {exc}") from None
    return header


def import_runs(
    path: Path | str,
    store: Store | Path | str | None = None,
    *,
    mapping: Mapping[str, str] | None = None,
    ignore: Sequence[str] = (),
    consts: Mapping[str, str] | None = None,
) -> ImportedRuns:
    """Add the runs of a CSV file (recorded elsewhere) to the store, marked imported,
    as one file; their run ids, with notes on how the table's words were read.
    `mapping` renames the file's columns to runs columns (`{"seconds": "wall_s"}`);
    the columns in `ignore` are left out; `consts` gives a column the same value in
    every row (`{"bench": "dms-saas"}`)."""
    path = Path(path)
    rows, notes = read_import(path, mapping, ignore, consts)
    checks = sorted({check for row in rows for k in row if (check := check_of(k))})
    schema = table_schema("runs", checks)
    complete = [dict.fromkeys(schema.names) | row for row in rows]  # the rest is null
    name, folder = import_name(path), Store.at(store).checked().path
    earlier = earlier_imports(path, folder)
    _not_held(path, folder, {f.stem for f in earlier} | {name}, [str(r["run_id"]) for r in rows])
    written = write_table(folder, "runs", name, complete, schema)
    for old in earlier:
        if old != written:
            old.unlink(missing_ok=True)
    return ImportedRuns([str(row["run_id"]) for row in rows], notes)


def import_name(path: Path) -> str:
    """The name of the runs file an import of this CSV file writes, and the stem of
    the ids of its runs that have none: by the file's place (its name and resolved
    path), so that importing it again, corrected or not, replaces its runs."""
    place = path.resolve()  # a link to the file, or another way to it, is the file
    where = hashlib.sha256(str(place).encode(errors="surrogateescape")).hexdigest()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", place.stem).strip("-._")[:40] or "file"
    return f"imported-{stem}-{where[:12]}"


def earlier_imports(path: Path, store: Path) -> list[Path]:
    """The runs files of this CSV file's earlier imports: by its place, and by its
    content (the name earlier imports were given, replaced as well)."""
    by_content = f"imported-{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}"
    names = (import_name(path), by_content)
    return [f for name in names if (f := store / "runs" / f"{name}.parquet").is_file()]


def _not_held(path: Path, store: Path, own: set[str], ids: list[str]) -> None:
    """Raises `ImportFileError` at the first id the store holds from elsewhere (not
    from this file's own earlier imports, `own`, which the import replaces), naming
    the file that holds it. One look at the `run_id` of every runs file."""
    files = [f for f in all_files(store, "runs") if f.stem not in own]
    if not files:
        return
    try:
        held = pl.scan_parquet(
            files,
            schema={"run_id": pl.String},
            missing_columns="insert",
            extra_columns="ignore",
            include_file_paths="file",
        ).collect()
    except (pl.exceptions.PolarsError, OSError):  # a file unreadable: read as reads do
        held = read_table(store, "runs").select("run_id", file=pl.lit(None))
    where = dict(zip(held["run_id"], held["file"], strict=True))
    for n, run_id in enumerate(ids):
        if run_id in where:
            file = where[run_id]
            said = f"the store holds run {run_id} already"
            said += f" (in {Path(file).relative_to(store)})" if file else ""
            raise ImportFileError(path, f"row {n + 2}, run_id", said)
