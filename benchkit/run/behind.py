"""A finished pilot's record, written by a thread while the next pilot starts, and
its cleanup after it.

A launcher that runs its pilots one after another in this process (`serial`) hands
each finished pilot's record (its detail tables, then its `runs` row) to a thread at
once, as the pilot ends: the thread writes it, then (in bubblewrap: `after`) removes
the pilot's folders, while the next pilot starts. Writing a record holds Python's
lock for much of its time, so it gets on as the next pilot waits for its commands
(git's, the checks at base); that pilot is not held up for it. Its run is told
(`Recorded`) at the first of the next pilot's stages to begin once both are done
("written", below), and at the latest as
the next pilot's arm begins (an arm that only applies a patch, `Arm.instant`: as its
checks begin), or as the launch ends: runs are told in the order they
ran, and one record at most is held. Telling it is no phase of the next pilot's. Its
record phase is the time from its record stage's start until its tables were
written. The last pilot, and one interrupted or failed on a full disk, is recorded at
once; an interrupt waits until a held record is written. Until its record is written
(and the cleanup after it done), the pilot's heartbeat goes on, stopped then by the
thread, not on the next pilot's path (and until its row is written, its `running`
row stands).

Each pilot's `running` row is written by a thread of its own, beside the record of the
pilot before it, from the pilot's start: the pilot waits for it as its first command
in its sandbox begins (its checks at base, where it runs them, else its arm; recovery
stops what a killed benchkit's sandboxes left, by a run's row: what writing it raised,
a full store say, fails the pilot there, before its checks at base or its arm cost
anything) and before its own record is written (never under it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from benchkit.records import Run
from benchkit.run.events import Recorded, Sink
from benchkit.workspace.signals import deferred_interrupts

_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-record")
_ROWS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-running-row")


@dataclass(frozen=True)
class _Held:
    writing: Future[Run]  # the run as written
    after: list[Exception]  # what came after the write (the cleanup, `then`) raised


class Behind:
    """The record of the pilot before, written by a thread from the moment it is held,
    then waited for and told to `events` (`settle`). What writing it, telling it or
    what comes `then` raised is kept in `faults`, for the launcher to hand back."""

    def __init__(self, events: Sink) -> None:
        self._events = events
        self._held: _Held | None = None
        self.faults: list[Exception] = []
        self.holds = True  # False for the last pilot: no pilot after it to write beside

    def hold(
        self,
        write: Callable[[], Run],
        *,
        then: Callable[[], None],
        after: Callable[[], None] = lambda: None,
    ) -> None:
        """A pilot's record, begun now by the thread (`write` writes it and gives the
        run as stored), and `after` it by the thread too, whatever came (the pilot's
        cleanup: what it raises is kept in `faults`, the run told all the same), then
        `then` (the pilot's heartbeat stopped), the same way."""
        if self._held is not None:
            raise RuntimeError("a record is held already: settle it first")
        raised: list[Exception] = []

        def written() -> Run:
            try:
                return write()
            finally:
                for step in (after, then):
                    try:
                        step()
                    except Exception as exc:
                        raised.append(exc)

        self._held = _Held(writing=_WRITER.submit(written), after=raised)

    def running_row(self, write: Callable[[], None]) -> Future[None]:
        """A pilot's `running` row, begun now by a thread of its own (not after the
        record held: it is written within milliseconds of the pilot's start). The
        pilot waits for it before the first command in its sandbox, and before its own
        record is written."""
        return _ROWS.submit(write)

    def settle(self, *, wait: bool = True) -> None:
        """The held record written (but for `wait`, only one written already) and its
        run told; what either raised, or what came after the write, is kept in
        `faults`. A Ctrl-C meanwhile waits until it is done."""
        with deferred_interrupts():
            held = self._held
            if held is None or not (wait or held.writing.done()):
                return
            self._held = None
            run = None
            try:
                run = held.writing.result()
            except Exception as exc:  # its `running` row alone stays: it reads as crashed
                self.faults.append(exc)
            self.faults.extend(held.after)
            if run is not None:
                self.tell(run)

    def tell(self, run: Run) -> None:
        """A recorded run told; a sink's fault kept in `faults` (the run is recorded
        all the same)."""
        try:
            self._events(Recorded(run=run))
        except Exception as exc:
            self.faults.append(exc)
