"""A finished pilot's record, written by a thread while the next pilot's checks run.

A launcher that runs its pilots one after another in this process (`serial`) holds
each finished pilot's record (its detail tables, then its `runs` row): a thread begins
to write it as the next pilot's checks begin, when the pilot at work only waits for its
commands. Before the next pilot's own record, and as the launch ends, the held record
is waited for and its run told (`Recorded`): runs are told in the order they ran, and
one at most is held. The held pilot's cleanup runs at once, on the pilot's path (the
environment it used is checked before the next pilot uses it); its record phase is the
time the writing took, not the wait before it. The last pilot, and a pilot interrupted
or failed on a full disk, is recorded at once; an interrupt waits until a held record
is written.
Until its row is written, the held pilot's heartbeat goes on and its `running` row
stands: a benchkit killed meanwhile leaves it to `recover`, as one killed mid-pilot.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from benchkit.records import Run
from benchkit.run.events import Recorded, Sink
from benchkit.workspace.signals import deferred_interrupts

_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-record")


@dataclass
class _Held:
    write: Callable[[], Run]  # the record written: the run as stored
    then: Callable[[], None]  # once it is written, or failed (the heartbeat stopped)
    writing: Future[Run] | None = None


class Behind:
    """The record of the pilot before, held until the next pilot's checks begin
    (`begin`), then waited for and told to `events` (`settle`). What writing it or
    telling it raised is kept in `faults`, for the launcher to hand back."""

    def __init__(self, events: Sink) -> None:
        self._events = events
        self._held: _Held | None = None
        self.faults: list[Exception] = []
        self.holds = True  # False for the last pilot: no checks after it to write beside

    def hold(self, write: Callable[[], Run], *, then: Callable[[], None]) -> None:
        """A pilot's record (`write` writes it and gives the run as stored), to be
        written once the next pilot's checks begin; `then` once it is done."""
        if self._held is not None:
            raise RuntimeError("a record is held already: settle it first")
        self._held = _Held(write=write, then=then)

    def begin(self) -> None:
        """The held record's writing begun by the thread, if it is not yet."""
        held = self._held
        if held is not None and held.writing is None:
            held.writing = _WRITER.submit(held.write)

    def settle(self) -> None:
        """The held record written (begun now if it was not) and its run told; what
        either raised is kept in `faults`. A Ctrl-C meanwhile waits until it is done."""
        with deferred_interrupts():
            self.begin()
            held, self._held = self._held, None
            if held is None:
                return
            assert held.writing is not None
            try:
                run = held.writing.result()
            except Exception as exc:  # its `running` row alone stays: it reads as crashed
                self.faults.append(exc)
                return
            finally:
                held.then()
            try:
                self._events(Recorded(run=run))
            except Exception as exc:  # a sink's fault: the run is recorded all the same
                self.faults.append(exc)
