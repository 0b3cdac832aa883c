"""The store: one folder, and one object that owns everything benchkit keeps in it.

A `Store` is where runs are kept (a table each, one Parquet file per pilot per table
it has rows in, then compacted parts) and what pilots keep beside them while they
work: heartbeats, claims on a run set's units, each matrix's ledger, the cached checks
at base, and each run's artifacts. Every path in the folder comes from here; every
write to a table goes through here; a read never writes and never stops a process
(`recover` in `benchkit.run.recovery` is the one that does, and says so).

A `Store` is a plain picklable value (its path and what named it), so it is sent to
a worker process or a Ray task as it is; making one does no I/O.
"""

from __future__ import annotations

import os
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from benchkit.errors import StoreError
from benchkit.records import Run
from benchkit.store import compaction, heartbeat, layout, parquet, reads
from benchkit.store.heartbeat import Beat, Heartbeat
from benchkit.store.schema import table_schema

DEFAULT_STORE = Path("data/runs")


@dataclass(frozen=True)
class Store:
    """A store folder, and what named it: `--store`, `BENCHKIT_STORE`, or "" (the
    default, `data/runs`), so that an error can say which to change."""

    path: Path
    named: str = ""

    @classmethod
    def at(cls, given: Store | Path | str | None = None) -> Store:
        """The store given, else `$BENCHKIT_STORE`, else `data/runs`."""
        if isinstance(given, Store):
            return given
        if given is not None:
            return cls(Path(given), "--store")
        if os.environ.get("BENCHKIT_STORE"):
            return cls(Path(os.environ["BENCHKIT_STORE"]), "BENCHKIT_STORE")
        return cls(DEFAULT_STORE)

    # Checks, each raising `StoreError` naming the place before anything is written.

    def checked(self) -> Store:
        """This store, once a folder that is there holds what a store must (a table
        that is a file, say, is named); a missing folder is an empty store."""
        layout.store_path(self.path, self.named)
        return self

    def existing(self) -> Store:
        """This store, which must be there: a command that only reads says so when the
        folder named is missing (a typo), not that it holds no runs."""
        self.checked()
        if not self.path.is_dir():
            raise StoreError(self.path, self.named, "no store here: the folder does not exist")
        return self

    def writable(self) -> Store:
        """This store, checked writable (not on a read-only mount, not a folder benchkit
        may not write, not on a full disk) without making it."""
        layout.writable_store(self.path, self.named)
        return self

    def make(self) -> Store:
        """The folder made when it is not there yet, with a `.gitignore` of all it holds."""
        layout.made_store(self.path)
        return self

    # The folder's layout.

    def artifacts(self, run_id: str) -> Path:
        """A run's logs and patch."""
        return self.path / "artifacts" / run_id

    def baseline_artifacts(self, key: str) -> Path:
        """The logs of the checks at base of one key."""
        return self.path / "artifacts" / "baselines" / key

    @property
    def baselines(self) -> Path:
        """The cached checks at base: `checks/<key>.parquet`, `tests/<key>.parquet`."""
        return self.path / "baselines"

    @property
    def claims(self) -> Path:
        """Which benchkit runs which unit of a run set: `<set>/<key>.json`."""
        return self.path / "claims"

    @property
    def matrices(self) -> Path:
        """Each matrix at work: `<host>-<pid>.json`."""
        return self.path / "matrices"

    # Runs: recorded whole, or not at all.

    def record(self, run: Run) -> None:
        """A run's rows, detail tables first: its `runs` row is what makes it visible,
        and a detail table that cannot be written takes back those written before it."""
        self.record_details(run)
        self.record_row(run)

    def record_details(self, run: Run) -> None:
        """A run's detail tables only (all or none), before its last `runs` row."""
        parquet.write_details(self.path, run)

    def record_row(self, run: Run) -> None:
        """A run's `runs` row only: the `running` record a pilot leaves while it works,
        and the last file of a finished run."""
        parquet.write_run_row(self.path, run)

    def forget_details(self, run_id: str) -> None:
        """A run's own detail files, gone: a run whose last row cannot be written keeps none."""
        parquet.remove_details(self.path, run_id)

    def update_run(self, run_id: str, changes: dict[str, Any]) -> None:
        """Change some columns of one stored run's own file, atomically."""
        parquet.update_run(self.path, run_id, changes)

    def write_rows(
        self, table: str, name: str, rows: list[dict[str, Any]], schema: pl.Schema | None = None
    ) -> Path:
        """Rows as one file of a table (each row exactly its columns), atomically; a
        file of the same name is replaced."""
        return parquet.write_table(self.path, table, name, rows, schema or table_schema(table))

    # The cached checks at base, by key.

    def baseline_rows(self, table: str, key: str) -> list[dict[str, Any]] | None:
        """A baseline's `checks` or `tests` rows; None when absent or unreadable. Read
        once a process while its file stays the same: every pilot of a matrix asks."""
        return reads.read_kept(self.baselines / table / f"{key}.parquet")

    def write_baseline(
        self, table: str, key: str, rows: list[dict[str, Any]], schema: pl.Schema
    ) -> Path:
        """A baseline's `checks` or `tests` rows, written whole."""
        return parquet.write_table(self.baselines, table, key, rows, schema)

    # Reads: never a write, never a process stopped.

    def read(self, table: str) -> pl.DataFrame:
        """Every row of one table, upgraded to the current schema; a file that cannot be
        read is skipped with a warning that names it, and the rest loads."""
        return reads.read_table(self.path, table)

    def scan(self, table: str) -> pl.LazyFrame:
        """One table, lazily (see `read`)."""
        return reads.scan_table(self.path, table)

    # Compaction.

    def compact(self, *, least: int = 2) -> dict[str, int]:
        """Merge the runs' own files (and small imports) into one part per table; the
        files merged per table."""
        return compaction.compact(self.path, least=least)

    def compact_when_due(self) -> int:
        """Compact once a table holds `AUTO_COMPACT` files to merge: what a command that
        writes runs does as it goes and as it ends (passed while another compacts). How
        many more files a table may take before it may be due."""
        return compaction.compact_when_due(self.path)

    # Heartbeats of running pilots.

    def beats(self, *, skip: Container[str] = (), warn: bool = True) -> dict[str, Beat]:
        """The heartbeats by run id, but for those to `skip`; an unreadable one skipped,
        with a warning naming it unless not to `warn`."""
        return heartbeat.read_beats(self.path, skip=skip, warn=warn)

    def write_beat(self, beat: Beat) -> None:
        heartbeat.write_beat(self.path, beat)

    def heartbeat(self, beat: Beat) -> Heartbeat:
        """A pilot's heartbeat, written by the process's beating thread at once (see
        `Heartbeat.first_written`), at each stage and every few seconds until stopped."""
        return Heartbeat(self.path, beat)


def compact(store: Store | Path | str | None = None, *, least: int = 2) -> dict[str, int]:
    """Merge the runs' own files of a store into one part per table, so that it reads
    fast; the files merged per table (`bk.compact`, `benchkit compact`)."""
    return Store.at(store).checked().compact(least=least)
