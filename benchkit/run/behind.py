"""A pilot's record written behind it, while the next pilot waits.

A launcher that runs its pilots one after another in this process (`serial`) hands
each pilot's record (its detail tables, its last row, its cleanup) to a thread, and
goes on to the next pilot; the thread writes it once that pilot's checks begin: the
record is Python and file work, which the checks' wait leaves room for, where the
pilot's own start would be slowed by it. One record is pending at a time: the next
one waits for it, and so does the launcher before it ends, an interrupted one
included. A run is told `Recorded` (in the caller's thread) as the next pilot hands
its own record over, in the order the pilots ran. A process killed meanwhile leaves
the pending run's `running` row, which reads as crashed, as a pilot killed while it
records does.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from benchkit.records import Run
from benchkit.workspace.signals import deferred_interrupts

_RECORDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-record")


class Behind:
    """The records being written behind the pilots: `record` hands one over (once the
    one before it is written and told), `start` has the thread begin it (as the next
    pilot's checks begin: while that pilot waits, not while its own work runs), and
    `settle` waits for it and tells it. The runs as recorded, and what recording them
    raised, in the order the pilots ran."""

    def __init__(self) -> None:
        self._handed: tuple[Callable[[], Run], Callable[[Run], None]] | None = None
        self._pending: tuple[Future[Run], Callable[[Run], None]] | None = None
        self.runs: list[Run] = []
        self.faults: list[Exception] = []

    def record(self, record: Callable[[], Run], told: Callable[[Run], None]) -> None:
        """`record` to be run by the thread once `start`ed; its run told to `told` once
        `settle` sees it."""
        self.settle()
        self._handed = (record, told)

    def start(self) -> None:
        """The record handed over, begun by the thread."""
        if self._handed is not None:
            record, told = self._handed
            self._handed = None
            self._pending = (_RECORDER.submit(record), told)

    def settle(self) -> None:
        """The record handed over, begun if it was not, waited for, and its run told."""
        self.start()
        if self._pending is None:
            return
        future, told = self._pending
        with deferred_interrupts():  # an interrupt waits until the run is recorded
            self._pending = None
            try:
                run = future.result()
            except Exception as exc:  # recorded as far as it could be; the pilot's fault
                self.faults.append(exc)
                return
        self.runs.append(run)
        told(run)
