"""Signals: SIGTERM sent to benchkit becomes an exception like Ctrl-C's (`Terminated`),
so that the run in progress is recorded before benchkit exits; a block that must not
be cut short (a record being written) holds both until it is done; a worker of
benchkit's dies with it."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType


class Terminated(KeyboardInterrupt):
    """benchkit received SIGTERM: handled like Ctrl-C, with its own exit code."""

    exit_code = 128 + signal.SIGTERM


_TERMINATED = [0.0]  # when SIGTERM first reached this process (no lock: a handler sets it)
REPEAT_S = 1.0  # a SIGTERM this soon after the first is the same stop, not another


def terminated() -> bool:
    """Whether SIGTERM has reached this process, whatever became of its `Terminated`
    (in a worker: benchkit stopping it, or gone)."""
    return _TERMINATED[0] > 0


def _noted_sigterm() -> bool:
    """Note a SIGTERM; whether it is a new stop (not one the kernel repeats at once: a
    worker gets one as each of benchkit's threads dies, which would otherwise cut
    short the record of the run the first one stopped)."""
    now = time.monotonic()
    if _TERMINATED[0] and now - _TERMINATED[0] < REPEAT_S:
        return False
    _TERMINATED[0] = now
    return True


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _noted_sigterm():
        raise Terminated()


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """SIGTERM raises `Terminated` (a KeyboardInterrupt) while the block runs."""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def ctrl_c_noted() -> Iterator[list[int]]:
    """SIGINT in the block raises KeyboardInterrupt, as Python's own handler does, and
    is noted, for the caller to raise it again where it did not come out of a call
    into a library (seen in the suite under load: a Ctrl-C as a Ray matrix waited on
    a dead cluster, acted on only once the cluster was called gone, 30 s later). Not
    in the main thread: nothing."""
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


_DEFERRING = [False]  # whether a `deferred_interrupts` block is at work (the main thread's)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (say, a record being written),
    then take effect."""
    if threading.current_thread() is not threading.main_thread() or _DEFERRING[0]:
        yield  # within another such block: that one holds what comes, and raises it
        return
    received: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        if signum != signal.SIGTERM or _noted_sigterm():
            received.append(signum)

    held = (signal.SIGINT, signal.SIGTERM)  # one left to benchkit (a worker's SIGINT) stays so
    previous = {
        s: signal.signal(s, remember) for s in held if signal.getsignal(s) is not _left_to_benchkit
    }
    _DEFERRING[0] = True
    try:
        yield
    finally:
        _DEFERRING[0] = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            raise Terminated() if received[0] == signal.SIGTERM else KeyboardInterrupt()


_PR_SET_PDEATHSIG = 1  # prctl(2)


def _left_to_benchkit(signum: int, frame: FrameType | None) -> None:
    """A worker's SIGINT (a terminal's Ctrl-C reaches the whole group): benchkit,
    which receives it too, stops each worker with one SIGTERM; a stop of the worker's
    own as well would be two, the second landing as the first stops the arm or
    records the run. (A handler, not SIG_IGN, which the arm would inherit.)"""


def worker_started() -> None:
    """In a worker process of benchkit's: SIGTERM raises `Terminated`, SIGINT is left
    to benchkit, and the worker gets SIGTERM when benchkit dies (Linux), so that a
    SIGKILLed benchkit leaves no worker, and no arm, running: each records its run as
    interrupted and stops."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _left_to_benchkit)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
