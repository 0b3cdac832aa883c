"""Recovery: runs left `running` by a benchkit that was killed become `crashed`.

A pilot writes its `runs` row as `running` when it starts, with the process id, host
and process start time of the benchkit running it. The next `benchkit pilot` or
`benchkit runs` looks for such rows whose process is gone, keeps what their worktree
still holds as their patch, removes the worktree, and marks them `crashed`.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import polars as pl

from benchkit.store.parquet import read_table, store_path, update_run
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.environment import env_copy_of
from benchkit.workspace.git import diff, git, remove_worktree, snapshot
from benchkit.workspace.proc import ProcError, alive


def recover(store: Path | str | None = None) -> list[str]:
    """Mark as `crashed` the runs left `running` by a benchkit that is gone (killed
    with SIGKILL, say); keep what their worktree still holds as their patch. Their ids."""
    store = store_path(store)
    runs = read_table(store, "runs")
    if runs.is_empty():
        return []
    here = socket.gethostname()
    crashed = []
    for row in runs.filter(pl.col("status") == "running").to_dicts():
        if row["host"] != here or alive(row["pid"], row["process_start"]):
            continue  # still at work, or on a machine this one cannot see into
        _salvage(row)
        update_run(
            store,
            row["run_id"],
            {
                "status": "crashed",
                "failure_kind": "crash",
                "failure_detail": f"benchkit (pid {row['pid']}) stopped during the run",
                "retryable": True,
                "worktree": None,
            },
        )
        crashed.append(row["run_id"])
    return crashed


def _salvage(row: dict[str, object]) -> None:
    """The partial patch of a crashed run, from its worktree, which is then removed
    with all else the run made in the cache: its baseline's worktree, both copies of
    its environment, and its HOME."""
    worktree = Path(str(row["worktree"])) if row.get("worktree") else None
    if worktree is None:
        return
    base_tree = worktree.with_name(f"{worktree.name}-base")
    for folder in (
        env_copy_of(worktree),
        env_copy_of(base_tree),
        cache_dir() / "homes" / worktree.name,
    ):
        shutil.rmtree(folder, ignore_errors=True)
    if base_tree.is_dir():
        _remove(base_tree)
    if not worktree.is_dir():
        return
    try:
        mirror = _mirror_of(worktree)
        tree = snapshot(worktree)
        patch = diff(mirror, str(row["base_sha"]), tree, context=3, binary=True)
        artifacts = Path(str(row["artifacts"]))
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "agent.patch").write_text(patch, errors="surrogateescape")
        remove_worktree(mirror, worktree)
    except ProcError:
        shutil.rmtree(worktree, ignore_errors=True)


def _mirror_of(worktree: Path) -> Path:
    return Path(
        git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=worktree).strip()
    )


def _remove(worktree: Path) -> None:
    """A worktree removed from its repository, or at least from the disk."""
    try:
        remove_worktree(_mirror_of(worktree), worktree)
    except ProcError:
        shutil.rmtree(worktree, ignore_errors=True)
