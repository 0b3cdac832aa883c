"""Process identity, the one liveness rule every part of benchkit asks (claims, the
matrix ledgers, heartbeats, recovery): a process is the one that started at a time,
never a pid alone, which the kernel reuses; the members of a process group; stopping
processes (ended when the stop returns); and how benchkit's own processes start and end."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path

SETTLE_S = 0.05  # what a command that exited leaves has this long to end of itself
KILL_PATIENCE_S = 60.0  # how long a SIGKILLed process is waited for to end: a guard
FULL_PASS_EVERY = 100  # middle-generation passes; Python's default is 10


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    proc_root = Path("/proc")
    if not proc_root.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def carries(pid: int, mark: bytes) -> bool:
    """Whether the process's environment holds the entry `mark` (`BENCHKIT_RUN=<id>`);
    no for one gone, or not ours to read."""
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def marked(mark: bytes) -> list[int]:
    """Live processes that carry `mark`: what a pilot started, whatever group or
    session it moved to (a daemon that forked twice and called setsid). A process that
    scrubbed its environment is not found."""
    proc_root = Path("/proc")
    if not proc_root.is_dir():
        return []
    pids = (int(e.name) for e in proc_root.iterdir() if e.name.isdigit())
    return [pid for pid in pids if pid != os.getpid() and carries(pid, mark)]


def stop_marked(mark: bytes) -> int:
    """SIGKILL every live process that carries `mark`; how many."""
    return killed(marked(mark))


def killed(pids: Iterable[int], patience_s: float = KILL_PATIENCE_S) -> int:
    """SIGKILL each process (one gone meanwhile, or not ours, passed over), then wait
    until they have ended: a SIGKILL is delivered at once but done when the process has
    given back its memory (10 ms for 512 MB, longer on a busy machine), and until then
    it may finish a write into a folder the caller removes next. How many were asked."""
    asked = {pid: process_start(pid) for pid in pids}
    signalled(asked, signal.SIGKILL, patience_s)
    return len(asked)


def signalled(starts: Mapping[int, int | None], signum: int, patience_s: float) -> int:
    """Send `signum` to each process (pid: its start; one gone meanwhile, or not ours,
    passed over), then wait until those it reached have ended, at most `patience_s`
    (one in the kernel's hands, a hung disk say, is left to it). How many it reached."""
    sent = {}
    for pid, start in starts.items():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
            sent[pid] = start
    deadline = time.monotonic() + patience_s
    pause = 0.0005
    while any(alive(pid, start) for pid, start in sent.items() if start is not None):
        if time.monotonic() >= deadline:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return len(sent)


def group_left(pgid: int, settle_s: float = SETTLE_S) -> bool:
    """Whether a process of the group still runs once it had `settle_s` to end of
    itself (what a command leaves as it exits ends within milliseconds). Signal 0
    says at once when none is left, the common case; a zombie answers it too, so
    then the walk of `/proc` (2 ms a walk)."""
    deadline = time.monotonic() + settle_s
    pause = 0.0005
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        if not group_members(pgid):
            return False  # zombies only
        if time.monotonic() >= deadline:
            return True
        time.sleep(pause)
        pause = min(pause * 2, 0.01)


def process_start(pid: int) -> int | None:
    """When a process started (clock ticks since boot), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 and fields[0] != "Z" else None


_OWN_START: dict[int, int | None] = {}  # this process's start, by its pid (a fork's own)


def own_start() -> int | None:
    """When this process started (see `process_start`): read once, as it never changes."""
    pid = os.getpid()
    if pid not in _OWN_START:
        _OWN_START[pid] = process_start(pid)
    return _OWN_START[pid]


def alive(pid: int, started: int | None) -> bool:
    """Whether the process that started at `started` still runs as `pid`."""
    if not Path("/proc").is_dir():
        return _signal_zero(pid)
    now = process_start(pid)
    return now is not None and (started is None or now == started)


def _signal_zero(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_OWN: dict[str, str] = {}  # what `as_command` set in this process's environment


def as_command() -> None:
    """This process is a benchkit command (its entry says so first, before any import):
    the collector's full passes rare (`collects_rarely`), and pydantic's plugins not
    looked for. Pydantic looks for them by reading every installed package's entry
    points as it first validates a file, 4 to 5 ms of every command that reads a bench
    or an arm file, and a command validates only benchkit's own files. A user's own
    `PYDANTIC_DISABLE_PLUGINS` is kept; benchkit used as a library sets neither; a
    command run for the user takes `callers_environ`, without it."""
    collects_rarely()
    if "PYDANTIC_DISABLE_PLUGINS" not in os.environ:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = _OWN["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    if not _ENDS:
        atexit.register(_at_once)  # the first exit handler: the last to run
        _ENDS.append(None)


# empty: not a command's process; [None]: a command's, not ended yet; [status]: ended
_ENDS: list[int | None] = []  # (`as_command`, then `command_ended`)


def command_ended(code: object) -> None:
    """The command ended by `sys.exit(code)`, as its entry saw (`benchkit.__main__`, the
    process's own entry): its process ends with that status at once when the exit
    handlers have run (see `_at_once`). Not told (an uncaught error, an uncaught Ctrl-C,
    benchkit used as a library), a process ends as Python ends it."""
    if _ENDS:
        _ENDS[0] = code if isinstance(code, int) else int(code is not None)


def left_to_the_end(handler: Callable[[], object]) -> bool:
    """In a command's own process (`as_command`), `handler` is left to its exit, and
    run then unless the command ends at once (`command_ended`): what the kernel's end
    of the process does as well (a connection closed) is left to it. Elsewhere (benchkit
    used as a library), nothing is left: False, for the caller to run it now."""
    if not _ENDS:
        return False
    atexit.register(_unless_at_once, handler)
    return True


def _unless_at_once(handler: Callable[[], object]) -> None:
    if _ending() is None:
        handler()


def ends_at_once() -> bool:
    """Whether this process, as it exits, ends at once (see `_at_once`): a command's
    that told its end. Its exit handlers need not wait for what the kernel's end of
    the process, or a process of its own, can finish."""
    return bool(_ENDS) and _ending() is not None


def _ending() -> int | None:
    """The status this process ends with at once, or None where it ends as Python ends
    it: the command's end not told, or an error printed after it (a caller that went on)."""
    return None if hasattr(sys, "last_value") else _ENDS[0]


def _at_once() -> None:
    """A command's process, once every other exit handler has run (its threads joined,
    Ray's and multiprocessing's ends, the finalizers registered to run at exit), ends
    with its output flushed and without the interpreter's teardown: polars', pyarrow's
    and benchkit's modules and objects walked and released one by one, 20 to 30 ms of
    every command that the kernel does at once. What the command wrote is written by
    then (every file benchkit writes is closed as it is written)."""
    code = _ending()
    if code is None:  # as Python ends it, its last collections eased
        _frozen()
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a reader gone (`| head`), a full disk: as Python ends then
            code = 120
    os._exit(code)


def callers_environ() -> dict[str, str]:
    """This process's environment as its caller gave it, without what `as_command`
    set for benchkit's own process: what a command run for the user (their tests, an
    install) starts from."""
    return {k: v for k, v in os.environ.items() if k not in _OWN}


def collects_rarely() -> None:
    """This process (a benchkit command) runs the collector's full passes a tenth as
    often: what its imports make (polars', pydantic's and benchkit's own classes and
    functions) lives as long as the process, and the full passes over it took 20 to 40
    ms of every command's start. The young generations are collected as ever, so a
    long matrix's short-lived cycles still go; a full pass still comes, after ten times
    the allocations."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_PASS_EVERY)


@cache
def exits_quickly() -> None:
    """This process (a benchkit command, a worker of its) ends without walking every
    object polars, pyarrow and numpy made: at its exit, once the handlers registered
    after this one have run (Ray's, multiprocessing's), its garbage is collected (the
    finalizers of what is unreachable run, as at any exit) and what still lives is
    frozen (`gc.freeze`), so the interpreter's last collections pass over it. Objects
    are still released, files closed. 0.03 to 0.05 CPU-s of every command's end. Once
    a process, however often asked (the command group called in-process). A command's
    own process (`as_command`) ends at once instead (`command_ended`)."""
    if not _ENDS:
        atexit.register(_frozen)


def _frozen() -> None:
    gc.collect()
    gc.freeze()
