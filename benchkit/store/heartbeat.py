"""Heartbeats: each running pilot says, in the store, that it is alive and where it is.

A pilot writes `<store>/heartbeats/<run_id>.json` (its stage, host, pid, start and
last update, its label, and on Ray a token of the launch that runs it) when it starts,
at each stage and every `interval()` seconds (5 by default, `$BENCHKIT_HEARTBEAT_S`),
and removes it once its run is recorded. A run of another host whose heartbeat stopped
for three intervals of the promised 10 s is taken as crashed
(`benchkit.run.recovery`); `benchkit status` shows the stages, and a matrix on Ray
reads its own pilots' stages here (`benchkit.run.cluster`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import warnings
from collections.abc import Container
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path

from benchkit.errors import StoreWarning
from benchkit.store.atomic import replace_whole

PROMISED_S = 10.0  # a heartbeat at least this often
STALE_AFTER_S = 3 * PROMISED_S


def interval() -> float:
    return float(os.environ.get("BENCHKIT_HEARTBEAT_S") or 5.0)


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
    """A pilot's heartbeat: written once at its start, then by a daemon thread every
    few seconds and at each stage until `stop`. A stage is told to the thread, never
    written on the pilot's path (a write renamed over the last one can take
    milliseconds: ext4 writes the file out first)."""

    def __init__(self, store: Path, beat: Beat) -> None:
        self._store, self._beat = store, beat
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._due = threading.Event()  # a stage told: the next beat now
        self._beating = threading.Thread(target=self._beat_on, daemon=True)
        self._write()
        self._beating.start()

    def _write(self) -> None:
        now = datetime.now(UTC).isoformat()
        with self._lock:
            self._beat = beat = replace(self._beat, updated_at=now)
        with contextlib.suppress(OSError):  # a full store: its run will say so
            write_beat(self._store, beat)

    def _beat_on(self) -> None:
        while True:
            self._due.wait(interval())
            if self._stopped.is_set():
                return
            self._due.clear()
            self._write()

    def stage(self, name: str) -> None:
        """The pilot's stage, beaten at once by the thread."""
        with self._lock:
            self._beat = replace(self._beat, stage=name)
        self._due.set()

    def stop(self) -> None:
        """No more beats; the file removed."""
        self._stopped.set()
        self._due.set()
        self._beating.join(timeout=5)
        (_folder(self._store) / f"{self._beat.run_id}.json").unlink(missing_ok=True)
