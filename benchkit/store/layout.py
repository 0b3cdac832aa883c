"""The store folder's layout: which folders and files a store holds, checked before
anything reads or writes there; the names of its files (a run's own, a compacted
part's) and the listing of a table's."""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

from benchkit.bench.names import NAME
from benchkit.errors import StoreError
from benchkit.store.schema import TABLES

CHECKS_NOTED = ".checks"  # in `runs/`: every check whose columns a runs file holds, a line each
COMPACT_LOCK = ".compact.lock"  # in a store: held by whoever merges files


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
    if store.exists():
        return store
    made: Path | None = None
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        # made whole beside its place, then renamed into it: a full disk or a kill
        # leaves no store without its `.gitignore`
        made = Path(tempfile.mkdtemp(prefix=f".{store.name}.", dir=store.parent))
        (made / ".gitignore").write_text(IGNORED)
        os.rename(made, store)
    except OSError as exc:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        if store.is_dir():  # made meanwhile by another benchkit
            return store
        raise StoreError(store, "", f"cannot make the store: {exc.strerror or exc}") from None
    return store


PART = "part-"  # a compacted file: many runs in one
IMPORTED = "imported-"  # an import's file: the runs of one CSV file


def _is_part(name: str) -> bool:
    return name.startswith(PART) and name.endswith(".parquet")


def part_name() -> str:
    """A new compacted file's name: when it was made, and a random tail."""
    return f"{PART}{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


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
