"""Files written whole: under a temporary name in their own folder, then renamed.

The temporary file is made as any file is, with the mode the user's umask gives (not
`mkstemp`'s owner-only 0600): a store a lab shares reads for all its members.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

TRIES = 100  # names tried before giving up: each random, a clash is rare


def temporary_file(folder: Path, prefix: str, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new file in `folder` under a name no one else holds: its open handle (for
    writing) and its path. Raises what `os.open` raises (FileNotFoundError, ENOSPC)."""
    for _ in range(TRIES):
        path = folder / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def replace_whole(path: Path, text: str) -> None:
    """`path` holding `text`, written under a temporary name beside it and renamed
    over it: a reader sees the old text or the new, never half of one."""
    handle, tmp = temporary_file(path.parent, f".{path.stem}.")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
