"""Recovery: runs left `running` by a benchkit that was killed become `crashed`.

A pilot writes its `runs` row as `running` when it starts (in a serial launch by a
thread, before its first command in its sandbox), with the process id, host and
process start time of the benchkit running it, and keeps a ledger of the process
groups it starts. The next `benchkit pilot` or `benchkit runs` looks for such rows
whose process is gone, stops the groups their ledger names that still run (by start
time, or by the run's mark in their environment: never a reused pid), keeps what
their worktree holds as their patch (when no secret could be in it), removes the
pilot's folder (worktree, HOME, tmp, environment copies), marks them `crashed`, and
says so in a warning. A run of another host is `crashed` once its heartbeat (see
`benchkit.store.heartbeat`) stopped for three promised intervals; its folder, on that
host, is left alone.
"""

from __future__ import annotations

import os
import socket
import warnings
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from benchkit.run.liveness import lives
from benchkit.store.heartbeat import Beat
from benchkit.store.store import Store
from benchkit.workspace.cache import discard
from benchkit.workspace.git import diff, snapshot
from benchkit.workspace.proc import ProcError
from benchkit.workspace.processes import alive, carries, group_members, killed
from benchkit.workspace.sandbox import PILOT_MARK, PROCESSES, SECRETS


class RecoveryWarning(UserWarning):
    """A run a killed benchkit left, now marked crashed."""


def recover(store: Store | Path | str | None = None) -> list[str]:
    """Mark as `crashed` the runs left `running` by a benchkit that is gone (killed
    with SIGKILL, say), stop what they left running and remove their folder; keep
    their partial patch when no secret can be in it. Their ids."""
    store = Store.at(store).checked()
    return _recover(store, store.read("runs"))


def recover_then_read(store: Store) -> pl.DataFrame:
    """`recover`, then the `runs` table as it now stands: read once when no run was
    left running by a benchkit that is gone (one read per command). A store that
    cannot be written (a read-only mount, another user's) is read, never written:
    its crashed runs read as `crashed` in what is returned only, and nothing they left
    is touched."""
    runs = store.read("runs")
    if not _writable(store.path):
        return _crashed_as_read(store, runs)
    return store.read("runs") if _recover(store, runs) else runs


def _writable(folder: Path) -> bool:
    """Whether benchkit may write in the store's folder: not on a read-only mount
    (which root's rights do not pass), and by its rights."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return True  # no folder yet: nothing to recover
    return not read_only and os.access(folder, os.W_OK | os.X_OK)


def _gone(store: Store, runs: pl.DataFrame) -> list[tuple[dict[str, object], bool, Beat | None]]:
    """The runs left `running` by a benchkit that is gone, each with whether it was
    this host's and its last heartbeat."""
    if runs.is_empty():
        return []
    here = socket.gethostname()
    beats = store.beats()
    now = datetime.now(UTC)
    found = []
    for row in runs.filter(pl.col("status") == "running").to_dicts():
        beat = beats.get(row["run_id"])
        owner = (row["host"], row["pid"], row["process_start"])
        if not lives(*owner, beats=True, beat=beat, now=now):
            found.append((row, row["host"] == here, beat))
    return found


def _stopped(row: dict[str, object], mine: bool, beat: Beat | None) -> str:
    """How the run's benchkit stopped, in words (`mine`: on this host)."""
    if mine:
        return f"benchkit (pid {row['pid']}) stopped during the run"
    last = f"last at {beat.updated_at}" if beat else "never written"
    return f"benchkit on {row['host']} (pid {row['pid']}): its heartbeat stopped ({last})"


def _crashed_as_read(store: Store, runs: pl.DataFrame) -> pl.DataFrame:
    """The runs as a read-only store holds them, those a gone benchkit left `running`
    shown as `crashed`, and said: nothing written, nothing stopped or removed."""
    crashed = {}
    for row, mine, beat in _gone(store, runs):
        detail = f"{_stopped(row, mine, beat)}; the store is read-only: not recorded"
        crashed[row["run_id"]] = detail
        message = f"run {row['run_id']}: {detail}, and what it left is left as it was"
        warnings.warn(message, RecoveryWarning, stacklevel=3)
    if not crashed:
        return runs
    hit = pl.col("run_id").is_in(list(crashed))
    return runs.with_columns(
        status=pl.when(hit).then(pl.lit("crashed")).otherwise(pl.col("status")),
        failure_kind=pl.when(hit).then(pl.lit("crash")).otherwise(pl.col("failure_kind")),
        failure_detail=pl.when(hit)
        .then(pl.col("run_id").replace_strict(crashed, default=None))
        .otherwise(pl.col("failure_detail")),
    )


def _recover(store: Store, runs: pl.DataFrame) -> list[str]:
    crashed = []
    for row, mine, beat in _gone(store, runs):
        # another machine's (its heartbeat stopped): its folder is that machine's
        said = _clean_up(row) if mine else "its folder, on that machine, was left as it was"
        detail = _stopped(row, mine, beat)
        store.update_run(
            str(row["run_id"]),
            {
                "status": "crashed",
                "failure_kind": "crash",
                "failure_detail": f"{detail}; {said}",
                "retryable": True,
                "worktree": None,
            },
        )
        message = f"run {row['run_id']}: {detail}: now crashed; {said}"
        warnings.warn(message, RecoveryWarning, stacklevel=2)
        crashed.append(str(row["run_id"]))
    return crashed


def _clean_up(row: dict[str, object]) -> str:
    """Stop what the run left running, keep its patch if it may, remove its folder;
    what was done, in words."""
    worktree = Path(str(row["worktree"])) if row.get("worktree") else None
    if worktree is None or worktree.name != "tree":
        return "nothing of it was left to clean"
    folder, run_id = worktree.parent, str(row["run_id"])
    stopped = stop_processes(folder / PROCESSES, run_id)
    patch = _salvage(folder, row)
    discard(folder)
    return f"stopped {stopped} process{'es' if stopped != 1 else ''} it left; {patch}"


def _salvage(folder: Path, row: dict[str, object]) -> str:
    """The partial patch of a crashed run, from its worktree, unless the arm had
    secrets (their values are not known to this command: the patch is not kept)."""
    worktree, git_dir = folder / "tree", folder / "git"
    if not (worktree.is_dir() and (git_dir / "HEAD").exists()):
        return "it had no worktree yet"
    names = (folder / SECRETS).read_text().split() if (folder / SECRETS).exists() else []
    if names:
        return f"its patch was not kept: the arm had secrets ({', '.join(names)})"
    base = str(row["base_sha"])
    try:
        tree = snapshot(worktree, git_dir, base)
        patch = diff(git_dir, base, tree, context=3, binary=True)
    except ProcError:
        return "its worktree could not be read: no patch kept"
    artifacts = Path(str(row["artifacts"]))
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "agent.patch").write_text(patch, errors="surrogateescape")
    return "kept its partial patch"


def stop_processes(ledger: Path, run_id: str) -> int:
    """SIGKILL every process group of the ledger still running: a group whose leader is
    the process that started then, or whose members carry the run's mark. Their count."""
    if not ledger.exists():
        return 0
    victims: set[int] = set()
    mark = f"{PILOT_MARK}={run_id}".encode()
    for line in ledger.read_text().splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        pgid, start = int(parts[0]), None if parts[1] == "None" else int(parts[1])
        members = group_members(pgid)
        if start is not None and alive(pgid, start):
            victims.update(members)
        else:
            victims.update(m for m in members if carries(m, mark))
    return killed(victims)
