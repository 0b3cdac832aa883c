"""Heartbeats: written by one thread of the process, never on the pilot's path."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchkit.store.heartbeat import Beat, Heartbeat, read_beats

DEADLINE_S = 60.0  # a busy machine's thread wakes late; a stalled one never does


def _beat(run_id: str) -> Beat:
    now = datetime.now(UTC).isoformat()
    return Beat(run_id=run_id, stage="start", host="here", pid=1, started_at=now, updated_at=now)


def _until(store: Path, run_id: str, stage: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while read_beats(store).get(run_id, _beat("")).stage != stage:
        assert time.monotonic() < deadline, f"{run_id} never beat {stage}"
        time.sleep(0.01)


def test_every_pilots_heartbeat_is_written_by_one_thread_which_stops_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHKIT_HEARTBEAT_S", "0.02")
    hearts = [Heartbeat(tmp_path, _beat(f"r{n}")) for n in range(3)]
    beating = [t for t in threading.enumerate() if t.name == "benchkit-heartbeat"]
    assert len(beating) == 1  # one for the process, not one a pilot
    for n, heart in enumerate(hearts):
        assert heart.first_written(DEADLINE_S)
        assert read_beats(tmp_path)[f"r{n}"].stage == "start"
    hearts[1].stage("verify")
    _until(tmp_path, "r1", "verify")
    first = read_beats(tmp_path)["r0"].updated_at
    deadline = time.monotonic() + DEADLINE_S
    while read_beats(tmp_path)["r0"].updated_at == first:  # beaten again, unasked
        assert time.monotonic() < deadline, "r0 was not beaten again"
        time.sleep(0.01)
    for heart in hearts:
        heart.stop()
    time.sleep(0.2)  # ten intervals: a beat due meanwhile would have written the file back
    assert read_beats(tmp_path) == {}
    assert beating[0].is_alive()  # and ready for the next pilot's
    later = Heartbeat(tmp_path, _beat("r3"))
    assert later.first_written(DEADLINE_S)
    assert set(read_beats(tmp_path)) == {"r3"}
    later.stop()


@pytest.mark.parametrize("said", ["abc", "inf", "-1"])
def test_a_heartbeat_interval_that_is_no_number_of_seconds_beats_every_5_s(
    said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$BENCHKIT_HEARTBEAT_S` that is no positive number of seconds stops no thread:
    each pilot's first beat is written, and the next pilot's too."""
    monkeypatch.setenv("BENCHKIT_HEARTBEAT_S", said)
    for run_id in ("first", "next"):
        heart = Heartbeat(tmp_path, _beat(run_id))
        assert heart.first_written(DEADLINE_S)
        assert read_beats(tmp_path)[run_id].stage == "start"
        heart.stop()
