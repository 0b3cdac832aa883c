"""Every subprocess benchkit starts goes through this module.

Each command runs in its own process group, so a timeout or an interrupt stops the
command and everything it started: SIGTERM to the group, then SIGKILL after a grace
period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GRACE_S = 10.0

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


@dataclass(frozen=True, kw_only=True)
class Finished:
    """How a command ended."""

    exit_code: int | None  # None when it timed out or could not start
    timed_out: bool
    not_found: bool
    duration_s: float


def _argv(command: Command) -> list[str]:
    return ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after the grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(proc.pid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run(
    command: Command,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    timeout_s: float | None = None,
    grace_s: float = GRACE_S,
) -> Finished:
    """Run a command with its output (stdout and stderr) appended to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(
                _argv(command),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError) as exc:
            log.write(f"benchkit: cannot start {command!r}: {exc}\n".encode())
            return Finished(
                exit_code=None,
                timed_out=False,
                not_found=True,
                duration_s=time.monotonic() - started,
            )
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc, grace_s)
            log.write(f"\nbenchkit: timed out after {timeout_s:g} s\n".encode())
            return Finished(
                exit_code=None,
                timed_out=True,
                not_found=False,
                duration_s=time.monotonic() - started,
            )
        except BaseException:
            stop_group(proc, grace_s)
            raise
        if _group_alive(proc.pid):
            stop_group(proc, grace_s)  # leftovers of a command that exited: never let them run on
    return Finished(
        exit_code=code,
        timed_out=False,
        not_found=code == 127 and isinstance(command, str),
        duration_s=time.monotonic() - started,
    )


def capture(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    timeout_s: float = 300.0,
) -> str:
    """Run a short command that must succeed and return its stdout."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            input=input_text.encode() if input_text is not None else None,
            stdin=None if input_text is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as exc:
        raise ProcError(argv, -1, "", f"timed out after {timeout_s:g} s") from exc
    stdout = done.stdout.decode("utf-8", errors="surrogateescape")
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace")
        raise ProcError(argv, done.returncode, stdout, stderr)
    return stdout
