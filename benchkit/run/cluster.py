"""The Ray launcher: each pilot a Ray task, on a cluster or on a local one.

Ray is an optional extra (`pip install 'benchkit[ray]'`). A task gets a pilot's spec,
not its plan: it plans it again where it runs, so each node prepares its own mirror
and environment in its own cache, and writes the run to the store, a folder every
node must see at the same path. Its stages are read there, from its heartbeat, which
names the matrix's launch by a token; its run comes back as the task's result. (A
Ray queue would take an actor, a worker process of its own beside the pilots'.) A
task is never retried by Ray: a pilot that failed is recorded as it failed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import secrets
import signal
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from benchkit.errors import LaunchError, UsageError
from benchkit.records import LauncherName, PilotSpec, Run
from benchkit.run.events import Event, Recorded, Sink, StageBegun
from benchkit.run.launcher import Launched, Launcher, LaunchWarning
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import Plan, plan
from benchkit.run.recovery import recover
from benchkit.store.store import Store
from benchkit.workspace.processes import alive, left_to_the_end, process_start, signalled
from benchkit.workspace.signals import ctrl_c_noted

LOCAL_OBJECT_STORE = 128 * 1024**2  # a local cluster moves specs and runs, nothing big
LOOK_S = 0.25  # how often the caller reads its pilots' stages from their heartbeats
ASK_S = 2.0  # how often the caller asks whether its cluster still answers
ASK_TIMEOUT_S = 3.0  # an ask's wait for an answer: past a lost SYN's resend (1 s)
LOST_S = 30.0  # how long a cluster answers nothing before the caller calls it gone
ASKS_AGAIN = 3  # asks, half a second apart, before an interrupt calls a cluster gone


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
    matrix: str,
) -> tuple[Run | None, Exception | None]:
    """One pilot, in a Ray worker: planned here, run, recorded in the store. Its run,
    and the error the pilot raised, if any: a run recorded before its error still
    comes back, to be told to the caller's sink as a worker process's is."""
    told: list[Run] = []

    def tell(event: Event) -> None:
        if isinstance(event, Recorded):
            told.append(event.run)

    try:
        [planned] = plan([spec], refresh_baseline=refresh_baseline, sandbox=sandbox)
        run = execute_plan(planned, store, keep=keep, launcher="ray", events=tell, matrix=matrix)
    except Exception as exc:
        return (told[0] if told else None), _whole(exc)
    return run, None


def _whole(exc: Exception) -> Exception:
    """The error as it can reach the caller: itself when it pickles whole, else one
    that says it (an error that cannot be unpickled would lose its run with it)."""
    import pickle  # in a Ray worker, which has it: not in every command's start

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _ready() -> None:
    """A task that does nothing: its worker has imported benchkit to run it."""


@dataclass(kw_only=True)
class OnRay(Launcher):
    """The pilots as Ray tasks, one CPU each: on the cluster at `address` (`auto`: the
    one this machine belongs to), joined as the matrix starts, its workers importing
    benchkit while this process plans; else on a local cluster of `jobs` CPUs, started
    once the matrix is planned and stopped at its end. An interrupt cancels the tasks
    (each records its run) and is raised again."""

    name: ClassVar[LauncherName] = "ray"
    address: str | None = None
    _joined: bool = field(default=False, init=False, repr=False)  # by `start`: left by `close`
    _warming: list[Any] = field(default_factory=list, init=False, repr=False)
    _cpus: int = field(default=0, init=False, repr=False)  # the joined cluster's

    def check(self) -> None:
        check_address(self.address)

    def start(self, pilots: int) -> None:
        if not self.address or not pilots:
            return
        self.check()
        ray = _ray()
        if not ray.is_initialized():
            _join(self.address)
            self._joined = True
        self._cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)
        ready = ray.remote(num_cpus=1, max_retries=0)(_ready)
        self._warming = [ready.remote() for _ in range(min(self._cpus, pilots))]

    def concurrent(self) -> int:
        """On a cluster: as many pilots as it has CPUs (a task takes one); else `jobs`."""
        return self._cpus or self.jobs

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

    def close(self) -> None:
        if self._warming:  # taken, so that Ray says nothing of one that failed
            done, _ = _ray().wait(self._warming, num_returns=len(self._warming), timeout=0)
            for ref in done:
                with contextlib.suppress(Exception):  # a pilot's task says it again
                    _ray().get(ref)
            self._warming.clear()
        if self._joined:
            self._joined = False
            _leave(_ray())


def _leave(ray: Any) -> None:
    """This driver leaves the cluster it joined. A command joined to a cluster's GCS
    leaves as its process ends (see `left_to_the_end`): the cluster marks its job
    finished and ends the job's workers as the connection closes, as at any driver's
    end, where Ray's own leave (`ray.shutdown`, which Ray also registers for the
    process's exit as it is imported) waits 0.25 s on a poll of its core worker's. A
    Ray client's session (`ray://`), which its server keeps 30 s for a reconnect unless
    told, and benchkit used as a library, leave now."""
    client = ray.util.client.ray.is_connected()
    if client or not left_to_the_end(ray.shutdown):
        ray.shutdown()
        return
    atexit.unregister(ray.shutdown)  # Ray's own: left to the end above


def _join(address: str) -> None:
    """This process joined to the Ray cluster at `address`; raises `UsageError` when
    there is none."""
    ray = _ray()
    try:
        ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, ValueError) as exc:  # no cluster there, or no address
        said = str(exc).strip().splitlines()
        raise UsageError(
            address, "--ray-address", f"no Ray cluster to join ({said[0] if said else exc})"
        ) from None


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
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            _join(address)
        else:
            start_local(jobs)
    task = ray.remote(num_cpus=1, max_retries=0)(_pilot_task)
    matrix = f"{socket.gethostname()}-{secrets.token_hex(6)}"  # this launch's, in its beats
    done: dict[int, Run] = {}
    try:
        refs = [
            task.remote(p.spec, store, keep, refresh_baseline and n == 0, sandbox, matrix)
            for n, p in enumerate(plans)
        ]
        order = {ref: n for n, ref in enumerate(refs)}
        pending = list(refs)
        stages = _Stages(store, matrix, events)

        back: set[int] = set()  # the plans whose run came back, recorded

        def came_back(ready: list[Any]) -> None:
            died = False
            for ref in ready:
                try:
                    run, fault = ray.get(ref)
                except Exception as exc:  # its worker died, or it was cancelled
                    fault, lost_worker = _cause(exc)
                    launched.faults.append(fault)
                    died = died or lost_worker
                    continue
                if run is not None:
                    back.add(order[ref])
                    stages.ended(run.run_id)
                    with contextlib.suppress(Exception):  # a sink's fault never stops it
                        events(Recorded(run=run))
                if fault is not None:  # recorded by the task as its run's failure
                    launched.faults.append(fault)
                elif run is not None:
                    done[order[ref]] = run
            if died:
                _judged(store)  # the runs dead workers left (this machine's), their arms

        silence = Silence(_answers_at(address))
        lost = False  # the cluster called gone: its workers here being stopped
        try:
            with ctrl_c_noted() as noted:
                while pending:
                    ready, pending = ray.wait(pending, num_returns=1, timeout=LOOK_S)
                    if noted:  # a Ctrl-C that did not come out of Ray's wait
                        raise KeyboardInterrupt
                    stages.look()
                    came_back(ready)
                    if pending and silence.gone(time.monotonic()):
                        lost = True
                        stopped = _stopped_here(stages.at_work.values())
                        _judged(store)  # what they left, and what dead workers left
                        fault = _lost(silence, len(back), len(plans), stopped)
                        launched.faults.insert(0, fault)
                        break
        except KeyboardInterrupt:
            if lost:  # stopped as the cluster's loss stops them: not again
                raise
            if silence.heard_again():  # each task cancelled records its run
                for ref in pending:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref)  # a KeyboardInterrupt in the task
                with contextlib.suppress(Exception):
                    ready, _ = ray.wait(pending, num_returns=len(pending), timeout=60)
                    came_back(ready)  # what ended meanwhile (a cancelled one says no run)
            else:  # a dead cluster cancels nothing: its workers here are stopped as lost
                _stopped_here(stages.at_work.values())
                _judged(store)
            raise
    finally:
        if started_here:
            ray.shutdown()
    launched.runs.extend(done[n] for n in sorted(done))
    return launched


def _answers_at(address: str | None) -> str | None:
    """Where the joined cluster answers: a Ray client's address as given, else its
    GCS (`host:port`); None when that cannot be told from here (a Ray client joined
    before benchkit was called: the GCS it would name is the server's, inside the
    cluster), and then the cluster is not watched."""
    if address and address.startswith("ray://"):
        return address
    try:
        if _ray().util.client.ray.is_connected():
            return None
        return str(_ray().get_runtime_context().gcs_address) or None
    except Exception:  # an address Ray cannot tell is not watched
        return None


@dataclass
class Silence:
    """How long the cluster at `where` has answered nothing (`ask`: `unanswered`, a
    connection to it), asked at most once an `ASK_S`: gone once that is `LOST_S`. Ray's
    own driver would spin on a dead cluster at a core's worth of CPU, for a minute (then
    Ray aborts it, unrecorded) or for ever; a GCS that restarts (Ray's fault tolerance)
    is back well within `LOST_S`."""

    where: str | None
    ask: Callable[[str, float], str | None] = unanswered
    since: float | None = None  # the first ask that had no answer, since the last that had
    asked: float = -ASK_S
    why: str = ""

    def gone(self, now: float) -> bool:
        if self.where is None or now - self.asked < ASK_S:
            return False
        self.asked = now
        if self.heard():
            self.since = None
            return False
        self.since = now if self.since is None else self.since
        return now - self.since >= LOST_S

    def heard_again(self) -> bool:
        """Whether the cluster answers within a few asks (a moment's lost answer is
        not a dead cluster)."""
        for ask in range(ASKS_AGAIN):
            if self.heard():
                return True
            if ask < ASKS_AGAIN - 1:
                time.sleep(0.5)
        return False

    def heard(self) -> bool:
        """Whether the cluster answers now (one that is not watched, always)."""
        if self.where is None:
            return True
        why = self.ask(self.where, ASK_TIMEOUT_S)
        self.why = why or self.why
        return why is None


STOP_S = 60.0  # how long a worker stopped by the caller may take to record its run


def _stopped_here(workers: Iterable[tuple[str, int, int | None]]) -> int:
    """Each of this machine's Ray workers (`host`, `pid`, its start) still at a pilot,
    stopped by a SIGTERM (a worker records its run `interrupted`, its arm stopped, and
    ends), and waited for: a worker whose cluster is gone lingers, its arm at work. How
    many were stopped; a process that is no longer the worker seen is passed over."""
    here = socket.gethostname()
    mine = {
        pid: start
        for host, pid, start in workers
        if host == here and start is not None and alive(pid, start) and _a_ray_worker(pid)
    }
    return signalled(mine, signal.SIGTERM, STOP_S)


def _judged(store: Store) -> None:
    """The runs dead workers left, judged now (see `recover`: this machine's at once,
    another's once its heartbeat stopped); a store that cannot be read or written now
    leaves them to the next benchkit."""
    with contextlib.suppress(Exception):
        recover(store)


def _started_before(start: int, when: str) -> bool:
    """Whether a process that started at `start` (clock ticks since boot) started by
    `when` (ISO 8601; a second's grace for the boot time's whole seconds), as a pilot's
    worker did before its pilot began."""
    boot = _boot_s()
    if boot is None:
        return True  # not told here: its start and `ray::` title are the checks
    began = boot + start / os.sysconf("SC_CLK_TCK")
    return began <= datetime.fromisoformat(when).timestamp() + 1.0


@cache
def _boot_s() -> int | None:
    """When this machine booted (seconds since the epoch), or None where not told."""
    try:
        with open("/proc/stat") as stat:
            return next(int(line.split()[1]) for line in stat if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None


def _a_ray_worker(pid: int) -> bool:
    """Whether `pid` is a Ray worker (Ray titles each `ray::...`)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::")
    except OSError:
        return False


def _lost(silence: Silence, back: int, pilots: int, stopped: int) -> LaunchError:
    """The error of a matrix whose cluster is gone: `back` of its `pilots` runs came
    back, `stopped` of its workers on this machine were stopped."""
    here = f"; {stopped} at work on this machine stopped and recorded" if stopped else ""
    return LaunchError(
        "--launcher ray",
        "",
        f"the Ray cluster stopped answering ({silence.where}: {silence.why}): {back} of "
        f"{pilots} pilots' runs came back{here} (`benchkit recover` judges those of other "
        "machines once their heartbeats stop)",
    )


class _Stages:
    """The stages the pilots of a `matrix` began, as their heartbeats in the store say,
    told to `events` as `StageBegun`: each stage once, at the first look that finds it
    (one shorter than a look may pass unseen), none after the pilot's run came back."""

    def __init__(self, store: Store, matrix: str, events: Sink) -> None:
        self._store, self._matrix, self._events = store, matrix, events
        self._told: dict[str, str] = {}  # run id: the last stage told
        self._ended: set[str] = set()
        self._others: set[str] = set()  # run ids of other launches' pilots
        # run id: its worker's host, pid and start (this machine's, read as first seen)
        self.at_work: dict[str, tuple[str, int, int | None]] = {}
        self._here = socket.gethostname()

    def look(self) -> None:
        try:  # other launches' beats are read once; what cannot be read, passed quietly
            beats = self._store.beats(skip=self._others | self._ended, warn=False)
        except OSError:  # the folder, out of reach a moment: the next look tells
            return
        for beat in beats.values():
            if beat.matrix != self._matrix:
                self._others.add(beat.run_id)
                continue
            if beat.run_id not in self.at_work:
                here = beat.host == self._here
                start = process_start(beat.pid) if here else None
                if start is not None and not _started_before(start, beat.started_at):
                    start = None  # its pid another process's now: its worker is gone
                self.at_work[beat.run_id] = (beat.host, beat.pid, start)
            if beat.stage == "start" or self._told.get(beat.run_id) == beat.stage:
                continue  # not yet at a stage, or at one told
            self._told[beat.run_id] = beat.stage
            worker, label = f"{beat.host}:{beat.pid}", beat.label
            begun = StageBegun(run_id=beat.run_id, label=label, stage=beat.stage, worker=worker)
            with contextlib.suppress(Exception):  # a sink's fault never stops the matrix
                self._events(begun)

    def ended(self, run_id: str) -> None:
        """The pilot's run came back: its beat, if it is read again, is not."""
        self._ended.add(run_id)
        self._told.pop(run_id, None)
        self.at_work.pop(run_id, None)


def _cause(exc: Exception) -> tuple[Exception, bool]:
    """The pilot's own error inside Ray's wrapper, and whether its worker died: Ray's
    own error (a worker that died at a pilot, its run left for recovery) as one line;
    a task ended by an interrupt Ray did not send (its worker signalled), which
    recorded its run, as one line too."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, Exception):
        return cause, False
    kind = type(exc).__name__
    if isinstance(cause, BaseException):
        said = f"a pilot's task was interrupted ({type(cause).__name__}); its run is recorded"
        return LaunchError("--launcher ray", "", said), False
    if type(exc).__module__.startswith("ray.") and kind != "TaskCancelledError":
        said = re.sub(r"\x1b\[[0-9;]*m", "", _first_line(exc))  # Ray colours a title
        return LaunchError("--launcher ray", "", f"a pilot's task failed ({kind}: {said})"), True
    return exc, False
