"""Pilots in worker processes (`--jobs`): the same records as one after another, the
base checks once per bench, and nothing left running when benchkit is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import benchkit
from benchkit.run.launcher import Launcher
from benchkit.run.launchers import LAUNCHERS, launcher_kind
from benchkit.store.heartbeat import STALE_AFTER_S, Beat
from benchkit.store.parquet import update_run
from benchkit.store.store import Store
from benchkit.workspace.cache import TRASH, cache_dir
from tests.conftest import TinyRepo
from tests.helpers import (
    FIGURES,
    PATIENCE_S,
    alive,
    benchkit_cli,
    benchkit_in_process,
    kill_all,
    pgrep,
    started_as_a_terminal_starts_it,
    two_benches,
)

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return benchkit_cli("pilot", *args)


def test_a_matrix_in_two_workers_records_what_one_process_does(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    benches = two_benches(tiny.bench_file, tmp_path)
    matrix = [a for b in benches for a in ("--bench", b)]
    matrix += ["--arm", "human", "--arm", "noop", "--trials", "2"]
    done = _cli(*matrix, "--jobs", "2", "--store", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stderr
    assert len([line for line in done.stdout.splitlines() if "#" in line and ": ok" in line]) == 8
    jobs = benchkit.runs(tmp_path / "jobs")
    assert jobs.height == 8 and set(jobs["launcher"]) == {"processes"}
    assert 1 <= jobs["pid"].n_unique() <= 2  # the workers, not benchkit itself
    ran_at_base = jobs.filter(~jobs["baseline_cached"])["baseline_key"].to_list()
    assert sorted(ran_at_base) == sorted(set(jobs["baseline_key"]))  # once a key, one waited
    serial = _cli(*matrix, "--store", str(tmp_path / "serial"))
    assert serial.returncode == 0, serial.stderr
    one = benchkit.runs(tmp_path / "serial")
    assert set(one["launcher"]) == {"serial"}
    key = ["bench", "arm", "trial"]
    assert (
        jobs.sort(key).select(*key, *FIGURES).rows() == one.sort(key).select(*key, *FIGURES).rows()
    )


def test_a_pilot_whose_checks_at_base_another_runs_goes_on_with_its_arm(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Two pilots at once on a bench with no checks at base yet: one runs them; the
    other runs its arm and its checks meanwhile, and reads them as its gate needs them,
    rather than wait with nothing to do. Here the checks at base wait until an arm has
    run: a pilot that waited for them before its arm would wait until their check
    timed out (the suite's patience), and find no base checks to read."""
    ran = tmp_path / "an-arm-ran"
    waits = tmp_path / "waits.py"
    waits.write_text(
        f"import pathlib, time\nwhile not pathlib.Path({str(ran)!r}).exists():\n"
        "    time.sleep(0.05)\nimport calc, util\n"
    )
    bench = tmp_path / "waiting"
    bench.mkdir()
    text = tiny.bench_file.read_text()
    lint = "command = \"python -c 'import calc, util'\"\ntimeout = 30"
    assert lint in text
    waiting = f'command = "python {waits}"\ntimeout = {PATIENCE_S}'
    (bench / "bench.toml").write_text(text.replace(lint, waiting))
    arm = tmp_path / "toucher.toml"
    arm.write_text(f'name = "toucher"\ncommand = "touch {ran}"\n')
    store = tmp_path / "store"
    done = _cli(
        *("--bench", str(bench), "--arm", str(arm), "--trials", "2", "--jobs", "2"),
        *("--sandbox", "none", "--store", str(store)),
    )
    assert done.returncode == 0, done.stderr
    runs = benchkit.runs(store)
    assert runs["status"].to_list() == ["ok", "ok"]
    assert runs["test_verdict"].to_list() == ["pass", "pass"]
    assert sorted(runs["baseline_cached"].to_list()) == [False, True]
    checks = benchkit.table("checks", store)
    at_base = checks.filter(checks["phase"] == "base")
    assert at_base.group_by("run_id").len()["len"].to_list() == [2, 2]
    assert set(at_base["status"]) == {"ok"}


def test_a_sigkilled_benchkit_leaves_no_worker_and_no_arm(tiny: TinyRepo, tmp_path: Path) -> None:
    token = f"sleep 3533.{os.getpid()}"  # far past the wait below: only a stop ends it
    arm = tmp_path / "sleepy.toml"
    arm.write_text(f'name = "sleepy"\ncommand = "{token}"\ntimeout = 3600\n')
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--trials", "2", "--jobs", "2", "--sandbox", "none"]
    proc = subprocess.Popen(
        [*argv, "--store", str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while len(pgrep(token)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(pgrep(token)) >= 2, "the two arms did not start"
        workers = [int(p) for p in _children(proc.pid)]
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + PATIENCE_S  # at once when quiet; a busy machine may take long
        while (pgrep(token) or any(alive(w) for w in workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pgrep(token) == []
        assert not [w for w in workers if alive(w)]
        runs = benchkit.runs(store)  # each worker recorded its run as it stopped
        assert sorted(runs["status"]) == ["interrupted", "interrupted"]
    finally:
        kill_all(token)


def test_an_interrupted_command_says_what_it_recorded_not_what_it_meant_to(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """SIGTERM while the second pilot's arm runs: the first was recorded ok, the second
    interrupted, and the last line says so (seen before: "each pilot at work was
    recorded, as interrupted", also when the one at work was recorded ok, the signal
    having come as it was scored or recorded)."""
    token = f"sleep 3155.{os.getpid()}"
    arm = tmp_path / "sleeper.toml"
    arm.write_text(f'name = "sleeper"\ncommand = "{token}"\ntimeout = 3600\ngrace = 2\n')
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", "human", "--arm", str(arm), "--sandbox", "none", "--store", str(store)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not pgrep(token) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert pgrep(token), "the second arm did not start"
        proc.send_signal(signal.SIGTERM)
        _, said = proc.communicate(timeout=PATIENCE_S)
        assert proc.returncode == 143, said
        assert said.strip().endswith("interrupted; 2 runs recorded: 1 interrupted, 1 ok"), said
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_to_the_whole_group_stops_every_arm_and_records_every_run(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A terminal's Ctrl-C reaches benchkit and its workers at once, and benchkit then
    stops its workers: one stop each (a second one cut the first short as the worker
    waited out the grace of an arm that ignores SIGTERM: arms left), and heard at once
    (benchkit's SIGTERM, handed to a thread of the worker's other than its main one,
    waited for the arm's end)."""
    token = f"sleep 3154.{os.getpid()}"
    arm = tmp_path / "stubborn.toml"
    arm.write_text(
        f'name = "stubborn"\ncommand = "trap \'\' TERM; {token}"\ntimeout = 3600\ngrace = 2\n'
    )
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--trials", "2", "--jobs", "2", "--sandbox", "none"]
    with started_as_a_terminal_starts_it():
        proc = subprocess.Popen(
            [*argv, "--store", str(store)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group, as a terminal's foreground job
        )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while len(pgrep(token)) < 4 and time.monotonic() < deadline:  # sh and sleep, twice
            time.sleep(0.1)
        assert len(pgrep(token)) >= 4, "the two arms did not start"
        os.killpg(proc.pid, signal.SIGINT)
        _, said = proc.communicate(timeout=PATIENCE_S)  # the arms' grace, not their sleep's end
        assert proc.returncode == 130, said
        deadline = time.monotonic() + PATIENCE_S
        while pgrep(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pgrep(token) == []  # killed after their grace, not left behind
        runs = benchkit.runs(store)
        assert sorted(runs["status"]) == ["interrupted", "interrupted"], said
        assert said.strip().endswith("interrupted; 2 runs recorded: 2 interrupted"), said
        trash = cache_dir() / TRASH  # the workers' pilot folders removed before the exit
        assert not trash.exists() or list(trash.iterdir()) == []
    finally:
        proc.kill()
        proc.wait()
        kill_all(token)


def test_what_a_test_starts_hears_ctrl_c_whatever_the_suite_inherited() -> None:
    """A suite started where SIGINT is ignored (a script's background job) hands that on
    to each process it starts: benchkit would never hear the Ctrl-C the test above sends
    (it waited out the arms' sleep: a 30 s timeout). The tests that send one start
    benchkit as a terminal does."""
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ignored = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        with started_as_a_terminal_starts_it():
            heard = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ignored.stdout.strip() == "False"  # SIG_IGN
    assert heard.stdout.strip() == "True"


def _children(pid: int) -> list[str]:
    return subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_error_of_benchkits_in_one_pilot_never_stops_the_others(
    tiny: TinyRepo, tmp_path: Path, jobs: str
) -> None:
    # Outside the sandbox, an arm can put a file where benchkit keeps the run's logs:
    # writing the checks' logs then fails in benchkit itself (it stopped the batch).
    store = tmp_path / "store"
    logs = f"{store}/artifacts/$BENCHKIT_RUN/logs"
    arm = tmp_path / "blocker.toml"
    arm.write_text(f'name = "blocker"\ncommand = "rm -rf {logs} && echo x > {logs}"\n')
    done = _cli(
        *("--bench", str(tiny.bench_dir), "--arm", str(arm), "--arm", "noop", "--arm", "human"),
        *(["--jobs", jobs] if jobs != "1" else []),
        *("--sandbox", "none", "--store", str(store)),
    )
    assert done.returncode == 1 and "Traceback" in done.stderr  # a fault keeps its traceback
    rows = {r["arm"]: r for r in benchkit.runs(store).to_dicts()}
    assert (rows[str(arm)]["status"], rows[str(arm)]["failure_kind"]) == ("failed", "other")
    assert str(rows[str(arm)]["failure_detail"]).startswith("benchkit: ")
    assert rows["noop"]["status"] == rows["human"]["status"] == "ok"


def test_status_shows_a_running_pilot_by_its_heartbeat(tiny: TinyRepo, tmp_path: Path) -> None:
    token = f"sleep 3059.{os.getpid()}"
    arm = tmp_path / "sleepy.toml"
    arm.write_text(f'name = "sleepy"\ncommand = "{token}"\ntimeout = 3600\n')
    store = tmp_path / "store"
    env = {**os.environ, "BENCHKIT_HEARTBEAT_S": "0.3", "BENCHKIT_STORE": str(store)}
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    proc = subprocess.Popen(
        [*argv, "--arm", str(arm), "--sandbox", "none"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not pgrep(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        [beat] = Store(store).beats().values()
        time.sleep(1)
        [later] = Store(store).beats().values()
        assert later.stage == "execute" and later.updated_at > beat.updated_at
        shown = benchkit_in_process("status", env=env)
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[0] == "1 runs: 1 running"
        assert lines[2] == "queued: 0; at work:"
        assert lines[3].startswith("  set default: 0 of 1 done, 1 running, 0 queued, for ")
        assert lines[3].endswith(
            f"time left: known once its first pilot ends  ({later.host}:{proc.pid})"
        )
        assert lines[4].split()[:5] == [
            str(arm),
            "#1",
            "execute",
            f"{later.host}:{proc.pid}",
            "for",
        ]
        proc.terminate()
        assert proc.wait(timeout=PATIENCE_S) == 143
        assert Store(store).beats() == {}  # removed once the run was recorded
        shown = benchkit_in_process("status", env=env)
        assert shown.stdout.splitlines()[0] == "1 runs: 1 interrupted"
    finally:
        proc.kill()
        kill_all(token)


def test_a_run_of_another_host_is_crashed_once_its_heartbeat_stops(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    [run] = benchkit.pilot(tiny.bench_dir, arm="noop", store=store, sandbox="none")
    update_run(store, run.run_id, {"status": "running", "host": "elsewhere", "pid": 4242})
    now = datetime.now(UTC)

    def beat(age_s: float) -> Beat:
        at = (now - timedelta(seconds=age_s)).isoformat()
        return Beat(
            run_id=run.run_id,
            stage="verify",
            host="elsewhere",
            pid=4242,
            started_at=at,
            updated_at=at,
        )

    Store(store).write_beat(beat(5))  # alive, on a machine this one cannot see into
    assert benchkit.recover(store) == []
    Store(store).write_beat(beat(STALE_AFTER_S + 1))
    with pytest.warns(UserWarning, match="heartbeat stopped"):
        assert benchkit.recover(store) == [run.run_id]
    [row] = benchkit.runs(store).to_dicts()
    assert row["status"] == "crashed"
    assert "benchkit on elsewhere (pid 4242): its heartbeat stopped (last at" in str(
        row["failure_detail"]
    )
    beats = store / "heartbeats" / f"{run.run_id}.json"
    Store(store).write_beat(beat(5))
    good = beats.read_text()
    for bad in ("notadate", 1234, "2026-12-01T10:00:00"):  # was a traceback on every read
        beats.write_text(
            good.replace(json.loads(good)["updated_at"], "X").replace('"X"', json.dumps(bad))
        )
        for command in ("runs", "status"):
            done = subprocess.run(
                [sys.executable, "-m", "benchkit", command, "--store", str(store)],
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
            assert f"skipped {beats}: " in done.stderr and "Traceback" not in done.stderr


def test_every_launcher_the_registry_names_is_found_by_that_name() -> None:
    """Each entry of the registry (a module and a class, imported as a launch asks for
    it) names a launcher of that name; a name it lacks is one line naming those it has."""
    for name in LAUNCHERS:
        kind = launcher_kind(name)
        assert issubclass(kind, Launcher) and kind.name == name
    with pytest.raises(benchkit.UsageError, match="is one of serial, processes, ray, not 'x'"):
        launcher_kind("x")
