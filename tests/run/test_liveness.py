"""The one liveness rule of runs, claims and ledgers, on real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchkit.run.liveness import lives
from benchkit.store.heartbeat import STALE_AFTER_S, Beat
from benchkit.workspace.processes import alive, process_start, stop_marked


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


def test_a_process_stop_marked_has_ended_when_it_returns(tmp_path: Path) -> None:
    """SIGKILL is delivered, not done: a process with memory to give back runs on
    for milliseconds after it (512 MB: about 10 ms here). `stop_marked` returns once
    what it stopped has ended, so that what it stopped cannot still write to a folder
    its caller removes next (the build sweep of `benchkit env list`)."""
    code = "b = bytearray(512 * 2**20); print('ready', flush=True); import time; time.sleep(3600)"
    big = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        env={**os.environ, "BENCHKIT_TEST_MARK": tmp_path.name},
        text=True,
    )
    mark = f"BENCHKIT_TEST_MARK={tmp_path.name}"
    try:
        assert big.stdout is not None and big.stdout.readline() == "ready\n"
        started = process_start(big.pid)
        assert stop_marked(mark.encode()) == 1
        assert not alive(big.pid, started), "the stopped process still runs"
    finally:
        big.kill()
        big.wait()
