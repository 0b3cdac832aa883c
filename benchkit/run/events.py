"""What a matrix tells while it runs: events, and the sinks that take them.

The launcher tells what a set still needs (`Planned`); each pilot tells each stage it
begins (`StageBegun`) and its recorded run (`Recorded`). A sink is any callable of an
event: the terminal printer, the notebook progress, a researcher's own. A pilot in a
worker process tells its events to a queue, which the launcher drains into the
caller's sink in the caller's process: no callback crosses a process. (The heartbeat
is the pilot's own sink of its stages, written to the store. The Ray launcher reads a
task's stages there, those a look finds, and its run from the task's result:
`benchkit.run.cluster`. A sink takes a pilot's first stage told as its start.)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from benchkit.records import Run


@dataclass(frozen=True, kw_only=True)
class Planned:
    """A matrix in a set: how many pilots will run, and what the set already holds."""

    run_set: str
    pilots: int  # to run now
    recorded: tuple[str, ...]  # run ids of the matrix's units the set has finished
    running: int  # units at work in another benchkit
    jobs: int  # pilots at a time


@dataclass(frozen=True, kw_only=True)
class StageBegun:
    run_id: str
    label: str  # `demo human #1`
    stage: str
    worker: str  # `host:pid` of the process running the pilot


@dataclass(frozen=True, kw_only=True)
class Recorded:
    run: Run


Event = Planned | StageBegun | Recorded
Sink = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The sink that takes every event and does nothing."""


class Mailbox(Protocol):
    """Where workers put their events: a multiprocessing queue."""

    def get(self) -> Any: ...

    def put(self, item: Any, /) -> None: ...


@contextlib.contextmanager
def relayed(told: Mailbox, sink: Sink) -> Iterator[None]:
    """A thread that hands what workers put in `told` to `sink`, in this process, until
    the block ends and every event put before is handed on (None, put last, ends it)."""

    def relay() -> None:
        while (event := told.get()) is not None:
            with contextlib.suppress(Exception):  # a sink's fault never stops the matrix
                sink(event)

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()
    try:
        yield
    finally:
        told.put(None)
        thread.join(timeout=10)
