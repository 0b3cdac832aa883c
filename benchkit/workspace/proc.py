"""Every subprocess benchkit starts goes through this module.

Each command runs in its own process group, so a timeout or an interrupt stops the
command and everything it started: SIGTERM to the group, then SIGKILL to whatever is
left after a grace period (signals to benchkit itself: `benchkit.workspace.signals`;
which process is which: `benchkit.workspace.processes`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchkit.records import SECRET_MARK, redact
from benchkit.workspace.processes import SETTLE_S, group_left, process_start
from benchkit.workspace.sandbox import Sandbox
from benchkit.workspace.signals import deferred_interrupts

GRACE_S = 10.0
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

    def __reduce__(self) -> tuple[type[ProcError], tuple[list[str], int, str, str]]:
        """Pickled by its parts: a worker's fault reaches the launcher whole."""
        return type(self), (self.argv, self.exit_code, self.stdout, self.stderr)


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


LEFT_S = 5.0
"""How long the output of what a command left is still copied once the command has
ended: a daemon that kept its stdout open (`setsid -f` without redirecting it) holds
the pipe for as long as it lives, and is no reason to wait."""


def _pump(
    source: IO[bytes],
    sink: IO[bytes],
    secrets: Sequence[str],
    failed: list[OSError],
    ended: threading.Event,
) -> None:
    """Copy the command's output to its log a line at a time, redacted, until the pipe
    ends, or `LEFT_S` after the command has (`ended`); a log that cannot be written
    (a full disk) is noted in `failed` and the output drained, never left to block
    it."""
    encoded = [s.encode() for s in secrets if s]
    fd = source.fileno()
    waiting = select.poll()
    waiting.register(fd, select.POLLIN | select.POLLHUP)
    pending, deadline = b"", math.inf

    def write(line: bytes) -> None:
        if failed:
            return
        for secret in encoded:
            line = line.replace(secret, SECRET_MARK.encode())
        try:
            sink.write(line)
            sink.flush()
        except OSError as exc:  # named by the log's path: where there was no space
            failed.append(OSError(exc.errno, exc.strerror, getattr(sink, "name", None)))

    while True:
        if ended.is_set() and deadline == math.inf:
            deadline = time.monotonic() + LEFT_S
        if time.monotonic() >= deadline:
            break
        if not waiting.poll(100):
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            write(line + b"\n")
    if pending:
        write(pending)


def _drain(
    proc: subprocess.Popen[bytes], pumps: Sequence[threading.Thread], ended: threading.Event
) -> None:
    """Let the output threads finish (`LEFT_S` at most once the command has ended),
    then close the pipes they read."""
    ended.set()
    for pump in pumps:
        pump.join()
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
            argv = sandbox.command(argv, status_fd=status[1] if status else None, cwd=cwd)
        started = time.monotonic()
        proc: subprocess.Popen[bytes] | None = None
        pumps: list[threading.Thread] = []
        failed: list[OSError] = []
        ended_at = threading.Event()  # the command's end: its output copied `LEFT_S` more
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
                        target=_pump,
                        args=(source, sink, secrets, failed, ended_at),
                        daemon=True,
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
            _drain(proc, pumps, ended_at)
            log.write(f"\nbenchkit: timed out after {timeout_s:g} s\n".encode())
            return ended(None, timed_out=True)
        except BaseException:
            if proc is not None:
                with deferred_interrupts():  # a second signal never cuts the stopping short
                    stop_group(proc, grace_s)
                    _drain(proc, pumps, ended_at)
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
            _drain(proc, pumps, ended_at)
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
    except (AttributeError, OSError):  # not Linux, or an old kernel: Popen's own polling
        return subprocess.Popen.wait(proc, timeout=timeout_s)  # (`_Captured.wait` is this)
    try:
        if not _readable(pidfd, math.inf if timeout_s is None else timeout_s):
            raise subprocess.TimeoutExpired(proc.args, timeout_s or 0.0)
    finally:
        os.close(pidfd)
    return proc.wait()


class _Captured(subprocess.Popen[bytes]):
    """A short command's process, whose wait with a timeout (`communicate`'s, once its
    output is read) returns the moment it exits (`waited`): Popen's own sleeps 1 ms,
    then 2, 4..., between looks, and a git command often has not exited yet as its
    output ends."""

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None or self.returncode is not None:
            return super().wait(timeout)
        return waited(self, timeout)


class Stoppable:
    """The short commands a thread runs for a caller (`capture(..., within=...)`),
    which the caller stops at once when it is interrupted: an interrupt reaches the
    caller's thread, not them. One started after `stop` is stopped as it starts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._stopped = False

    def started(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._running.add(proc)
            stopped = self._stopped
        if stopped:
            stop_group(proc)

    def ended(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._running.discard(proc)

    def stop(self) -> None:
        """Every command running now, or later, stopped (its process group)."""
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for proc in running:
            stop_group(proc)


def capture(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    timeout_s: float = 300.0,
    within: Stoppable | None = None,
) -> str:
    """Run a short command that must succeed and return its stdout. An interrupt,
    at any point, stops it (its process group) before it is raised; in a thread,
    `within` lets the caller stop it."""
    proc: subprocess.Popen[bytes] | None = None
    try:
        with deferred_interrupts():  # not inside Popen: it would leave the child on
            proc = _Captured(
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        if within is not None:
            within.started(proc)
        given = input_text.encode() if input_text is not None else None
        try:
            out, err = proc.communicate(given, timeout=timeout_s)
        finally:
            if within is not None:
                within.ended(proc)
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
