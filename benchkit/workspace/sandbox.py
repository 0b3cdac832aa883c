"""The sandbox: what an arm or a check may see and touch.

With bubblewrap (`bwrap`), a command runs in its own pid namespace (benchkit and
every other process out of its sight, their environments too), with the whole
system read-only and writable only the pilot's worktree, its HOME and its own tmp;
with its own empty network unless allowed; and it dies with benchkit
(`--die-with-parent`). Without it (`none`), the command runs as benchkit's user with
only its environment narrowed. Either way HOME and TMPDIR are the tree's own: the
arm's beside its worktree, the checks' after it beside the clean tree they run on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from benchkit.errors import UsageError
from benchkit.workspace.processes import stop_marked


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


_PROBING = threading.Lock()  # one probe: one begun ahead (`probe_ahead`) is waited for


def _probe() -> tuple[str | None, bool]:
    """Why bubblewrap cannot make a sandbox here (None when it can), and whether it
    writes its sandbox's pid 1 on `--json-status-fd` (0.4 and later): one run of
    it, two where it does not; once a process."""
    with _PROBING:
        return _probed()


@cache
def _probed() -> tuple[str | None, bool]:
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
        except (subprocess.TimeoutExpired, OSError) as exc:  # a problem, as its exit's
            return f"bwrap cannot make a sandbox here ({exc})", False
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


def stop_left(run_id: str) -> int:
    """SIGKILL every process still running with the run's mark in its environment
    (without a sandbox, a daemon an arm or a check started outlives its group); how
    many. A sandbox that `ends_whole` (bubblewrap's pid namespace) leaves none to look
    for."""
    return stop_marked(f"{PILOT_MARK}={run_id}".encode())


def sandbox_kind(name: str) -> type[Sandbox]:
    """The kind of sandbox `name` names in `SANDBOXES`. Raises `UsageError` naming the
    kinds there are."""
    try:
        return SANDBOXES[name]
    except KeyError:
        known = ", ".join(["auto", *SANDBOXES])
        raise UsageError("sandbox", "", f"{name!r} is not one of {known}") from None


def probe_ahead() -> None:
    """The kinds `auto` tries probed by a thread, begun now, for `choose("auto")` to find
    them probed: bubblewrap's run of `true` (a few ms) beside what the caller does
    meanwhile (a kind named is chosen, or refused, at once)."""

    def probe() -> None:
        for name in PREFERRED:
            SANDBOXES[name].problem()

    threading.Thread(target=probe, name="benchkit-sandbox-probe", daemon=True).start()


def auto_choice() -> tuple[str, list[str]]:
    """The kind `auto` takes here, the first of `PREFERRED` that works (`none` when none
    does), and why each tried before it cannot."""
    problems: list[str] = []
    for name in PREFERRED:
        problem = sandbox_kind(name).problem()
        if problem is None:
            return name, problems
        problems.append(problem)
    return "none", problems


def choose(choice: str) -> str:
    """The sandbox a pilot runs with: `auto` takes the first kind of `PREFERRED` that
    works here and says once, as a warning, when none does (then `none`); a kind
    named that cannot work here is refused. Raises `UsageError`."""
    if choice == "auto":
        name, problems = auto_choice()
        if problems and name == "none":
            warnings.warn(
                f"{problems[-1]}: arms and checks run without a sandbox (see the docs' Isolation)",
                SandboxWarning,
                stacklevel=2,
            )
        return name
    problem = sandbox_kind(choice).problem()
    if problem is not None:
        raise UsageError("sandbox", "", problem)
    return choice


@dataclass(frozen=True, kw_only=True)
class Sandbox:
    """Where one pilot's commands run: its writable folders and its network. A kind of
    sandbox is a subclass named in `SANDBOXES`; nothing outside this module asks which
    kind it is, only what it does (`binds`, `cuts_network`, `ends_whole`, `tells_pid`,
    `command`)."""

    kind: ClassVar[str]
    binds: ClassVar[bool] = False  # shows the cached environment read-only, not a copy
    cuts_network: ClassVar[bool] = False  # `network=False` takes the network away
    ends_whole: ClassVar[bool] = False  # what its commands leave ends with them

    tree: Path  # the worktree: its working directory, writable
    home: Path  # its HOME, writable
    tmp: Path  # its TMPDIR, writable
    network: bool = True
    ledger: Path | None = None  # each command's process group is written here
    run_id: str = ""  # written in each command's environment, for `recover` to know them
    read_only: tuple[tuple[Path, Path], ...] = ()  # (from, to): the environment, bound
    writable: tuple[tuple[Path, Path], ...] = ()  # (from, to): its folders tools write into

    @classmethod
    def problem(cls) -> str | None:
        """Why this kind cannot run commands on this machine, or None when it can."""
        return None

    def tells_pid(self) -> bool:
        """Whether `command` writes the pid of the command's first process, as a JSON
        line `{"child-pid": N}`, on the `status_fd` it is given."""
        return False

    def command(
        self, argv: Sequence[str], *, status_fd: int | None = None, cwd: Path | None = None
    ) -> list[str]:
        """The command as it is run in the sandbox, in `cwd` (its tree when None)."""
        return list(argv)

    def with_network(self, on: bool) -> Sandbox:
        return replace(self, network=on)

    def with_read_only(
        self,
        binds: tuple[tuple[Path, Path], ...],
        writable: tuple[tuple[Path, Path], ...] = (),
    ) -> Sandbox:
        """The sandbox with these folders bound read-only, each from a path to another
        (the cached environment where the pilot's instance goes), and within them
        `writable` folders of the pilot's own bound over theirs, where it binds."""
        return replace(self, read_only=binds, writable=writable) if self.binds else self

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

    def make(self) -> None:
        """Its writable folders, made if missing (bubblewrap binds only what exists)."""
        for folder in (self.home, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True, kw_only=True)
class Unconfined(Sandbox):
    """No sandbox: the command runs as benchkit's user, only its environment narrowed."""

    kind: ClassVar[str] = "none"


@dataclass(frozen=True, kw_only=True)
class Bubblewrap(Sandbox):
    """bubblewrap: its own pid namespace, the system read-only, writable only the tree,
    HOME and tmp, its own empty network unless allowed, dead with benchkit."""

    kind: ClassVar[str] = "bwrap"
    binds: ClassVar[bool] = True
    cuts_network: ClassVar[bool] = True
    ends_whole: ClassVar[bool] = True  # a pid namespace of its own, ended with its command

    @classmethod
    def problem(cls) -> str | None:
        return bwrap_problem()

    def tells_pid(self) -> bool:
        return bwrap_reports()

    def command(
        self, argv: Sequence[str], *, status_fd: int | None = None, cwd: Path | None = None
    ) -> list[str]:
        """The command in bubblewrap, in `cwd` (its tree when None), which writes its
        sandbox's pid 1 and the command's exit on `status_fd`, as JSON lines, when given."""
        args = [bwrap() or "bwrap", *_PROBE, "--unshare-ipc", "--die-with-parent"]
        if status_fd is not None:
            args += ["--json-status-fd", str(status_fd)]
        if not self.network:
            args.append("--unshare-net")
        for folder in (self.tree, self.home, self.tmp):
            args += ["--bind", str(folder), str(folder)]
        for source, target in self.read_only:  # after the tree: node_modules is in it
            args += ["--ro-bind", str(source), str(target)]
        for source, target in self.writable:  # after the environment: they are in it
            args += ["--bind", str(source), str(target)]
        return [*args, "--chdir", str(cwd or self.tree), "--", *argv]


SANDBOXES: dict[str, type[Sandbox]] = {"none": Unconfined, "bwrap": Bubblewrap}
"""Every kind of sandbox by the name `--sandbox` takes; a new kind is one subclass and
one entry here."""
PREFERRED = ("bwrap",)  # what `auto` tries, in order, before `none`


def choices() -> tuple[str, ...]:
    """What `--sandbox` takes."""
    return ("auto", *SANDBOXES)


def make_sandbox(name: str, **fields: Any) -> Sandbox:
    """A sandbox of the kind `name` (see `SANDBOXES`)."""
    return sandbox_kind(name)(**fields)
