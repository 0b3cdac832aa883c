"""What many tests share: the `benchkit` command run as a user runs it, and the marks
of tests that need something this machine may not have (bubblewrap, root, Chromium,
node)."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from benchkit.workspace.sandbox import bwrap_problem

PATIENCE_S = 1800.0
"""How long a test waits for real work (a benchkit it started, a process to go)
before it calls it hung: a guard, never a measure of speed. A busy machine (a lab's
CI runner beside other jobs) is slow, and a test must not fail for that."""

NO_BWRAP = bwrap_problem()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_NODE = shutil.which("npm") is None or shutil.which("node") is None


def noting_stand_in(program: str, folder: Path) -> tuple[Path, Path]:
    """A folder to put first on PATH where `program` is a stand-in that notes its
    arguments (a line a run) in a file, then runs the real one: (the folder, the file)."""
    real = shutil.which(program)
    assert real is not None, f"no {program} here"
    bin_, said = folder / "bin", folder / f"{program}-said.txt"
    bin_.mkdir()
    (bin_ / program).write_text(f'#!/bin/sh\necho "$@" >> {said}\nexec {real} "$@"\n')
    (bin_ / program).chmod(0o755)
    return bin_, said


def trash_gone() -> None:
    """What a `benchkit` process left in the cache's trash as it exited, removed: a
    command hands it to an `rm -rf` it does not wait for (see
    `benchkit.workspace.cache`), so a test that looks through the cache after one
    waits for that first."""
    from benchkit.workspace.cache import TRASH, cache_dir

    trash = cache_dir() / TRASH
    deadline = time.monotonic() + PATIENCE_S
    while trash.exists() and any(trash.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)


FIGURES = ("sites_covered", "sites_matched", "sites_unrelated", "test_verdict", "lint_status")
"""What a pilot measured, compared between two ways of running the same matrix."""
# the demo bench's shas, the same on every machine (see tests/end_to_end/test_demo.py)
DEMO_BASE_SHA = "597fbd18f27682a4d6d482b59349890dc30b496a"
DEMO_HUMAN_SHA = "c52cb97581baee34d7bf979f706b5aece4e33811"


def benchkit_cli(
    *args: str,
    store: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    module: str = "benchkit",
) -> subprocess.CompletedProcess[str]:
    """`python -m benchkit ARGS` (or `-m benchkit.cli`), its output captured: with the
    store in `BENCHKIT_STORE` when given, in `cwd`, with `env` (else this process's).
    No timeout of its own: pytest-timeout names a test that hangs."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_command_env(store, env),
        check=False,
    )


def _command_env(store: Path | None, env: Mapping[str, str] | None) -> dict[str, str]:
    """`env` (else this process's environment), with the store in `BENCHKIT_STORE`."""
    environment = dict(os.environ if env is None else env)
    if store is not None:
        environment["BENCHKIT_STORE"] = str(store)
    return environment


def benchkit_in_process(
    *args: str,
    store: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`benchkit ARGS` as `benchkit_cli` runs it, but its command group called in this
    process (click's `CliRunner`): for a test of what a command says, records and exits
    with, not of its own process (a signal or a kill sent to it, its exit, its limits):
    a read, a list, a command refused at its start, pilots run one after another, ab
    and probe. A process of its own costs a fifth to half a CPU-second to start
    (python, polars, benchkit's modules) where a read takes a hundredth.

    The environment is exactly `env` (else this process's) while it runs, in `cwd`, and
    this process's again after, whatever the command set; a variable read only as
    Python starts (`PYTHONPATH`) counts in the processes the command starts, not in
    its own. A warning is written to its stderr, as in the command's own process
    (pytest's recorder put aside). The collector is off while it runs: what earlier
    tests left in cycles (an unclosed file) is not warned of as the command's (a full
    collection each call would cost a tenth of a CPU-second). benchkit warns of a file
    once a process: a test of that warning runs a process (`benchkit_cli`). The
    warnings' filter and format the group sets are put back after, and the folders the
    command discarded are gone, as when its process has exited (its exit hook,
    `exits_quickly`, stays registered, once, for this process's own exit). An exception
    the group does not turn into one line is raised here, where the process would have
    printed its traceback; a Ctrl-C that stopped the command (its exit 130) is raised
    again, to stop the tests as it would have stopped them."""
    from click.testing import CliRunner

    from benchkit.cli import main
    from benchkit.cli.options import INTERRUPTED
    from benchkit.workspace.cache import trash_emptied

    environment = _command_env(store, env)
    formatted, before, collecting = warnings.formatwarning, dict(os.environ), gc.isenabled()
    gc.disable()  # what earlier tests left in cycles is not collected, nor warned of, here
    with warnings.catch_warnings(), contextlib.chdir(cwd or os.getcwd()):
        warnings.showwarning = _to_stderr
        try:
            os.environ.clear()
            os.environ.update(environment)
            done = CliRunner().invoke(main, list(args), catch_exceptions=False)
        finally:
            warnings.formatwarning = formatted
            os.environ.clear()
            os.environ.update(before)
            trash_emptied()  # as the command's process does before it exits
            if collecting:
                gc.enable()
    if done.exit_code == INTERRUPTED and isinstance(done.exception, SystemExit):
        raise KeyboardInterrupt
    return subprocess.CompletedProcess(
        ["benchkit", *args], done.exit_code, done.stdout, done.stderr
    )


def _to_stderr(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    """A warning shown as Python's own `showwarning` shows it, on the stderr of now."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def started_as_a_terminal_starts_it() -> Iterator[None]:
    """What this block starts has SIGINT at its default, as a terminal's foreground job
    has it, so that the Ctrl-C a test sends it is heard. A suite started where SIGINT
    is ignored (a background job of a script, `nohup`) hands that on to every process
    it starts, and benchkit, as any program should, leaves it ignored. (Python's handler
    here, not SIG_IGN, is what the child's exec resets to the default.)"""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


BWRAP_REASON = f"no sandbox here: {NO_BWRAP}"
CHROMIUM_REASON = "no Chromium here (.ci/run installs Debian's chromium as root)"
NODE_REASON = "node and npm are not on this machine's PATH"
needs_bwrap = pytest.mark.skipif(NO_BWRAP is not None, reason=BWRAP_REASON)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=CHROMIUM_REASON)
needs_node = pytest.mark.skipif(NO_NODE, reason=NODE_REASON)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a mount, a capability)")
NEEDS = {BWRAP_REASON: "sandbox", CHROMIUM_REASON: "browser", NODE_REASON: "node"}
"""The mark each of these skips gives its tests (see `conftest.pytest_collection_modifyitems`),
so that `-m "not sandbox"` and the like select them."""


def environment_log(artifacts: str | Path) -> str:
    """What a run's environment stage said (its `environment.log`)."""
    return Path(artifacts, "logs", "environment.log").read_text()


def reused(key: str) -> str:
    """How an environment log begins when the pilot took the cached environment `key`
    as it was, with no build of its own."""
    return f"environment {key}: reused from "


def benchkit_modules(root: Path) -> dict[str, Path]:
    """Every module of the package under `root` (its bundled data left out)."""
    found = {}
    for path in sorted((root / "benchkit").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if "bundled" in parts:
            continue
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


def two_benches(bench_file: Path, tmp_path: Path) -> list[str]:
    """The tiny bench and a copy of it named tiny2: two benches of one repository."""
    other = tmp_path / "bench2"
    other.mkdir()
    text = bench_file.read_text().replace('name = "tiny"', 'name = "tiny2"')
    (other / "bench.toml").write_text(text)
    return [str(bench_file.parent), str(other)]


def pgrep(pattern: str) -> list[int]:
    """The processes whose command line holds `pattern`, this one left out."""
    done = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [int(p) for p in done.stdout.split() if int(p) != os.getpid()]


def kill_all(pattern: str) -> None:
    """SIGKILL every process whose command line holds `pattern`: what a failed test
    left running."""
    for pid in pgrep(pattern):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
