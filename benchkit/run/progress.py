"""The progress of a matrix, shown while it runs: sinks of its events.

`Board` follows the events (pure state); `board_lines` says it: n of N, by status,
cost so far, an estimate of the time left, and each worker's pilot and stage.
`Terminal` draws it on a terminal (redrawn in place on a TTY; one line per finished
pilot elsewhere), `Notebook` in a notebook's output (one display, updated), and
`Ledger` writes it to the store for `benchkit status` (the queued pilots, the time
left).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from benchkit.run.events import Event, Planned, Recorded, Sink, StageBegun
from benchkit.run.liveness import lives
from benchkit.store.atomic import replace_whole
from benchkit.store.store import Store
from benchkit.workspace.processes import process_start

BAR = 24  # characters of the bar


@dataclass(kw_only=True)
class Board:
    """What a matrix has done so far, as its events told it."""

    run_set: str = ""
    pilots: int = 0
    recorded: int = 0  # units the set held before
    jobs: int = 1
    done: dict[str, int] = field(default_factory=dict)  # by status
    cost: float = 0.0
    costs: int = 0  # runs that reported a cost
    at_work: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # run id: worker ...
    started: float = field(default_factory=time.monotonic)

    def take(self, event: Event) -> None:
        if isinstance(event, Planned):
            self.run_set, self.pilots, self.jobs = event.run_set, event.pilots, event.jobs
            self.recorded = len(event.recorded)
            self.started = time.monotonic()
        elif isinstance(event, StageBegun):
            self.at_work[event.run_id] = (event.worker, event.label, event.stage)
        elif isinstance(event, Recorded):
            run = event.run
            self.at_work.pop(run.run_id, None)
            self.done[run.status] = self.done.get(run.status, 0) + 1
            if run.report.cost_usd is not None:
                self.cost += run.report.cost_usd
                self.costs += 1

    @property
    def finished(self) -> int:
        return sum(self.done.values())

    def left_s(self, now: float) -> float | None:
        """Seconds left, from the pace so far; None before the first pilot ends."""
        if not self.finished:
            return None
        return (now - self.started) / self.finished * (self.pilots - self.finished)


def clock(seconds: float) -> str:
    minutes, s = divmod(round(seconds), 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}:{m:02}:{s:02}" if hours else f"{m}:{s:02}"


def board_lines(board: Board, now: float) -> list[str]:
    """The board as lines of text: its head, its bar, then one line per pilot at work."""
    n, total = board.finished, board.pilots
    filled = round(BAR * n / total) if total else BAR
    parts = [f"set {board.run_set}: {n} of {total} pilots"]
    if board.done:
        parts.append(", ".join(f"{c} {s}" for s, c in sorted(board.done.items())))
    parts.append(f"${board.cost:.2f} so far" if board.costs else "no cost reported")
    parts.append(f"{clock(now - board.started)} elapsed")
    left = board.left_s(now)
    if left is not None and n < total:
        parts.append(f"~{clock(left)} left")
    lines = [" · ".join(parts), f"[{'#' * filled}{'.' * (BAR - filled)}]"]
    for worker, label, stage in sorted(board.at_work.values(), key=lambda w: w[1]):
        lines.append(f"  {worker:<22} {label:<36} {stage}")
    return lines


class Terminal:
    """The board on a terminal stream. On a TTY it is redrawn in place after every
    event, below what `printer` prints of it; elsewhere (a pipe, a log) its head line
    after each finished pilot, and, one pilot at a time, each stage as it begins."""

    def __init__(self, stream: IO[str], printer: Sink | None = None) -> None:
        self._stream = stream
        self._printer = printer
        self._live = stream.isatty()
        self._drawn = 0
        self._open = False  # a pilot's line of stages, not ended yet
        self._line = ""  # whose stages the last line holds (its run id)
        self.board = Board()

    def __call__(self, event: Event) -> None:
        self._clear()
        begun = isinstance(event, StageBegun) and event.run_id not in self.board.at_work
        if self._open and (begun or isinstance(event, Recorded)):  # its cleanup passed unseen
            self._stream.write("\n")
            self._open, self._line = False, ""
        if self._printer is not None:
            self._printer(event)
        self.board.take(event)
        lines = board_lines(self.board, time.monotonic())
        if self._live and self.board.pilots:
            self._stream.write("".join(f"{line}\n" for line in lines))
            self._drawn = len(lines)
        elif isinstance(event, Recorded):
            self._stream.write(f"{lines[0]}\n")
        elif isinstance(event, StageBegun) and self.board.jobs == 1:
            # its label as its first stage is told (on Ray: seen), and again where the
            # run before it was told in the middle of its line (its record written late)
            again = self._line != event.run_id
            start = f"{event.label}:" if begun or again else ""
            self._open, self._line = event.stage != "cleanup", event.run_id
            self._stream.write(f"{start} {event.stage}" + ("" if self._open else "\n"))
        self._stream.flush()

    def _clear(self) -> None:
        if self._drawn:
            self._stream.write(f"\x1b[{self._drawn}F\x1b[J")  # up, and clear to the end
            self._drawn = 0

    def close(self) -> None:
        """The board off the screen: the table below says what it said."""
        self._clear()
        self._stream.flush()


class Notebook:
    """The board in a notebook cell's output: one display, updated at each event."""

    def __init__(self) -> None:
        from IPython.display import display

        self.board = Board()
        self._handle = display(_Shown([]), display_id=True)  # type: ignore[no-untyped-call]

    def __call__(self, event: Event) -> None:
        self.board.take(event)
        if self._handle is not None:
            self._handle.update(_Shown(board_lines(self.board, time.monotonic())))


@dataclass(frozen=True)
class _Shown:
    lines: list[str]

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    def _repr_html_(self) -> str:
        import html

        if not self.lines:
            return ""
        head, bar, *workers = self.lines
        filled = bar.count("#")
        meter = f'<progress value="{filled}" max="{BAR}" style="width:24em"></progress>'
        rows = "".join(f"{html.escape(w)}\n" for w in workers)
        return f"<pre>{html.escape(head)}\n</pre>{meter}<pre>{rows}</pre>"


def in_notebook() -> bool:
    """Whether this process is a notebook's kernel."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    get = getattr(shell, "get_ipython", None)
    kernel = get() if callable(get) else None
    return kernel is not None and hasattr(kernel, "kernel")


class Ledger:
    """The matrix's own line in the store (`<store>/matrices/<host>-<pid>.json`): its
    set, pilots, how many are done and since when; removed when it ends. `benchkit
    status` counts the queued pilots and the time left from it.

    Written by a thread of its own, the latest line as soon as it can (a write renamed
    over the last one waits for the disk, up to a millisecond as pilots write, at
    every pilot's start and end), never on the pilots' path."""

    def __init__(self, store: Store) -> None:
        host, pid = socket.gethostname(), os.getpid()
        self._path = store.matrices / f"{host}-{pid}.json"
        self.board = Board()
        self._since = datetime.now(UTC).isoformat()
        self._owner = {"host": host, "pid": pid, "process_start": process_start(pid)}
        self._latest: dict[str, Any] | None = None  # the line to write next, if any
        self._lock = threading.Lock()  # events may come from a launcher's thread
        self._closed = False
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchkit-ledger")

    def __call__(self, event: Event) -> None:
        later = isinstance(event, StageBegun) and event.run_id in self.board.at_work
        self.board.take(event)
        if later:  # a later stage of a pilot it counts from its first stage told
            return
        b = self.board
        line = {
            "run_set": b.run_set,
            "pilots": b.pilots,
            "finished": b.finished,
            "running": len(b.at_work),
            **self._owner,
            "started_at": self._since,
            "updated_at": datetime.now(UTC).isoformat(),
        }
        with self._lock:
            if self._closed:  # a run told as the matrix ends: the ledger is gone
                return
            pending, self._latest = self._latest is not None, line
            if not pending:  # else the write to come takes this line
                self._writer.submit(self._write)

    def _write(self) -> None:
        with self._lock:
            line, self._latest = self._latest, None
        if line is None:
            return
        with contextlib.suppress(OSError):  # a full store: the runs say so
            self._path.parent.mkdir(parents=True, exist_ok=True)
            replace_whole(self._path, json.dumps(line))

    def settled(self) -> None:
        """Once the lines told so far are written."""
        with self._lock:
            done = None if self._closed else self._writer.submit(self._write)
        if done is not None:
            done.result()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._writer.shutdown(wait=True)
        self._path.unlink(missing_ok=True)


def read_matrices(store: Store, *, forget: bool = False) -> list[dict[str, Any]]:
    """The matrices at work on the store (their ledgers); one of this host whose
    benchkit is gone is not (a SIGKILL leaves its ledger), nor an unreadable one.
    With `forget`, a gone benchkit's ledger is removed (a writer's tidying)."""
    found = []
    for path in sorted(store.matrices.glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            line = json.loads(path.read_text())
            if not _ledger(line):
                continue
            if lives(line["host"], line["pid"], line.get("process_start")):
                found.append(line)
            elif forget:
                path.unlink(missing_ok=True)
    return found


LEDGER = {"run_set": str, "pilots": int, "finished": int, "running": int, "host": str}
LEDGER |= {"pid": int, "started_at": str, "updated_at": str}


def _ledger(line: object) -> bool:
    """Whether a ledger read holds what `Ledger` writes, of its types."""
    return isinstance(line, dict) and all(isinstance(line.get(k), t) for k, t in LEDGER.items())


def fan(*sinks: Sink | None) -> Sink:
    """One sink that tells every given one, in order."""
    chosen = [s for s in sinks if s is not None]

    def tell(event: Event) -> None:
        for sink in chosen:
            sink(event)

    return tell


@contextlib.contextmanager
def shown(progress: bool | None, events: Sink | None) -> Iterator[Sink]:
    """The sink of a matrix run from the API: `events`, and the progress display when
    `progress` (by default: in a notebook; on stderr elsewhere when asked)."""
    display: Callable[[Event], None] | None = None
    terminal: Terminal | None = None
    if progress or (progress is None and in_notebook()):
        if in_notebook():
            display = Notebook()
        else:
            display = terminal = Terminal(sys.stderr)
    try:
        yield fan(display, events)
    finally:
        if terminal is not None:
            terminal.close()
