"""The cache's trash is emptied whatever is in it (issue 36, case 14)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchkit.workspace.cache import TRASH, cache_dir, discard, empty_trash, trash_emptied

DEPTH = 3000


def _deep(top: Path, depth: int) -> None:
    """A folder `depth` levels deep under `top`, made as an arm would (one level at a
    time, each from the last: no path reaches the bottom, past PATH_MAX)."""
    top.mkdir(parents=True)
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=here)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = below
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, dir_fd=here))
    finally:
        os.close(here)


def test_a_folder_3000_levels_deep_is_removed_from_the_trash(tmp_path: Path) -> None:
    """Seen before: shutil.rmtree's RecursionError, ignored: the folder stayed in the
    trash for ever, and nothing said so."""
    left = cache_dir() / TRASH / "pilot-left-by-a-killed-benchkit"
    worktree = tmp_path / "worktree"  # and one benchkit discards as it is done with it
    try:
        _deep(left, DEPTH)
        assert empty_trash() == 1
        trash_emptied()
        assert not left.exists()
        _deep(worktree, DEPTH)
        discard(worktree)
        trash_emptied()
        assert not worktree.exists() and list((cache_dir() / TRASH).iterdir()) == []
    finally:  # a failure leaves nothing pytest's own cleanup could not remove
        subprocess.run(["rm", "-rf", "--", str(cache_dir() / TRASH), str(worktree)], check=False)
