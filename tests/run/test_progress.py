"""The progress of a matrix: the board its events make, drawn on a terminal (a real
pseudo-terminal here) and left for `benchkit status`."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import benchkit
from benchkit.analysis.text import status
from benchkit.run.cluster import _Stages
from benchkit.run.events import Event, Planned, Recorded, StageBegun
from benchkit.run.progress import Board, Ledger, Terminal, board_lines, read_matrices
from benchkit.store.heartbeat import Beat, write_beat
from benchkit.store.store import Store
from tests.conftest import TinyRepo
from tests.helpers import PATIENCE_S, benchkit_in_process


def test_the_board_counts_pilots_cost_and_time_left_and_shows_each_worker(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    [run] = benchkit.pilot(tiny.bench_dir, "human", store=tmp_path / "s", sandbox="none")
    board = Board()
    board.take(Planned(run_set="s1", pilots=4, recorded=("a", "b"), running=0, jobs=2))
    board.take(StageBegun(run_id="r1", label="tiny noop #1", stage="verify", worker="h:11"))
    board.take(StageBegun(run_id="r2", label="tiny noop #2", stage="execute", worker="h:12"))
    start = board.started
    board.take(Recorded(run=run))
    head, bar, *workers = board_lines(board, start + 30)
    assert head.startswith("set s1: 1 of 4 pilots · 1 ok · no cost reported · 0:30 elapsed")
    assert head.endswith("~1:30 left")  # 30 s a pilot so far, 3 to go
    assert bar == "[######..................]"
    assert [w.split() for w in workers] == [
        ["h:11", "tiny", "noop", "#1", "verify"],
        ["h:12", "tiny", "noop", "#2", "execute"],
    ]


def _in_a_terminal(argv: list[str]) -> str:
    """What a command writes to a pseudo-terminal, as a user sees it drawn."""
    main, side = pty.openpty()
    proc = subprocess.Popen(argv, stdin=side, stdout=side, stderr=side, close_fds=True)
    os.close(side)
    out = b""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the command closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=PATIENCE_S)
    os.close(main)
    return out.decode(errors="replace")


def test_a_matrix_draws_its_progress_on_a_terminal_and_quiet_turns_it_off(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", "noop", "--arm", "human", "--jobs", "2", "--sandbox", "none"]
    shown = _in_a_terminal([*argv, "--set", "p", "--store", str(tmp_path / "a")])
    assert "set p: 0 of 2 pilots" in shown and "set p: 2 of 2 pilots · 2 ok" in shown
    assert re.search(r"\S+:\d+ +tiny (noop|human) #1 +(prepare|environment|baseline)", shown)
    assert "\x1b[" in shown and "F\x1b[J" in shown  # drawn again in place
    quiet = _in_a_terminal([*argv, "--quiet", "--store", str(tmp_path / "b")])
    assert "pilots ·" not in quiet and "\x1b[" not in quiet
    assert quiet.count(": ok ") == 2  # the runs' lines are still printed


def test_status_counts_a_set_and_the_queued_pilots_of_a_matrix_at_work() -> None:
    now = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
    rows = [{"status": "ok", "cost_usd": 0.25, "run_id": "a"}] * 3
    matrix = {
        "run_set": "s1",
        "pilots": 8,
        "finished": 3,
        "running": 2,
        "host": "h",
        "pid": 7,
        "started_at": "2026-11-30T12:00:00+00:00",
    }
    text = status(rows, {}, now, [matrix])
    assert text.splitlines() == [
        "3 runs: 3 ok",
        "cost so far: $0.75 (3 reported)",
        "queued: 3; at work:",
        "  set s1: 3 of 8 done, 2 running, 3 queued, for 30 s; ~50 s left at its pace so far"
        "  (h:7)",
    ]


def test_status_passes_over_a_matrix_ledger_it_cannot_read(tmp_path: Path) -> None:
    """A ledger in `matrices/` that names a live process but lacks its counts, has
    them of the wrong type, or is not JSON, is passed over: `status` still reads."""
    store = tmp_path / "store"
    (store / "matrices").mkdir(parents=True)
    here = {"host": os.uname().nodename, "pid": os.getpid(), "process_start": None}
    good = {**here, "run_set": "s1", "pilots": 4, "finished": 1, "running": 1}
    good |= {"started_at": "2026-11-30T12:00:00+00:00", "updated_at": "2026-11-30T12:00:01+00:00"}
    ledgers = {
        "good": good,
        "no-keys": here,
        "wrong-types": {**good, "pilots": "four"},
        "a-list": [1, 2],
    }
    for name, line in ledgers.items():
        (store / "matrices" / f"{name}.json").write_text(json.dumps(line))
    (store / "matrices" / "garbage.json").write_text("{not json")
    done = benchkit_in_process("status", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert "set s1: 1 of 4 done" in done.stdout
    assert done.stdout.count("set ") == 1


def test_a_pilot_removes_the_ledger_a_killed_benchkit_of_this_host_left(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    (store / "matrices").mkdir(parents=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    line = {"host": os.uname().nodename, "pid": int(gone.stdout), "process_start": 1}
    line |= {"run_set": "s1", "pilots": 4, "finished": 1, "running": 1}
    line |= {"started_at": "2026-11-30T12:00:00+00:00", "updated_at": "2026-11-30T12:00:01+00:00"}
    left = store / "matrices" / f"{line['host']}-{line['pid']}.json"
    elsewhere = store / "matrices" / "other-host-7.json"
    left.write_text(json.dumps(line))
    elsewhere.write_text(json.dumps({**line, "host": "other-host", "pid": 7}))
    benchkit.pilot(tiny.bench_dir, "noop", store=store, sandbox="none", progress=False)
    assert not left.exists()  # its benchkit is gone: nothing reads it again
    assert elsewhere.exists()  # another host's: only its heartbeats can tell


def test_a_ray_matrix_tells_each_stage_of_its_own_pilots_once_from_their_heartbeats(
    tmp_path: Path,
) -> None:
    """On Ray, a task's stages come from its heartbeat in the store: the matrix's own
    pilots (by the matrix their beat names), each stage once, none once the pilot's run
    came back, nor the `start` a beat holds before its first stage."""
    at = datetime.now(UTC).isoformat()

    def beat(run_id: str, stage: str, matrix: str) -> None:
        label = f"tiny noop #{run_id[-1]}"
        write_beat(
            tmp_path,
            Beat(
                run_id=run_id,
                stage=stage,
                host="h",
                pid=7,
                started_at=at,
                updated_at=at,
                label=label,
                matrix=matrix,
            ),
        )

    told: list[tuple[str, str, str, str]] = []

    def sink(event: Event) -> None:
        assert isinstance(event, StageBegun)
        told.append((event.run_id, event.label, event.stage, event.worker))

    stages = _Stages(Store.at(tmp_path), "me-1", sink)
    beat("r1", "start", "me-1")
    beat("r2", "prepare", "other-2")  # another matrix's pilot on the same store
    stages.look()
    assert told == []
    beat("r1", "prepare", "me-1")
    stages.look()
    stages.look()  # the same stage, not told again
    beat("r1", "verify", "me-1")
    stages.look()
    assert told == [("r1", "tiny noop #1", s, "h:7") for s in ("prepare", "verify")]
    stages.ended("r1")
    beat("r1", "cleanup", "me-1")  # read after its run came back: the board let it go
    stages.look()
    assert len(told) == 2
    # a beat of an earlier benchkit (no label, no matrix) is another launch's; one of a
    # later one reads without what it does not know; one unreadable is passed quietly
    older = {"run_id": "r3", "stage": "verify", "host": "h", "pid": 8}
    (tmp_path / "heartbeats" / "r3.json").write_text(
        json.dumps({**older, "started_at": at, "updated_at": at})
    )
    newer = {**older, "run_id": "r4", "started_at": at, "updated_at": at, "matrix": "me-1"}
    (tmp_path / "heartbeats" / "r4.json").write_text(json.dumps({**newer, "gpu": "none"}))
    (tmp_path / "heartbeats" / "r5.json").write_text("{half a beat")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stages.look()
    assert caught == []
    assert told[2:] == [("r4", "", "verify", "h:8")]
    assert Store.at(tmp_path).beats(warn=False)["r3"].matrix == ""


def test_a_pipe_shows_a_pilots_line_whole_and_the_ledger_counts_it_though_stages_passed_unseen(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """On Ray a stage shorter than a look passes unseen, the first (`prepare`) and the
    last (`cleanup`) included: in a pipe, the pilot's line still starts with its label
    and ends as its run comes back; the ledger counts it running from its first stage
    seen."""
    [run] = benchkit.pilot(tiny.bench_dir, "noop", store=tmp_path / "s", sandbox="none")
    stream = io.StringIO()
    terminal, ledger = Terminal(stream), Ledger(Store.at(tmp_path / "s"))
    label = "tiny noop #1"
    for event in (
        Planned(run_set="s1", pilots=2, recorded=(), running=0, jobs=1),
        StageBegun(run_id=run.run_id, label=label, stage="verify", worker="h:1"),
        StageBegun(run_id=run.run_id, label=label, stage="score", worker="h:1"),
    ):
        terminal(event)
        ledger(event)
    ledger.settled()
    [matrix] = read_matrices(Store.at(tmp_path / "s"))
    assert matrix["running"] == 1
    terminal(Recorded(run=run))
    ledger(Recorded(run=run))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "tiny noop #1: verify score"
    assert lines[1].startswith("set s1: 1 of 2 pilots · 1 ok")
    ledger.close()
    ledger(Recorded(run=run))  # a run told as the matrix ends: no ledger again
    ledger.settled()
    assert read_matrices(Store.at(tmp_path / "s")) == []


def test_a_pipe_tells_a_run_recorded_in_the_middle_of_the_next_pilots_line(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A serial launch tells a run once its record, written by a thread, is done: in
    the middle of the next pilot's line of stages, which goes on under its label."""
    [run] = benchkit.pilot(tiny.bench_dir, "noop", store=tmp_path / "s", sandbox="none")
    stream = io.StringIO()
    terminal = Terminal(stream)
    before = StageBegun(run_id=run.run_id, label="tiny noop #1", stage="cleanup", worker="h:1")
    after = [
        StageBegun(run_id="next", label="tiny noop #2", stage=s, worker="h:1")
        for s in ("prepare", "environment", "baseline")
    ]
    planned = Planned(run_set="s1", pilots=2, recorded=(), running=0, jobs=1)
    told: list[Event] = [planned, before, after[0], Recorded(run=run), *after[1:]]
    for event in told:
        terminal(event)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "tiny noop #1: cleanup"
    assert lines[1] == "tiny noop #2: prepare"
    assert lines[2].startswith("set s1: 1 of 2 pilots · 1 ok")
    assert lines[3] == "tiny noop #2: environment baseline"
