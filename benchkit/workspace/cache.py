"""Where benchkit keeps what it makes to reuse: mirrors, worktrees, per-pilot homes.

`$BENCHKIT_CACHE`, else `$XDG_CACHE_HOME/benchkit`, else `~/.cache/benchkit`.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir() -> Path:
    root = os.environ.get("BENCHKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "benchkit"
    )
    return Path(root)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside `path`, so that pilots in parallel processes share what
    the cache holds (a mirror, an environment) safely."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
