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
file). Importing the same file again replaces its runs. The file is read a block at
a time (`Reading`), never whole, and its runs written as one Parquet file part by
part, put in place once the last block is read and checked.

A published table's own words are kept as it wrote them and read where they can be
(`ImportedRuns.notes` says how): a `ci` cell (`1 pass 0 fail (fork PR)`) gives its
run a `ci_status` where it reads as one; an `outcome` cell (`no: service error`)
that says the run did not succeed makes its status `failed` (kind `outcome`),
unless the file gives a status.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args, overload

import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv

from benchkit.arm_report import MOST_USD
from benchkit.bench.names import NAME, NAME_RULE
from benchkit.errors import ImportFileError
from benchkit.gate.ci import CI_STATUSES
from benchkit.gate.verdict import Verdict
from benchkit.records import LAUNCHERS, CheckStatus, RunStatus
from benchkit.store.compaction import drop_imports, merging
from benchkit.store.layout import IMPORTED, PART, all_files
from benchkit.store.parquet import written_in_parts
from benchkit.store.reads import merged_imports, read_table
from benchkit.store.schema import RUN_COLUMNS, SCHEMA_VERSION, check_of, table_schema
from benchkit.store.store import Store
from benchkit.store.words import Words

REQUIRED = ("bench", "arm")
SET_BY_IMPORT = ("schema_version", "origin")
DECLARED = {c.name: c.type for c in RUN_COLUMNS}


def _kind_of(column: str) -> pl.DataType:
    """A column's type: the runs table's, a check's count, or text."""
    return DECLARED.get(column) or (pl.Int64() if column.endswith("_count") else pl.String())


Cell = tuple[int, int, str]  # a bad cell: its row (as the file numbers it), its column's
# place in the file, and what is wrong with it


def _cells(
    frame: pl.DataFrame, column: str, bad: pl.Series | pl.Expr, said: str, offset: int = 0
) -> list[Cell]:
    """Every row where `bad` holds, with the cell as the file has it (`offset`: the
    rows of the file before the frame's first)."""
    rows = frame.with_row_index(offset=offset).filter(bad)
    place = frame.columns.index(column)
    return [
        (row + 2, place, f"row {row + 2}, {column}: {said}: {value!r}")
        for row, value in zip(rows["index"], rows[column], strict=True)
    ]


def _cast(
    frame: pl.DataFrame, column: str, kind: pl.DataType, offset: int = 0
) -> tuple[pl.Series, list[Cell]]:
    """A column as its type, null where a cell is not of it, and those cells."""
    raw = frame[column]
    if isinstance(kind, pl.List):
        return raw.str.split(";").list.eval(pl.element().str.strip_chars()).alias(column), []
    if isinstance(kind, pl.Boolean):
        lowered = raw.str.to_lowercase().str.strip_chars()
        wrong = lowered.is_not_null() & ~lowered.is_in(["true", "false", "1", "0"])
        read = lowered.is_in(["true", "1"]).alias(column).set(lowered.is_null() | wrong, None)
        return read, _cells(frame, column, wrong, "not true or false", offset)
    if isinstance(kind, pl.Datetime):
        when = raw.str.to_datetime(time_zone="UTC", strict=False).alias(column)
        bad = raw.is_not_null() & when.is_null()
        return when, _cells(frame, column, bad, "not a date and time", offset)
    cast = raw.cast(kind, strict=False)
    bad = raw.is_not_null() & cast.is_null()
    return cast, _cells(frame, column, bad, f"not a {kind}", offset)


SHOWN = 10  # bad cells a message names; the rest it counts


def _said(cells: list[Cell], more: int = 0) -> str:
    """Bad cells in the file's order, row by row: the first `SHOWN`, then how many more
    (`more`: those already left out)."""
    ordered = [said for _, _, said in sorted(cells)]
    more += len(ordered) - SHOWN
    return "; ".join(ordered[:SHOWN]) + (f"; and {more} more bad cells" if more > 0 else "")


def _first(cells: list[Cell]) -> int:
    """Keep the first `SHOWN` bad cells in the file's order (a file of bad rows is
    not a list of millions); how many were left out."""
    cells.sort()
    left = max(len(cells) - SHOWN, 0)
    del cells[SHOWN:]
    return left


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


def _beyond(cast: pl.DataFrame, offset: int = 0) -> list[Cell]:
    """The cells of a cast block of the file that no run could hold, every one:
    seconds, costs and counts below 0, numbers that are not finite, fractions beyond
    1, a trial below 1, a status that is none."""
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
            bad += _cells(cast, name, broken, said, offset)
            seen = seen | rule.fill_null(False)
    return bad


def _twice(ids: pl.DataFrame, place: int) -> list[Cell]:
    """The run ids the file gives twice (`ids`: each with its row, counted from 0;
    `place`: the column's), each named at every row after its first."""
    bad: list[Cell] = []
    for rows in (
        ids.filter(pl.col("run_id").is_duplicated()).group_by("run_id").agg("index")["index"]
    ):
        first, *others = sorted(rows)
        bad += [
            (row + 2, place, f"row {row + 2}, run_id: row {first + 2} has it too") for row in others
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


class ImportedRuns(Sequence[str]):
    """The ids of the runs an import added (a sequence of text, held as one column:
    a million ids are not a million Python objects), and `notes`: how it read the
    table's own words (its `ci` and `outcome` cells), and `replaced`: whether they took
    the place of an earlier import's runs of the same file."""

    def __init__(
        self, ids: pl.Series | Sequence[str], notes: Sequence[str] = (), replaced: bool = False
    ) -> None:
        self.ids = pl.Series("run_id", ids, dtype=pl.String)
        self.notes = tuple(notes)
        self.replaced = replaced  # whether they replace the runs of an earlier import

    def __len__(self) -> int:
        return self.ids.len()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self.ids.to_list()[index] if isinstance(index, slice) else self.ids[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's: it compares by its ids

    def __repr__(self) -> str:
        return f"ImportedRuns({self.ids.to_list()!r}, notes={self.notes!r})"


BLOCK = 2 << 20  # bytes of the file read at a time: an import holds a few times this


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
    return read_import(path, mapping, ignore, consts)[0].to_dicts()


def read_import(
    path: Path,
    mapping: Mapping[str, str] | None = None,
    ignore: Sequence[str] = (),
    consts: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """`read_csv`'s runs as one frame, and the notes on how the table's own words
    were read."""
    reading = Reading(path, mapping or {}, ignore, consts or {})
    blocks = list(reading.blocks())
    return pl.concat(blocks, how="diagonal_relaxed"), reading.notes()


class Reading:
    """A CSV file of runs read a block at a time, each block as the runs it holds:
    the rows are never Python objects and the file is never whole in memory (a
    100 MB file takes a few times `BLOCK`, and its run ids). Each column is renamed
    (`mapping`), left out (`ignore`) or given (`consts`) as `read_csv` says; the
    file's header and those are checked at once (`columns`), every cell as its
    block is read; `blocks` raises `ImportFileError` once the last is read, naming
    the bad cells of every block."""

    def __init__(
        self,
        path: Path,
        mapping: Mapping[str, str],
        ignore: Sequence[str],
        consts: Mapping[str, str],
    ) -> None:
        self.path, self.mapping, self.ignore, self.consts = path, mapping, ignore, consts
        if path.is_dir():
            raise ImportFileError(path, "", "a folder, not a CSV file")
        # its rows checked: a reader would fill a short row with nulls, unsaid
        self.header, self.rows = _header(path)
        twice = sorted({c for c in self.header if self.header.count(c) > 1})
        if twice:
            raise ImportFileError(path, ", ".join(twice), "a column given twice in the header")
        if self.rows == 0:
            raise ImportFileError(path, "", "no runs: the file has a header and no rows")
        self.columns = self._checked(pl.DataFrame(schema=dict.fromkeys(self.header, pl.String)))
        self.words = Words(self.columns)

    def _prepared(self, text: pl.DataFrame) -> pl.DataFrame:
        """A block of the file's text with its columns as the runs table's (renamed,
        left out, given), as `_checked` found them."""
        text = _renamed(self.path, text, self.mapping, self.ignore)
        return text.with_columns(pl.lit(v, pl.String).alias(c) for c, v in self.consts.items())

    def _checked(self, header: pl.DataFrame) -> list[str]:
        """The columns of every block, once the file's header (`header`: a frame of no
        rows), `mapping`, `ignore` and `consts` are checked: raises `ImportFileError`
        for a constant the file gives too or no run can hold, an unknown column, or a
        required one missing."""
        path = self.path
        given = _renamed(path, header, self.mapping, self.ignore).columns
        for column, value in self.consts.items():
            if column in given:
                raise ImportFileError(path, column, "given by the file and by --const: keep one")
            _const_checked(path, column, value)
        columns = [*given, *self.consts]
        unknown = [
            c for c in columns if c in SET_BY_IMPORT or (c not in DECLARED and not check_of(c))
        ]
        if unknown:
            many = f"{len(unknown)} unknown columns" if len(unknown) > 1 else "an unknown column"
            raise ImportFileError(
                path,
                ", ".join(unknown),
                f"{many} (not a runs column, or set by import): map with --map SOURCE=COLUMN,"
                " or --ignore",
            )
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            raise ImportFileError(path, ", ".join(missing), "missing column")
        return columns

    def blocks(self) -> Iterator[pl.DataFrame]:
        """The runs of each block of the file, as an import records them; once the
        last is read, raises `ImportFileError` naming the bad cells of every block
        (those after the first bad one are checked, not given)."""
        bad: list[Cell] = []
        more = 0  # bad cells left out of `bad`
        given: list[pl.DataFrame] = []  # the run ids the file gives, with their rows
        offset = 0
        for text in self._text():
            runs, wrong = self._cast(self._prepared(text), offset)
            bad += wrong
            more += _first(bad)
            if "run_id" in runs.columns:
                given.append(runs.select("run_id").with_row_index(offset=offset))
            if not bad:
                yield self._completed(self.words.read(runs), offset)
            offset += text.height
        if given:
            bad += _twice(pl.concat(given).drop_nulls(), self.columns.index("run_id"))
        if bad:
            raise ImportFileError(self.path, "", _said(bad, more))

    def notes(self) -> list[str]:
        """How the table's words were read, once every block is."""
        return self.words.notes()

    def _text(self) -> Iterator[pl.DataFrame]:
        """The file's rows a block at a time, every cell as its text, an empty one
        null."""
        try:
            reader = pacsv.open_csv(
                self.path,
                read_options=pacsv.ReadOptions(
                    column_names=self.header, skip_rows=1, block_size=BLOCK
                ),
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    column_types=dict.fromkeys(self.header, pa.large_string()),
                    null_values=[""],
                    strings_can_be_null=True,
                ),
            )
            for batch in reader:
                yield pl.DataFrame(pl.from_arrow(batch))
        except (pa.ArrowException, OSError) as exc:
            first = str(exc).strip().splitlines()
            said = first[0] if first else type(exc).__name__
            raise ImportFileError(self.path, "", f"not a CSV file: {said}") from None

    def _cast(self, text: pl.DataFrame, offset: int) -> tuple[pl.DataFrame, list[Cell]]:
        """A block's columns as their types, and the cells that are not of them or
        that no run could hold."""
        bad: list[Cell] = []
        for column in REQUIRED:
            empty = text.with_row_index(offset=offset).filter(pl.col(column).is_null())
            place = text.columns.index(column)
            bad += [(row + 2, place, f"row {row + 2}, {column}: empty") for row in empty["index"]]
        columns = []
        for column in text.columns:
            read, wrong = _cast(text, column, _kind_of(column), offset)
            columns.append(read)
            bad += wrong
        cast = pl.DataFrame(columns)
        return cast, bad + _beyond(cast, offset)

    def _completed(self, runs: pl.DataFrame, offset: int) -> pl.DataFrame:
        """A block's runs as an import records them: a run id where the file gives
        none (the import's name and its row), marked imported at this schema, status
        `ok` and trial 1 where not given, its cost reported or missing. Raises
        `ImportFileError` at the first run id that is not a name."""
        if "run_id" in runs.columns:
            wrong = runs.with_row_index(offset=offset).filter(~pl.col("run_id").str.contains(NAME))
            if wrong.height:
                row, run_id = wrong["index"][0], wrong["run_id"][0]
                said = f"{NAME_RULE}, not {run_id!r}"
                raise ImportFileError(self.path, f"row {row + 2}, run_id", said)

        def given(column: str, kind: pl.DataType) -> pl.Expr:
            return pl.col(column) if column in runs.columns else pl.lit(None, kind)

        first = offset + 1
        numbers = pl.int_range(first, first + pl.len())
        cost = given("cost_usd", pl.Float64())
        return runs.with_columns(
            run_id=pl.coalesce(
                given("run_id", pl.String()),
                pl.format("{}-{}", pl.lit(import_name(self.path)), numbers),
            ),
            schema_version=pl.lit(SCHEMA_VERSION),
            origin=pl.lit("imported"),
            status=pl.coalesce(given("status", pl.String()), pl.lit("ok")),
            trial=pl.coalesce(given("trial", pl.Int64()), pl.lit(1)),
            cost_source=pl.when(cost.is_not_null())
            .then(pl.lit("reported"))
            .otherwise(pl.lit("missing")),
        )


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


def _header(path: Path) -> tuple[list[str], int]:
    """The file's header, its names as the file has them (a reader renames a name
    given twice), and how many rows follow it. Raises `ImportFileError` for a file
    that is not there, cannot be read as text, or has a row of more or fewer fields
    than the header."""
    rows = 0
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            lines = csv.reader(handle)
            header = next(lines, [])
            for n, fields in enumerate(lines, start=2):
                rows += bool(fields)
                if fields and len(fields) != len(header):
                    said = f"{len(fields)} field{'' if len(fields) == 1 else 's'}"
                    raise ImportFileError(
                        path, f"row {n}", f"{said}, where the header has {len(header)}"
                    )
    except FileNotFoundError:
        raise ImportFileError(path, "", "no such file") from None
    except (OSError, csv.Error) as exc:
        raise ImportFileError(path, "", f"not a CSV file: {exc}") from None
    return header, rows


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
    reading = Reading(path, mapping or {}, ignore, consts or {})
    checks = sorted({check for c in reading.columns if (check := check_of(c))})
    kinds = table_schema("runs", checks)
    kept = Store.at(store).checked()
    folder, names = kept.path, import_names(path)
    ids: list[pl.Series] = []
    schema = pl.DataFrame(schema=kinds).to_arrow().schema
    blocks = reading.blocks()
    first = next(blocks)  # a bad cell in the first block: said before the store is made
    kept.make()
    # under the compaction lock: no merge takes this file's earlier runs meanwhile
    with merging(folder), written_in_parts(folder, "runs", names[0], schema) as write:
        for runs in itertools.chain([first], blocks):
            ids.append(runs["run_id"])
            write(  # the columns the file lacks: null
                runs.select(
                    (pl.col(c).cast(kind) if c in runs.columns else pl.lit(None, kind)).alias(c)
                    for c, kind in kinds.items()
                ).to_arrow()
            )
        held = pl.concat(ids)
        _not_held(path, folder, names, held)
        earlier = [f for n in names if (f := folder / "runs" / f"{n}.parquet").is_file()]
        # out of the parts that merged them, before the new file is in place: a stop
        # between the two leaves the file's runs out (imported again, they are back),
        # never twice
        replaced = drop_imports(folder, list(names)) or bool(earlier)
        for old in [f for f in earlier if f.stem != names[0]]:  # that one: replaced
            old.unlink(missing_ok=True)
    kept.compact_when_due()
    return ImportedRuns(held, reading.notes(), replaced=replaced)


def import_name(path: Path) -> str:
    """The name of the runs file an import of this CSV file writes, and the stem of
    the ids of its runs that have none: by the file's place (its name and resolved
    path), so that importing it again, corrected or not, replaces its runs."""
    place = path.resolve()  # a link to the file, or another way to it, is the file
    where = hashlib.sha256(str(place).encode(errors="surrogateescape")).hexdigest()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", place.stem).strip("-._")[:40] or "file"
    return f"{IMPORTED}{stem}-{where[:12]}"


def import_names(path: Path) -> tuple[str, str]:
    """The names this CSV file's imports have: by its place (`import_name`, what an
    import writes), and by its content (the name earlier benchkits gave them), each
    replaced by the next import of the file."""
    with open(path, "rb") as file:
        by_content = f"{IMPORTED}{hashlib.file_digest(file, 'sha256').hexdigest()[:12]}"
    return import_name(path), by_content


def _not_held(path: Path, store: Path, own: tuple[str, ...], ids: pl.Series) -> None:
    """Raises `ImportFileError` at the first id the store holds from elsewhere (not
    from this file's own earlier imports, named `own`, which the import replaces,
    whether in their own files or merged into a part), naming the file that holds it.
    One look at the `run_id` of every runs file."""
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
        held = read_table(store, "runs").select("run_id", file=pl.lit(None, pl.String))
    merged = [  # the rows of each part that are this file's earlier imports'
        (str(part), row, rows)
        for part in files
        if part.name.startswith(PART)
        for name, (row, rows) in merged_imports(part).items()
        if name in own
    ]
    if merged:
        at = pl.int_range(pl.len()).over("file")
        mine = [(pl.col("file") == p) & at.is_between(r, r + n - 1) for p, r, n in merged]
        held = held.filter(~pl.any_horizontal(mine))
    both = (
        ids.to_frame("run_id")
        .with_row_index()
        .join(held.unique("run_id"), on="run_id")
        .sort("index")
    )
    if both.height:
        row, run_id, file = both.row(0)
        said = f"the store holds run {run_id} already"
        said += f" (in {Path(file).relative_to(store)})" if file else ""
        raise ImportFileError(path, f"row {row + 2}, run_id", said)
