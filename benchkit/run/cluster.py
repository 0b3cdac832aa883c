"""The Ray launcher: each pilot a Ray task, on a cluster or on a local one.

Ray is an optional extra (`pip install 'benchkit[ray]'`). A task gets a pilot's spec,
not its plan: it plans it again where it runs, so each node prepares its own mirror
and environment in its own cache, and writes the run to the store, a folder every
node must see at the same path. Its events go back through a Ray queue, drained into
the caller's sink here; its result is its run. A task is never retried by Ray: a
pilot that failed is recorded as it failed.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from benchkit.errors import UsageError
from benchkit.records import LauncherName, PilotSpec, Run
from benchkit.run.events import Event, Sink, relayed
from benchkit.run.launcher import Launched, Launcher, LaunchWarning
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import Plan, plan
from benchkit.store.store import Store

LOCAL_OBJECT_STORE = 128 * 1024**2  # a local cluster moves specs and runs, nothing big


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--launcher ray", "", "needs Ray: pip install 'benchkit[ray]'") from None
    return ray


def unanswered(address: str, timeout_s: float = 5.0) -> str | None:
    """Why nothing answers at a Ray address (`host:port`, `ray://host:port`), or None
    when something does or it cannot be told (`auto`, no port): Ray itself would try
    a dead address for minutes, printing a warning every few seconds."""
    try:
        where = urlsplit(address if "://" in address else f"ray://{address}")
        host, port = where.hostname, where.port
    except ValueError:
        return "not host:port"
    if not host or port is None:
        return None
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return (exc.strerror or str(exc) or type(exc).__name__).lower()


def check_address(address: str | None) -> None:
    """Raises `UsageError` when nothing answers at the Ray address (see `unanswered`)."""
    why = unanswered(address) if address else None
    if why:
        raise UsageError(address or "", "--ray-address", f"no Ray cluster answers there ({why})")


START_ATTEMPTS = 3
"""How many times a local cluster is started before benchkit gives up: Ray's raylet
waits 15 s for its agents' ports and aborts past that, which a loaded machine with a
cold page cache can miss (seen: the agent's imports took 16 s beside a test suite);
the next start finds the imports cached."""


def start_local(cpus: int) -> None:
    """A local Ray cluster of `cpus` CPUs for this process. Its workers run at the
    priority benchkit runs at: pilots are the work, not background jobs (Ray's
    default is niceness 15, which left them a third slower beside Ray's own daemons).
    A start that fails is tried again (`START_ATTEMPTS`), one that cannot succeed (a
    file system's refusal) is not; the last failure is one line."""
    ray = _ray()
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(
                num_cpus=cpus,
                object_store_memory=LOCAL_OBJECT_STORE,
                include_dashboard=False,
                logging_level=logging.WARNING,
                _system_config={"worker_niceness": 0},
            )
            return
        except Exception as exc:  # Ray raises a bare Exception when its node times out
            with contextlib.suppress(Exception):
                ray.shutdown()
            # the failed start's daemons die with their pipes; Python's word on each of
            # them, when their handles are collected, would read as benchkit's own
            warnings.filterwarnings("ignore", r"subprocess \d+ is still running", ResourceWarning)
            if isinstance(exc, OSError) or attempt == START_ATTEMPTS:
                raise UsageError(
                    "--launcher ray",
                    "",
                    f"the local Ray cluster did not start ({_first_line(exc)}); "
                    "--launcher processes runs the same pilots",
                ) from None
            warnings.warn(
                f"the local Ray cluster did not start ({_first_line(exc)}): starting it "
                f"again, {attempt + 1} of {START_ATTEMPTS} (a busy machine can be slower "
                "than Ray's own 30 s wait for its node)",
                LaunchWarning,
                stacklevel=2,
            )


def _first_line(exc: Exception) -> str:
    """An exception in one line: an OS error's reason and file, else its first line."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f": '{exc.filename}'" if exc.filename else "")
    said = str(exc).strip().splitlines()
    return said[0] if said else type(exc).__name__


def _pilot_task(
    spec: PilotSpec,
    store: Store,
    keep: bool,
    refresh_baseline: bool,
    sandbox: str,
    told: Any,
) -> Run:
    """One pilot, in a Ray worker: planned here, run, recorded in the store."""
    [planned] = plan([spec], refresh_baseline=refresh_baseline, sandbox=sandbox)

    def tell(event: Event) -> None:
        with contextlib.suppress(Exception):  # a lost event never loses the run
            told.actor.put_nowait.remote(event)  # not waited for: the pilot goes on

    return execute_plan(planned, store, keep=keep, launcher="ray", events=tell)


@dataclass(kw_only=True)
class OnRay(Launcher):
    """The pilots as Ray tasks, one CPU each: on the cluster at `address` (`auto`: the
    one this machine belongs to), else on a local cluster of `jobs` CPUs, stopped at
    the end. An interrupt cancels the tasks (each records its run) and is raised
    again."""

    name: ClassVar[LauncherName] = "ray"
    address: str | None = None

    def check(self) -> None:
        check_address(self.address)

    def launch(self, plans: list[Plan], store: Store, *, keep: bool, events: Sink) -> Launched:
        return _on_ray(
            plans,
            store,
            keep=keep,
            jobs=self.jobs,
            address=self.address,
            refresh_baseline=self.refresh_baseline,
            sandbox=self.sandbox,
            events=events,
        )


def _on_ray(
    plans: list[Plan],
    store: Store,
    *,
    keep: bool,
    jobs: int,
    address: str | None,
    refresh_baseline: bool,
    sandbox: str,
    events: Sink,
) -> Launched:
    """See `OnRay`."""
    launched = Launched()
    if not plans:
        return launched
    ray = _ray()
    from ray.util.queue import Queue

    started_here = not ray.is_initialized()
    if started_here:
        if address:
            try:
                ray.init(address=address, logging_level=logging.WARNING)
            except (ConnectionError, ValueError) as exc:  # no cluster there, or no address
                said = str(exc).strip().splitlines()
                raise UsageError(
                    address, "--ray-address", f"no Ray cluster to join ({said[0] if said else exc})"
                ) from None
        else:
            start_local(jobs)
    task = ray.remote(num_cpus=1, max_retries=0)(_pilot_task)
    told = Queue()
    done: dict[int, Run] = {}
    try:
        with relayed(_Drain(told), events):
            refs = [
                task.remote(p.spec, store, keep, refresh_baseline and n == 0, sandbox, told)
                for n, p in enumerate(plans)
            ]
            order = {ref: n for n, ref in enumerate(refs)}
            pending = list(refs)
            try:
                while pending:
                    ready, pending = ray.wait(pending, num_returns=1)
                    try:
                        done[order[ready[0]]] = ray.get(ready[0])
                    except Exception as exc:  # recorded by the task as its run's failure
                        launched.faults.append(_cause(exc))
            except KeyboardInterrupt:
                for ref in pending:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref)  # a KeyboardInterrupt in the task: it records its run
                with contextlib.suppress(Exception):
                    ray.wait(pending, num_returns=len(pending), timeout=60)
                raise
    finally:
        with contextlib.suppress(Exception):
            ray.kill(told.actor)
        if started_here:
            ray.shutdown()
    launched.runs.extend(done[n] for n in sorted(done))
    return launched


class _Drain:
    """A Ray queue as `relayed` takes one: `get` blocks, `put` ends the relay (once
    what is left is taken, `get` gives None)."""

    def __init__(self, told: Any) -> None:
        self._told = told
        self._ended = False

    def get(self) -> Any:
        from ray.util.queue import Empty

        while not self._ended:
            try:
                return self._told.get(timeout=0.5)
            except Empty:
                continue
        try:
            return self._told.get_nowait()
        except Empty:
            return None

    def put(self, end: None) -> None:
        self._ended = True


def _cause(exc: Exception) -> Exception:
    """The pilot's own error inside Ray's wrapper."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, Exception) else exc
