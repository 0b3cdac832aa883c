"""Where benchkit keeps what it makes to reuse: mirrors, worktrees, per-pilot homes.

`$BENCHKIT_CACHE`, else `$XDG_CACHE_HOME/benchkit`, else `~/.cache/benchkit`.

A folder benchkit is done with (a pilot's worktree, HOME and environment copy) is
`discard`ed: renamed into `trash/` at once, and removed by a thread while the next
pilot works; the process waits for that thread before it exits. What a killed
process left in `trash/` is removed by the next one (`empty_trash`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

TRASH = "trash"
_sweeper: ThreadPoolExecutor | None = None  # one thread; joined when the process exits
_SWEEPER = threading.Lock()


def cache_dir() -> Path:
    root = os.environ.get("BENCHKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "benchkit"
    )
    return Path(root)


@contextmanager
def locked(path: Path, *, shared: bool = False) -> Iterator[None]:
    """A lock beside `path`, so that pilots in parallel processes share what the cache
    holds (a mirror, an environment) safely: exclusive, to make or remove it; `shared`
    with the others that only read it (a copy of it made, a check of it). A gate
    beside it lets one waiting to take it exclusive in before the shared ones that
    come after it: flock alone lets readers in while a writer waits, so readers that
    overlap would keep it waiting for ever."""
    path.parent.mkdir(parents=True, exist_ok=True)
    how = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    gate_path, lock_path = path.with_suffix(".gate"), path.with_suffix(".lock")
    with open(gate_path, "a") as gate, open(lock_path, "w") as handle:
        fcntl.flock(gate, how)
        fcntl.flock(handle, how)
        if shared:
            fcntl.flock(gate, fcntl.LOCK_UN)  # in: whoever waits at the gate goes next
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def locked_if_free(path: Path) -> Iterator[bool]:
    """`locked`, taken alone only when no one holds it or waits at its gate (never
    waits): whether it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with held_if_free(path.with_suffix(".gate")) as at_gate:
        if not at_gate:
            yield False
            return
        with held_if_free(path.with_suffix(".lock")) as free:
            yield free


@contextmanager
def held_if_free(lock: Path) -> Iterator[bool]:
    """An exclusive lock on the file `lock`, taken only when no one holds it, shared
    or not (never waits): whether it was."""
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def removed(path: Path) -> None:
    """A folder removed whatever its depth: `shutil.rmtree` recurses once a level (an
    arm's folder 3000 levels deep is a RecursionError, and past PATH_MAX no path
    reaches it), so what it leaves goes to `rm -rf`, which walks any depth."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except (OSError, RecursionError):
        argv = ["rm", "-rf", "--", os.fspath(path)]
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _sweep(path: Path) -> None:
    global _sweeper
    with _SWEEPER:  # one thread, whichever of benchkit's threads discards first
        if _sweeper is None:
            _sweeper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-trash")
        _sweeper.submit(removed, path)


def discard(path: Path) -> None:
    """Remove a folder benchkit is done with: renamed into the cache's `trash/` (the
    same file system: one rename), then removed by a thread; a file, or a folder
    that cannot be moved, is removed at once."""
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)
        return
    bin_ = cache_dir() / TRASH
    target = bin_ / f"{path.name}-{uuid.uuid4().hex[:8]}"
    try:
        bin_.mkdir(parents=True, exist_ok=True)
        os.rename(path, target)
    except OSError:  # another file system, say: the slow way, now
        removed(path)
        return
    _sweep(target)


def empty_trash() -> int:
    """Remove, by the thread, what a killed process left in `trash/`; how many."""
    try:
        left = list((cache_dir() / TRASH).iterdir())
    except OSError:
        return 0
    for path in left:
        _sweep(path)
    return len(left)


def trash_emptied() -> None:
    """Wait until every folder discarded so far is removed."""
    global _sweeper
    with _SWEEPER:
        sweeper, _sweeper = _sweeper, None
    if sweeper is not None:
        sweeper.shutdown(wait=True)
