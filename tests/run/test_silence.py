"""When the Ray launcher calls its cluster gone: asked at most once an `ASK_S`, gone
after `LOST_S` without an answer, and an answer meanwhile starts the count again."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from benchkit.run.cluster import ASK_S, LOST_S, Silence, _started_before
from benchkit.workspace.processes import process_start


class Cluster:
    """A cluster that answers while `up`, counting the asks."""

    def __init__(self) -> None:
        self.up = True
        self.asks = 0

    def ask(self, where: str, timeout_s: float) -> str | None:
        self.asks += 1
        return None if self.up else "connection refused"


def test_a_cluster_that_answers_is_never_gone_and_is_asked_once_an_interval() -> None:
    cluster = Cluster()
    silence = Silence("10.0.0.1:6379", ask=cluster.ask)
    assert not any(silence.gone(n * ASK_S / 10) for n in range(200))
    assert cluster.asks == 20


def test_a_silent_cluster_is_gone_after_lost_s_and_an_answer_starts_again() -> None:
    cluster = Cluster()
    silence = Silence("10.0.0.1:6379", ask=cluster.ask)
    cluster.up = False
    assert not silence.gone(0.0)
    assert not silence.gone(LOST_S - ASK_S)
    cluster.up = True  # a GCS restarted
    assert not silence.gone(LOST_S)
    cluster.up = False
    assert not silence.gone(LOST_S + ASK_S)
    assert not silence.gone(2 * LOST_S)  # LOST_S - ASK_S since the first unanswered
    assert silence.gone(2 * LOST_S + ASK_S)
    assert silence.why == "connection refused"


def test_a_cluster_whose_address_cannot_be_told_is_not_watched() -> None:
    cluster = Cluster()
    cluster.up = False
    silence = Silence(None, ask=cluster.ask)
    assert silence.heard() and not silence.gone(10 * LOST_S) and cluster.asks == 0


def test_a_worker_is_the_process_holding_its_pid_only_if_that_began_before_its_pilot() -> None:
    # a beat names its worker's pid; a process that began after the pilot did holds
    # that pid now (the kernel reuses pids) and is never the one stopped
    start = process_start(os.getpid())
    assert start is not None
    now = datetime.now(UTC)
    assert _started_before(start, now.isoformat())
    assert not _started_before(start, (now - timedelta(days=3650)).isoformat())
