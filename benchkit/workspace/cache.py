"""Where benchkit keeps what it makes to reuse: mirrors, worktrees, per-pilot homes.

`$BENCHKIT_CACHE`, else `$XDG_CACHE_HOME/benchkit`, else `~/.cache/benchkit`.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    root = os.environ.get("BENCHKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "benchkit"
    )
    return Path(root)
