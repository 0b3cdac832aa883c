"""The sandbox: what an arm or a check may see and touch.

With bubblewrap (`bwrap`), a command runs in its own pid namespace (benchkit and
every other process out of its sight, their environments too), with the whole
system read-only and writable only the pilot's worktree, its HOME and its own tmp;
with its own empty network unless allowed; and it dies with benchkit
(`--die-with-parent`). Without it (`none`), the command runs as benchkit's user with
only its environment narrowed. Either way HOME and TMPDIR are the pilot's own, the
same for its arm and its checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Literal, get_args

from benchkit.errors import UsageError

SandboxName = Literal["bwrap", "none"]
SandboxChoice = Literal["auto", "bwrap", "none"]
CHOICES: tuple[str, ...] = get_args(SandboxChoice)


class SandboxWarning(UserWarning):
    """Asked for `auto` on a machine where bubblewrap cannot run."""


PILOT_MARK = "BENCHKIT_RUN"  # in every command's environment: the run it belongs to
# In a pilot's folder, for a recovery after a crash:
PROCESSES = "processes"  # the ledger: "pgid start" of each command it started
SECRETS = "secrets"  # the names (never the values) of the arm's secret variables
_PROBE = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]


@cache
def bwrap() -> str | None:
    """The bubblewrap program: `$BENCHKIT_BWRAP`, else `bwrap` on PATH."""
    return shutil.which(os.environ.get("BENCHKIT_BWRAP") or "bwrap")


@cache
def _probe() -> tuple[str | None, bool]:
    """Why bubblewrap cannot make a sandbox here (None when it can), and whether it
    writes its sandbox's pid 1 on `--json-status-fd` (0.4 and later): one run of
    it, two where it does not."""
    exe = bwrap()
    if exe is None:
        given = os.environ.get("BENCHKIT_BWRAP")
        if given:
            return f"BENCHKIT_BWRAP: {given}: no such program", False
        return "bubblewrap (bwrap) is not installed", False
    for reports in (True, False):
        read, write = os.pipe()
        status = ["--json-status-fd", str(write)] if reports else []
        try:
            done = subprocess.run(
                [exe, *_PROBE, "--die-with-parent", *status, "--", "true"],
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                pass_fds=(write,),
                timeout=30,
            )
        finally:
            os.close(write)
            os.close(read)
        if done.returncode == 0:
            return None, reports
    last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return f"bwrap cannot make a sandbox here ({last})", False


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot make a sandbox on this machine, or None when it can."""
    return _probe()[0]


def bwrap_reports() -> bool:
    """Whether this bubblewrap tells its sandbox's pid 1 (`--json-status-fd`)."""
    return _probe()[1]


def choose(choice: str) -> SandboxName:
    """The sandbox a pilot runs with: `auto` takes bubblewrap when it works here and
    says once, as a warning, when it does not. Raises `UsageError`."""
    if choice not in CHOICES:
        raise UsageError("sandbox", "", f"{choice!r} is not one of {', '.join(CHOICES)}")
    if choice == "none":
        return "none"
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if choice == "bwrap":
        raise UsageError("sandbox", "", problem)
    warnings.warn(
        f"{problem}: arms and checks run without a sandbox (see the README's Isolation)",
        SandboxWarning,
        stacklevel=2,
    )
    return "none"


@dataclass(frozen=True, kw_only=True)
class Sandbox:
    """Where one pilot's commands run: its writable folders and its network."""

    name: SandboxName
    tree: Path  # the worktree: its working directory, writable
    home: Path  # its HOME, writable
    tmp: Path  # its TMPDIR, writable; with bwrap, the system's /tmp is read-only
    network: bool = True
    ledger: Path | None = None  # each command's process group is written here
    run_id: str = ""  # written in each command's environment, for `recover` to know them
    read_only: tuple[tuple[Path, Path], ...] = ()  # (from, to): the environment, bound

    def with_network(self, on: bool) -> Sandbox:
        return replace(self, network=on)

    def with_read_only(self, binds: tuple[tuple[Path, Path], ...]) -> Sandbox:
        """The sandbox with these folders bound read-only, each from a path to another
        (the cached environment where the pilot's instance goes)."""
        return replace(self, read_only=binds) if self.name == "bwrap" else self

    def on_host(self, path: Path) -> Path:
        """Where the host has what the sandbox shows at `path` (a folder it binds
        from elsewhere, or within one)."""
        for source, target in self.read_only:
            if path == target or target in path.parents:
                return source / path.relative_to(target)
        return path

    def host_path(self, path: str | None) -> str | None:
        """A PATH as the host sees the folders the sandbox binds: where to look for a
        command's program before it starts."""
        if path is None or not self.read_only:
            return path
        return os.pathsep.join(str(self.on_host(Path(e))) for e in path.split(os.pathsep))

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The command's environment, with the pilot's own HOME and tmp."""
        home, tmp = str(self.home), str(self.tmp)
        mark = {PILOT_MARK: self.run_id} if self.run_id else {}
        return {**env, "HOME": home, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp, **mark}

    def command(self, argv: Sequence[str], *, status_fd: int | None = None) -> list[str]:
        """The command as it is run: in bubblewrap (which writes its sandbox's pid 1 and
        the command's exit on `status_fd`, as JSON lines, when given), or as it is."""
        if self.name == "none":
            return list(argv)
        args = [bwrap() or "bwrap", *_PROBE, "--unshare-ipc", "--die-with-parent"]
        if status_fd is not None:
            args += ["--json-status-fd", str(status_fd)]
        if not self.network:
            args.append("--unshare-net")
        for folder in (self.tree, self.home, self.tmp):
            args += ["--bind", str(folder), str(folder)]
        for source, target in self.read_only:  # after the tree: node_modules is in it
            args += ["--ro-bind", str(source), str(target)]
        return [*args, "--chdir", str(self.tree), "--", *argv]

    def make(self) -> None:
        """Its writable folders, made if missing (bubblewrap binds only what exists)."""
        for folder in (self.home, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)
