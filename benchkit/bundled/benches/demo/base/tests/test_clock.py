import time
from pathlib import Path

from tally.clock import Deadline

# A timing test: it fails when the machine stalls between two lines. To make it
# fail once on purpose, create `.flake-once` at the repository's root; the next
# run of this file consumes it, stalls, and fails; the run after passes again.
STALL_TOKEN = Path(__file__).resolve().parents[1] / ".flake-once"


def _maybe_stall(seconds: float) -> None:
    if STALL_TOKEN.exists():
        STALL_TOKEN.unlink()
        time.sleep(seconds)


def test_deadline_not_expired_right_after_start() -> None:
    deadline = Deadline(0.3)
    _maybe_stall(0.4)
    assert not deadline.expired()


def test_remaining_never_negative() -> None:
    deadline = Deadline(0.0)
    assert deadline.remaining() == 0.0
    assert deadline.expired()
