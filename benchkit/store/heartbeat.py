"""Heartbeats: each running pilot says, in the store, that it is alive and where it is.

A pilot writes `<store>/heartbeats/<run_id>.json` (its stage, host, pid, start and
last update, its label, and on Ray a token of the launch that runs it) when it starts,
at each stage (within `STAGE_SEEN_S`) and every `interval()` seconds (5 by default,
`$BENCHKIT_HEARTBEAT_S`), and removes it once its run is recorded. A run of another
host whose heartbeat stopped for three intervals of the promised 10 s is taken as
crashed (`benchkit.run.recovery`); `benchkit status` shows the stages, and a matrix on Ray
reads its own pilots' stages here (`benchkit.run.cluster`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
import warnings
from collections.abc import Container
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path

from benchkit.errors import StoreWarning
from benchkit.store.atomic import replace_whole

PROMISED_S = 10.0  # a heartbeat at least this often
STALE_AFTER_S = 3 * PROMISED_S
STAGE_SEEN_S = 0.1  # a stage told is beaten within this (Ray's launcher reads 4 a second)


def interval() -> float:
    """Seconds between two beats: `$BENCHKIT_HEARTBEAT_S`, else (or where it is not a
    positive number of seconds) 5."""
    try:
        said = float(os.environ.get("BENCHKIT_HEARTBEAT_S") or 5.0)
    except ValueError:
        return 5.0
    return said if 0 < said < PROMISED_S * 100 else 5.0


@dataclass(frozen=True, kw_only=True)
class Beat:
    run_id: str
    stage: str
    host: str
    pid: int
    started_at: str  # ISO 8601, UTC
    updated_at: str
    label: str = ""  # `demo human #1`
    matrix: str = ""  # the launch that runs it, by a token (the Ray launcher's); else ""

    def __post_init__(self) -> None:
        """A beat read back is checked whole: a field of another type, or a time with
        no zone, is a bad file, not an error of every later read."""
        for name in ("run_id", "stage", "host", "started_at", "updated_at", "label", "matrix"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name}: not a string")
        if not isinstance(self.pid, int):
            raise TypeError("pid: not a number")
        for name in ("started_at", "updated_at"):
            if datetime.fromisoformat(getattr(self, name)).tzinfo is None:
                raise ValueError(f"{name}: a time with no zone")

    def age_s(self, now: datetime) -> float:
        return (now - datetime.fromisoformat(self.updated_at)).total_seconds()


def _folder(store: Path) -> Path:
    return store / "heartbeats"


def write_beat(store: Path, beat: Beat) -> None:
    """The beat, written atomically (a reader never sees half of it)."""
    folder = _folder(store)
    folder.mkdir(parents=True, exist_ok=True)
    replace_whole(folder / f"{beat.run_id}.json", json.dumps(asdict(beat)))


FIELDS = frozenset(f.name for f in fields(Beat))


def read_beats(store: Path, *, skip: Container[str] = (), warn: bool = True) -> dict[str, Beat]:
    """The heartbeats in the store by run id, but for the run ids to `skip`; an
    unreadable one is skipped, with a warning that names it unless not to `warn` (one
    being replaced as it is read is not). A field it does not know (a later benchkit's)
    is left out."""
    found = {}
    for path in sorted(_folder(store).glob("*.json")):
        if path.stem in skip:
            continue
        try:
            said = json.loads(path.read_text())
            beat = Beat(**{k: v for k, v in said.items() if k in FIELDS})
        except FileNotFoundError:
            continue  # its run was recorded meanwhile
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            if warn:
                warnings.warn(f"skipped {path}: {exc}", StoreWarning, stacklevel=2)
            continue
        found[beat.run_id] = beat
    return found


class Heartbeat:
    """A pilot's heartbeat: written by the process's one beating thread (`_Beating`) as
    it starts, at each stage and every few seconds until `stop`. Nothing is written on
    the pilot's path (a write renamed over the last one can take milliseconds: ext4
    writes the file out first), nor a thread started or woken for a stage: a stage is
    left for the thread to see, and whoever needs the first beat in the store (the
    pilot's `running` row, which recovery reads beside it) waits for it
    (`first_written`)."""

    def __init__(self, store: Path, beat: Beat) -> None:
        self._store, self._beat = store, beat
        self._stage = beat.stage  # the stage told last: the next beat's
        self._writing = threading.Lock()  # a beat written, or the heartbeat stopped
        self._stopped = False
        self._first = threading.Event()  # the first beat written (or it could not be)
        self.due = 0.0  # when its next beat is due (`time.monotonic`): at once
        _BEATING.add(self)

    def write(self) -> None:
        """A beat: the stage told last, now. Not once stopped: the file stays removed."""
        try:
            with self._writing:
                if self._stopped:
                    return
                self._beat = beat = replace(
                    self._beat, stage=self._stage, updated_at=datetime.now(UTC).isoformat()
                )
                with contextlib.suppress(OSError):  # a full store: its run will say so
                    write_beat(self._store, beat)
        finally:
            self._first.set()

    def first_written(self, timeout_s: float | None = None) -> bool:
        """Whether its first beat was tried (written, unless the store is full) within
        `timeout_s`, or it was stopped first (with no beat written: a caller that
        stops it after this, as a pilot stops its own after its `running` row is
        written, has its beat in the store)."""
        return self._first.wait(timeout_s)

    def stage(self, name: str) -> None:
        """The pilot's stage, beaten by the thread within `STAGE_SEEN_S`."""
        self._stage = name
        self.due = 0.0  # after the stage: the thread reads it once it set the next due

    def stop(self) -> None:
        """No more beats; the file removed."""
        _BEATING.remove(self)
        with self._writing:  # a beat being written is written first
            self._stopped = True
        self._first.set()
        (_folder(self._store) / f"{self._beat.run_id}.json").unlink(missing_ok=True)


class _Beating:
    """The process's one thread that writes its pilots' heartbeats, each when it is
    due, started with the first (a worker process of its own, a forked child: its
    own), and woken by a word put in its queue as a heart is added. A stage told
    takes no lock and wakes no thread: the heart's next beat is due at once, and the
    thread, while it has hearts, looks every `STAGE_SEEN_S` for one due. (A thread
    woken on the pilot's path can cost it its core: with both cores busy, 2 to 3% of
    the beats that woke the thread took over 1 ms, up to the GIL's 5 ms switch
    interval and beyond; none that woke none.)"""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the hearts, and the thread
        self._woken: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._hearts: list[Heartbeat] = []
        self._thread: threading.Thread | None = None

    def add(self, heart: Heartbeat) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                thread = threading.Thread(
                    target=self._beat_on, name="benchkit-heartbeat", daemon=True
                )
                thread.start()  # what cannot start raises here, and nothing is left
                self._thread = thread
            self._hearts.append(heart)
        self._woken.put(None)

    def remove(self, heart: Heartbeat) -> None:
        with self._lock:
            if heart in self._hearts:
                self._hearts.remove(heart)

    def forked(self) -> None:
        """In a forked child: no thread, no heartbeat of the parent's."""
        self._lock, self._woken = threading.Lock(), queue.SimpleQueue()
        self._hearts, self._thread = [], None

    def _beat_on(self) -> None:
        while True:
            with contextlib.suppress(queue.Empty):  # then a heart told due meanwhile
                while True:  # is seen, or wakes it
                    self._woken.get_nowait()
            with self._lock:
                hearts = list(self._hearts)
            now = time.monotonic()
            dues = [heart.due for heart in hearts]  # read once: a stage may make one due now
            due = [heart for heart, when in zip(hearts, dues, strict=True) if when <= now]
            if not due:
                next_due = min(dues, default=None)
                wait = None if next_due is None else min(next_due - now, STAGE_SEEN_S)
                with contextlib.suppress(queue.Empty):
                    self._woken.get(timeout=wait)
                continue
            for heart in due:
                heart.due = now + interval()  # before its stage is read (`write`)
            for heart in due:
                try:
                    heart.write()
                except Exception as exc:  # the next pilots' hearts beat all the same
                    warnings.warn(f"a heartbeat was not written: {exc}", StoreWarning, stacklevel=1)


_BEATING = _Beating()
os.register_at_fork(after_in_child=_BEATING.forked)
