"""Whether a path a bench or an arm chose stays inside a tree, every link on the way
followed: what benchkit reads from or removes in a tree an arm touched goes through
here, so that a link the arm made (`.bench -> /home/user`, `report.xml ->
/proc/self/environ`) leads nowhere outside it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


def stays_in(tree: Path, path: Path) -> bool:
    """`path` (in `tree`, or relative to it) is under `tree` once every link in it is
    followed; a path that does not exist yet is judged by what exists of it."""
    root = _real(tree)
    where = (tree / path).resolve()  # strict=False: what is missing is taken as written
    return where == root or where.is_relative_to(root)


@lru_cache(maxsize=64)
def _real(tree: Path) -> Path:
    """A tree's own real path, resolved once a process: a tree benchkit made, which no
    arm can move (were it made a link since, what it leads to is no longer under the
    path kept, and nothing passes)."""
    return tree.resolve()
