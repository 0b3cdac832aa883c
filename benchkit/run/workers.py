"""The processes launcher: `jobs` worker processes, spawned (no state of the caller's
is shared) before the matrix is planned, so that they import benchkit meanwhile. A
worker's events come back through a queue, never as a callback."""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from benchkit.records import LauncherName, Run
from benchkit.run.events import Event, Sink, relayed
from benchkit.run.launcher import Launched, Launcher, Serial
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import Plan
from benchkit.store.store import Store
from benchkit.workspace.processes import exits_quickly
from benchkit.workspace.signals import Terminated, terminated, worker_started

if TYPE_CHECKING:  # multiprocessing's modules are loaded when a pool starts, not before
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

_EVENTS: list[Sink] = []  # in a worker process: where its pilot's events go


_PARENT: list[int] = []  # in a worker process: the benchkit that started it


def _worker_started(told: multiprocessing.Queue[Event]) -> None:
    worker_started()
    exits_quickly()
    _EVENTS[:] = [told.put]
    _PARENT[:] = [os.getppid()]


def _work(p: Plan, store: Store, keep: bool) -> Run:
    """One pilot in a worker process. An interrupted worker ends once its run is
    recorded, and never takes another pilot: Ctrl-C reaches it with benchkit, SIGTERM
    comes from benchkit stopping it or from the kernel as benchkit dies (once for each
    of benchkit's threads that goes, so at first while benchkit is still its parent)."""
    if terminated() or os.getppid() != _PARENT[0]:  # told to stop, or its benchkit gone
        os._exit(Terminated.exit_code)  # while it waited: it takes no other pilot
    try:
        return execute_plan(p, store, keep=keep, launcher="processes", events=_EVENTS[0])
    except KeyboardInterrupt as exc:
        os._exit(exc.exit_code if isinstance(exc, Terminated) else 128 + signal.SIGINT)
    finally:  # a SIGTERM whose interrupt another error replaced (a cleanup's) ends it too
        if terminated():
            os._exit(Terminated.exit_code)


def _ready() -> None:
    """A worker's first task: none; handing it one starts the worker."""


@dataclass(kw_only=True)
class Processes(Launcher):
    """`jobs` pilots at a time, each in a worker process; a single pilot runs in this
    process, as `serial` runs it."""

    name: ClassVar[LauncherName] = "processes"
    _pool: ProcessPoolExecutor | None = field(default=None, init=False, repr=False)
    _told: multiprocessing.Queue[Event] | None = field(default=None, init=False, repr=False)

    def start(self, pilots: int) -> None:
        if pilots < 2:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("spawn")
        self._told = context.Queue()
        self._pool = ProcessPoolExecutor(
            self.jobs, mp_context=context, initializer=_worker_started, initargs=(self._told,)
        )
        for _ in range(self.jobs):
            self._pool.submit(_ready)

    def launch(self, plans: list[Plan], store: Store, *, keep: bool, events: Sink) -> Launched:
        if self._pool is None or self._told is None or len(plans) < 2:
            return Serial().launch(plans, store, keep=keep, events=events)
        import multiprocessing
        from concurrent.futures import as_completed

        done: dict[int, Run] = {}
        faults: list[Exception] = []
        with relayed(self._told, events):
            try:
                futures = {self._pool.submit(_work, p, store, keep): n for n, p in enumerate(plans)}
                for future in as_completed(futures):
                    try:
                        done[futures[future]] = future.result()
                    except Exception as exc:  # recorded by the worker as its run's failure
                        faults.append(exc)
            except KeyboardInterrupt:
                for child in multiprocessing.active_children():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child.pid or 0, signal.SIGTERM)  # each records its run, ends
                self.close()
                raise
            self.close()
        return Launched(runs=[done[n] for n in sorted(done)], faults=faults)

    def close(self) -> None:
        """Wait for the workers to end; tasks not begun are dropped."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
