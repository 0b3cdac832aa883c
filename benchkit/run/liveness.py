"""The one rule for whether the benchkit that owns something still lives: a run left
`running`, a claim on a unit of a run set, a matrix's ledger.

An owner is a process of a host. On this host it lives while its process does, told
by its start time (a pid alone is reused by the kernel). On another host nothing here
can see its process: an owner that keeps a heartbeat (a running pilot) lives while the
heartbeat is fresh (younger than three promised intervals); one that keeps none (a
claim, a ledger) is taken to live, and is honoured.
"""

from __future__ import annotations

import socket
from datetime import datetime

from benchkit.store.heartbeat import STALE_AFTER_S, Beat
from benchkit.workspace.processes import alive


def lives(
    host: str,
    pid: int,
    process_start: int | None,
    *,
    beats: bool = False,
    beat: Beat | None = None,
    now: datetime | None = None,
) -> bool:
    """Whether the owner (`host`, `pid` started at `process_start`) still lives; with
    `beats`, it keeps a heartbeat, `beat` being its last (None: never written)."""
    if host == socket.gethostname():
        return alive(pid, process_start)
    if not beats:
        return True
    return beat is not None and now is not None and beat.age_s(now) < STALE_AFTER_S
