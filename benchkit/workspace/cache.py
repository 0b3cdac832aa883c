"""Where benchkit keeps what it makes to reuse: mirrors, worktrees, per-pilot homes.

`$BENCHKIT_CACHE`, else `$XDG_CACHE_HOME/benchkit`, else `~/.cache/benchkit`.

A folder benchkit is done with (a pilot's worktree, HOME and environment copy) is
`discard`ed: renamed into `trash/` at once, and removed by a thread while the next
pilot works. A command's process does not wait for that thread as it exits: what it
has not removed yet is handed to `rm -rf`, started on its own, which the command
does not wait for (the last pilot's folder: 15 to 20 ms of every command's exit).
Benchkit used as a library waits for the thread at its exit. What a killed process
left in `trash/` is removed by the next one (`empty_trash`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchkit.workspace.processes import ends_at_once

TRASH = "trash"


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


class _Sweeper:
    """The process's one thread that removes the trash, in the order it was
    discarded; a daemon, so that the exit of a command's process does not wait for
    it (see `at_exit`)."""

    def __init__(self) -> None:
        self.forked()
        self._exit_told = False  # `at_exit` registered (once a process)

    def forked(self) -> None:
        """Made anew (in a forked child: no thread, and what the parent left is its own)."""
        self._lock = threading.Condition()
        self._left: list[Path] = []  # discarded, not removed yet: the first is at work
        self._thread: threading.Thread | None = None
        self._handed: list[subprocess.Popen[bytes]] = []  # kept: none said still running

    def sweep(self, path: Path) -> None:
        with self._lock:
            self._left.append(path)
            if self._thread is None or not self._thread.is_alive():
                if not self._exit_told:
                    atexit.register(self.at_exit)
                    self._exit_told = True
                self._thread = threading.Thread(
                    target=self._sweep_on, name="benchkit-trash", daemon=True
                )
                self._thread.start()
            self._lock.notify_all()

    def _sweep_on(self) -> None:
        while True:
            with self._lock:
                while not self._left:
                    self._lock.wait()
                path = self._left[0]
            with contextlib.suppress(Exception):  # not removed: the next benchkit's
                removed(path)
            with self._lock:
                self._left.remove(path)
                self._lock.notify_all()

    def emptied(self) -> None:
        """Every folder discarded so far removed."""
        with self._lock:
            while self._left:
                self._lock.wait()

    def at_exit(self) -> None:
        """What is left, handed to `rm -rf` in a command's process that ends at once
        (started in a session of its own, not waited for, its output nowhere; what it
        cannot remove, the next benchkit does); else removed before the process ends."""
        if not ends_at_once():
            self.emptied()
            return
        with self._lock:
            left = [os.fspath(path) for path in self._left]
        if left:
            with contextlib.suppress(OSError):  # no `rm`: the next benchkit removes them
                rm = subprocess.Popen(
                    ["rm", "-rf", "--", *left],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                self._handed.append(rm)  # a Popen let go while it runs warns that it does


_SWEEPER = _Sweeper()
os.register_at_fork(after_in_child=_SWEEPER.forked)


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
    _SWEEPER.sweep(target)


def empty_trash() -> int:
    """Remove, by the thread, what a killed process left in `trash/`; how many."""
    try:
        left = list((cache_dir() / TRASH).iterdir())
    except OSError:
        return 0
    for path in left:
        _SWEEPER.sweep(path)
    return len(left)


def trash_emptied() -> None:
    """Wait until every folder discarded so far is removed."""
    _SWEEPER.emptied()
