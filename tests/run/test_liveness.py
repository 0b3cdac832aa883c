"""The one liveness rule of runs, claims and ledgers, on real processes."""

from __future__ import annotations

import os
import socket
import subprocess
from datetime import UTC, datetime, timedelta

from benchkit.run.liveness import lives
from benchkit.store.heartbeat import STALE_AFTER_S, Beat
from benchkit.workspace.processes import process_start


def _beat(age_s: float, now: datetime) -> Beat:
    at = (now - timedelta(seconds=age_s)).isoformat()
    return Beat(run_id="r", stage="verify", host="elsewhere", pid=1, started_at=at, updated_at=at)


def test_on_this_host_an_owner_lives_while_its_own_process_does() -> None:
    here, me = socket.gethostname(), os.getpid()
    assert lives(here, me, process_start(me))
    assert not lives(here, me, (process_start(me) or 0) + 1)  # the pid, reused by another
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert not lives(here, gone.pid, None)


def test_on_another_host_a_heartbeat_tells_and_without_one_the_owner_is_honoured() -> None:
    now = datetime.now(UTC)
    assert lives("elsewhere", 1, None)  # a claim, a ledger: nothing here can tell
    assert lives("elsewhere", 1, None, beats=True, beat=_beat(1.0, now), now=now)
    stale = _beat(STALE_AFTER_S + 1, now)
    assert not lives("elsewhere", 1, None, beats=True, beat=stale, now=now)
    assert not lives("elsewhere", 1, None, beats=True, beat=None, now=now)  # never written
