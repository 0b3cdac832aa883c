"""The cache's locks: taken shared by what reads a cached folder (a pilot's copy of
an environment, the check at its end), alone by what makes or removes it; one
waiting to take it alone goes before the shared ones that come after it."""

from __future__ import annotations

import fcntl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchkit.workspace.cache import locked
from tests.helpers import PATIENCE_S


def _gate_closed(path: Path) -> bool:
    """Whether someone waiting to take the lock alone holds its gate."""
    with open(path.with_suffix(".gate"), "a") as gate:
        try:
            fcntl.flock(gate, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(gate, fcntl.LOCK_UN)
        return False


def test_readers_share_the_lock_and_a_waiting_writer_goes_before_later_ones(
    tmp_path: Path,
) -> None:
    """flock alone lets a reader in while a writer waits: pilots whose copies and
    checks overlap would keep a drop of a tampered environment waiting for ever
    (seen without the gate: a later reader came in while the writer waited; this test
    then found no one at the gate)."""
    path = tmp_path / "envs" / "venv-key"
    order: list[str] = []
    first_in, let_go = threading.Event(), threading.Event()
    asking = {name: threading.Event() for name in ("first reader", "second reader", "later reader")}

    def read(name: str, hold: bool) -> None:
        asking[name].set()
        with locked(path, shared=True):
            order.append(name)
            if hold:
                first_in.set()
                let_go.wait(PATIENCE_S)

    def write() -> None:
        with locked(path):
            order.append("writer")

    with ThreadPoolExecutor(4) as threads:
        try:
            first = threads.submit(read, "first reader", True)
            assert first_in.wait(PATIENCE_S)
            threads.submit(read, "second reader", False).result(timeout=PATIENCE_S)  # beside
            writer = threads.submit(write)
            deadline = time.monotonic() + PATIENCE_S
            while not _gate_closed(path):  # the writer at the gate, waiting for the first
                assert time.monotonic() < deadline, "the writer never took the gate"
                time.sleep(0.01)
            later = threads.submit(read, "later reader", False)
            assert asking["later reader"].wait(PATIENCE_S)
            time.sleep(0.5)  # at the gate by now, or it would be in
            assert order == ["first reader", "second reader"]  # neither writer nor later in
        finally:
            let_go.set()
        for done in (first, writer, later):
            done.result(timeout=PATIENCE_S)
    assert order == ["first reader", "second reader", "writer", "later reader"]
