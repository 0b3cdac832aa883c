"""Every subprocess benchkit starts goes through this module.

Each command runs in its own process group, so a timeout or an interrupt stops the
command and everything it started: SIGTERM to the group, then SIGKILL to whatever is
left after a grace period. SIGTERM sent to benchkit itself becomes an exception
like Ctrl-C's, so that the run in progress is recorded before benchkit exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

from benchkit.records import SECRET_MARK, redact
from benchkit.workspace.sandbox import Sandbox

GRACE_S = 10.0
SETTLE_S = 0.05  # what a command that exited leaves has this long to end of itself
# A poll(2) at a time. A signal the kernel hands another thread (one whose main thread
# has a signal pending already: a worker's Ctrl-C, then benchkit's SIGTERM) leaves the
# main thread asleep in its poll: its handler runs once the poll returns.
SIGNAL_S = 0.1

Command = str | Sequence[str]


class ProcError(RuntimeError):
    """A command that had to succeed did not; carries its output."""

    def __init__(self, argv: Sequence[str], exit_code: int, stdout: str, stderr: str) -> None:
        self.argv = list(argv)
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr
        last = (stderr.strip() or stdout.strip()).splitlines()
        super().__init__(
            f"{' '.join(argv[:3])} exited {exit_code}" + (f": {last[-1]}" if last else "")
        )


class Terminated(KeyboardInterrupt):
    """benchkit received SIGTERM: handled like Ctrl-C, with its own exit code."""

    exit_code = 128 + signal.SIGTERM


@dataclass(frozen=True, kw_only=True)
class Finished:
    """How a command ended."""

    exit_code: int | None  # None when it timed out or could not start; -N for signal N
    timed_out: bool
    not_found: bool
    duration_s: float


def _argv(command: Command) -> list[str]:
    return ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)


def program(command: Command) -> str:
    """The program a command starts (a shell line's: the shell)."""
    return _argv(command)[0]


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


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after the grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        proc.poll()
        return
    deadline = time.monotonic() + grace_s
    pause = 0.001
    while time.monotonic() < deadline:
        proc.poll()
        if not group_left(proc.pid, settle_s=0):
            proc.wait()
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _pump(
    source: IO[bytes], sink: IO[bytes], secrets: Sequence[str], failed: list[OSError]
) -> None:
    """Copy the command's output to its log, redacted; a log that cannot be written (a
    full disk) is noted in `failed` and the output drained, never left to block it."""
    encoded = [s.encode() for s in secrets if s]
    for line in iter(source.readline, b""):
        if failed:
            continue
        for secret in encoded:
            line = line.replace(secret, SECRET_MARK.encode())
        try:
            sink.write(line)
            sink.flush()
        except OSError as exc:  # named by the log's path: where there was no space
            failed.append(OSError(exc.errno, exc.strerror, getattr(sink, "name", None)))


def _drain(proc: subprocess.Popen[bytes], pumps: Sequence[threading.Thread]) -> None:
    """Let the output threads finish, then close the pipes they read."""
    for pump in pumps:
        pump.join(timeout=5)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _findable(program: str, cwd: Path, sandbox: Sandbox, path: str | None) -> bool:
    """Whether the program can start, as the host sees the sandbox's folders."""
    if "/" in program:
        return sandbox.on_host(cwd / program).is_file()
    return shutil.which(program, path=sandbox.host_path(path)) is not None


def run(
    command: Command,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    timeout_s: float | None = None,
    grace_s: float = GRACE_S,
    stdout_path: Path | None = None,
    secrets: Sequence[str] = (),
    sandbox: Sandbox | None = None,
) -> Finished:
    """Run a command in its own process group, in `sandbox` when one is given (which
    also writes the group in its ledger, for `recover` to stop after a crash).

    Its output goes to `log_path` (appended), or its stdout to `stdout_path` and its
    stderr to `log_path`. With `secrets`, the output passes through benchkit, which
    writes every secret value as `[secret]`: the files never hold one.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    piped = stdout_path is not None or bool(secrets)
    started = time.monotonic()  # then the moment the command starts: its duration's own

    def ended(
        code: int | None, *, timed_out: bool = False, not_found: bool = False, at: float = 0.0
    ) -> Finished:
        return Finished(
            exit_code=code,
            timed_out=timed_out,
            not_found=not_found,
            duration_s=(at or time.monotonic()) - started,
        )

    argv, env = _argv(command), dict(env)
    with contextlib.ExitStack() as files:
        log = files.enter_context(log_path.open("ab"))
        out = files.enter_context(stdout_path.open("ab")) if stdout_path else log
        if sandbox is not None:
            env = sandbox.environment(env)
            if not _findable(argv[0], cwd, sandbox, env.get("PATH")):  # bwrap: only in its log
                said = f"benchkit: cannot start {command!r}: not found\n"
                log.write(redact(said, secrets).encode())
                return ended(None, not_found=True)
        status = None  # bwrap's status pipe: where it says its sandbox's pid 1
        if sandbox is not None:
            if sandbox.tells_pid():
                status = _status_pipe(files)
            argv = sandbox.command(argv, status_fd=status[1] if status else None)
        started = time.monotonic()
        proc: subprocess.Popen[bytes] | None = None
        pumps: list[threading.Thread] = []
        failed: list[OSError] = []
        inner: int | None = None
        try:  # from its start: an interrupt at any point stops the command before it goes on
            try:
                with deferred_interrupts():  # not inside Popen: it would leave the child on
                    proc = subprocess.Popen(
                        argv,
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE if piped else log,
                        stderr=subprocess.PIPE if piped else subprocess.STDOUT,
                        start_new_session=True,
                        pass_fds=status[1:] if status else (),
                    )
            except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
                log.write(redact(f"benchkit: cannot start {command!r}: {exc}\n", secrets).encode())
                return ended(None, not_found=True)
            finally:
                if status:
                    os.close(status[1])  # bwrap's copy stays: EOF once it fails or exits
            if sandbox is not None and sandbox.ledger is not None:
                with sandbox.ledger.open("a") as ledger:  # pgid and start: never a reused pid
                    ledger.write(f"{proc.pid} {process_start(proc.pid)}\n")
            if piped:
                assert proc.stdout is not None and proc.stderr is not None
                for source, sink in ((proc.stdout, out), (proc.stderr, log)):
                    pump = threading.Thread(
                        target=_pump, args=(source, sink, secrets, failed), daemon=True
                    )
                    pump.start()
                    pumps.append(pump)
            if status is not None:
                inner = _sandbox_init(files, status[0], min(timeout_s or 30.0, 30.0))
            code = waited(proc, timeout_s)
            exited = time.monotonic()
        except subprocess.TimeoutExpired:
            assert proc is not None
            stop_group(proc, grace_s)
            _drain(proc, pumps)
            log.write(f"\nbenchkit: timed out after {timeout_s:g} s\n".encode())
            return ended(None, timed_out=True)
        except BaseException:
            if proc is not None:
                with deferred_interrupts():  # a second signal never cuts the stopping short
                    stop_group(proc, grace_s)
                    _drain(proc, pumps)
            raise
        # Leftovers of a command that exited never run on (an interrupt waits for them
        # to be stopped). In bubblewrap, the kernel stops every process of the
        # sandbox's pid namespace as the sandbox's pid 1 ends, which bwrap leaves to
        # finish after it exits: waited for, at once.
        with deferred_interrupts():
            if inner is not None:
                if not _readable(inner, SETTLE_S):  # a pidfd reads once its process ended
                    stop_group(proc, grace_s)
            elif group_left(proc.pid):
                stop_group(proc, grace_s)
            _drain(proc, pumps)
        if failed:
            raise failed[0]  # its log could not be written: the caller says why
    return ended(code, not_found=code == 127 and isinstance(command, str), at=exited)


def _status_pipe(files: contextlib.ExitStack) -> tuple[int, int]:
    """A pipe for bwrap's `--json-status-fd`: its reading end closed with `files`, its
    writing end to close once bwrap has its own copy."""
    read, write = os.pipe()
    files.callback(os.close, read)
    return read, write


def _sandbox_init(files: contextlib.ExitStack, read: int, within_s: float) -> int | None:
    """A pidfd of the sandbox's pid 1, from the first line bwrap writes on its status
    pipe (`{"child-pid": N, ...}`, as it starts it): None when bwrap wrote none within
    `within_s`, or the process has ended."""
    said = b""
    while b"\n" not in said and _readable(read, within_s):
        chunk = os.read(read, 4096)
        if not chunk:
            break
        said += chunk
    try:
        pid = int(json.loads(said.split(b"\n", 1)[0])["child-pid"])
        pidfd = os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError, AttributeError):
        return None  # and the leftovers are looked for in the group
    files.callback(os.close, pidfd)
    return pidfd


def _readable(fd: int, within_s: float) -> bool:
    """Whether `fd` has something to read within `within_s` (a pidfd: its process
    ended). By poll(2), not select(): a descriptor may be past 1024; `SIGNAL_S` at a
    time, so that a signal's handler runs within that however the kernel delivered it."""
    deadline = time.monotonic() + max(within_s, 0.0)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if poller.poll(max(min(left, SIGNAL_S), 0.0) * 1000):
            return True
        if left <= SIGNAL_S:
            return False


def waited(proc: subprocess.Popen[bytes], timeout_s: float | None) -> int:
    """The command's exit status, the moment it exits: woken by its pidfd (Linux), not
    by polling (`Popen.wait` with a timeout sleeps up to 50 ms between looks: half a
    second lost on a pilot's checks). Raises `subprocess.TimeoutExpired`."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, or an old kernel: Popen's polling
        return proc.wait(timeout=timeout_s)
    try:
        if not _readable(pidfd, math.inf if timeout_s is None else timeout_s):
            raise subprocess.TimeoutExpired(proc.args, timeout_s or 0.0)
    finally:
        os.close(pidfd)
    return proc.wait()


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


def capture(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    timeout_s: float = 300.0,
) -> str:
    """Run a short command that must succeed and return its stdout. An interrupt,
    at any point, stops it (its process group) before it is raised."""
    proc: subprocess.Popen[bytes] | None = None
    try:
        with deferred_interrupts():  # not inside Popen: it would leave the child on
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        given = input_text.encode() if input_text is not None else None
        out, err = proc.communicate(given, timeout=timeout_s)
    except BaseException as exc:
        if proc is not None:
            _stopped(proc)
        if isinstance(exc, subprocess.TimeoutExpired):
            raise ProcError(argv, -1, "", f"timed out after {timeout_s:g} s") from exc
        raise
    stdout = out.decode("utf-8", errors="surrogateescape")
    if proc.returncode != 0:
        raise ProcError(argv, proc.returncode, stdout, err.decode("utf-8", errors="replace"))
    return stdout


def _stopped(proc: subprocess.Popen[bytes]) -> None:
    """A captured command's group stopped and its pipes closed, whatever comes meanwhile."""
    with deferred_interrupts():
        stop_group(proc)
        proc.communicate()


def process_start(pid: int) -> int | None:
    """When a process started (clock ticks since boot), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 and fields[0] != "Z" else None


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
