"""Deadlines for slow exports."""

from __future__ import annotations

import time


class Deadline:
    """A point in time some seconds from now."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self._end
