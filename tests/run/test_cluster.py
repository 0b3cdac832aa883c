"""The Ray launcher: a matrix as Ray tasks on a local cluster records what one process
records, with the base checks once per bench and each run's launcher and worker; the
CLI starts a local cluster of its own (and leaves nothing of it when SIGKILLed), or
joins one at an address."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import benchkit
from benchkit.run.cluster import start_local
from benchkit.run.events import Event, Recorded, StageBegun
from benchkit.run.recovery import RecoveryWarning
from benchkit.store.store import Store
from benchkit.workspace.processes import process_start
from tests.conftest import TinyRepo
from tests.helpers import FIGURES, PATIENCE_S, alive, needs_bwrap, pgrep, two_benches

# found, not imported: every worker collects this file, and Ray's import is a third of a
# CPU-second that only the worker running these tests needs
pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="Ray is in the development install: pip install -e '.[dev]'",
    ),
]


def _descendants(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    children = [int(p) for p in found.stdout.split()]
    return children + [d for c in children for d in _descendants(c)]


@needs_bwrap
def test_a_sigkilled_benchkit_on_a_local_ray_cluster_leaves_no_worker_and_no_arm(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    # Ray's workers die with the cluster benchkit started, without a word: the arms
    # stop with their sandbox (bwrap --die-with-parent), the runs are judged crashed
    # by the next benchkit, and the set runs them again.
    token, arm = _sleepy(tmp_path, 3599)
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--trials", "2", "--launcher", "ray", "--jobs", "2"]
    argv += ["--sandbox", "bwrap", "--quiet", "--store", str(store)]
    said = tmp_path / "stderr"
    with said.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    cluster: dict[int, int | None] = {}  # Ray's own daemons too, by pid and start
    try:
        tasks = _tasks_at_work(proc, proc.pid, token, 2, said)  # both arms at work
        cluster = {p: process_start(p) for p in _descendants(proc.pid)}
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + PATIENCE_S  # at once when quiet; a busy machine may take long
        while (pgrep(token) or any(map(alive, tasks))) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pgrep(token) == [] and not [t for t in tasks if alive(t)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            benchkit.recover(store)  # the next benchkit judges them: their worker is gone
        runs = benchkit.runs(store)
        seen = runs.select("status", "failure_kind", "failure_detail").to_dicts()
        # a worker told in time that its cluster is gone records its run interrupted
        # (seen: both did, and recover had nothing left to judge); the others crashed
        assert set(runs["status"]) <= {"crashed", "interrupted"}, seen
        judged = [w for w in caught if issubclass(w.category, RecoveryWarning)]
        crashed = int((runs["status"] == "crashed").sum())
        assert bool(crashed) == any("now crashed" in str(w.message) for w in judged), seen
    finally:
        # Ray's dashboard and runtime-env agents notice their cluster is gone only after
        # a minute of polling, at a share of a core: not left to slow the tests after
        left = [p for p, started in cluster.items() if process_start(p) == started]
        for pid in [*pgrep(token), *left]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("then", ["waited", "interrupted"])
def test_a_matrix_whose_ray_cluster_dies_stops_its_pilots_and_says_so_in_one_line(
    tiny: TinyRepo, tmp_path: Path, then: str
) -> None:
    # Ray's driver spins on a dead cluster (seen: over a core's worth of CPU, until
    # Ray's own abort a minute later, or for ever on a cluster `ray stop` ended), its
    # workers linger and their arms run on (here with no sandbox to end them); a
    # Ctrl-C meanwhile cancelled tasks no cluster could cancel, and Ray aborted it too.
    token, arm = _sleepy(tmp_path, 3598)
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--trials", "3", "--launcher", "ray", "--jobs", "2"]
    argv += ["--sandbox", "none", "--quiet", "--store", str(store)]
    said = tmp_path / "stderr"
    with said.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    cluster: dict[int, int | None] = {}
    try:
        tasks = _tasks_at_work(proc, proc.pid, token, 2, said)  # both arms at work
        cluster = {p: process_start(p) for p in _descendants(proc.pid)}
        daemons = [p for p in cluster if re.search(r"/(gcs_server|raylet) ", _cmdline(p))]
        assert len(daemons) == 2, [_cmdline(p)[:80] for p in cluster]
        for pid in daemons:
            os.kill(pid, signal.SIGKILL)  # the cluster's store of state and its node: gone
        if then == "interrupted":
            proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=PATIENCE_S)
        if then == "waited":
            assert code == 2, said.read_text()[-3000:]
            last = said.read_text().strip().splitlines()[-1]
            assert re.fullmatch(
                r"benchkit: --launcher ray: the Ray cluster stopped answering \(\S+:\d+: "
                r"connection refused\): 0 of 3 pilots' runs came back; 2 at work on this "
                r"machine stopped and recorded \(.*\)",
                last,
            ), said.read_text()[-3000:]
        else:
            assert code == 130, said.read_text()[-3000:]
        assert pgrep(token) == [] and not [t for t in tasks if alive(t)]
        # as they were left, before any reader's recovery: each recorded by its worker
        rows = Store(store).read("runs").select("status", "failure_kind").to_dicts()
        assert rows == [{"status": "interrupted", "failure_kind": "interrupted"}] * 2
    finally:
        left = [p for p, started in cluster.items() if process_start(p) == started]
        for pid in [*pgrep(token), *left]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _sleepy(tmp_path: Path, seconds: int) -> tuple[str, Path]:
    """An arm file whose command sleeps far past any wait here (only a stop ends it),
    and its command, which tells its processes apart from other tests'."""
    token = f"sleep {seconds}.{os.getpid()}"
    arm = tmp_path / "sleepy.toml"
    arm.write_text(f'name = "sleepy"\ncommand = "{token}"\ntimeout = 3600\n')
    return token, arm


def _tasks_at_work(
    proc: subprocess.Popen[bytes], root: int, token: str, wanted: int, said: Path
) -> list[int]:
    """The Ray tasks under `root` whose arm runs `token`, once `wanted` are at work
    (asserted; `said`: the command's stderr, shown if not)."""
    deadline = time.monotonic() + PATIENCE_S
    tasks: list[int] = []
    while len(tasks) < wanted and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        tasks = [p for p in _descendants(root) if _at_work(p, token)]
    assert len(tasks) == wanted, f"each pilot a Ray task, its arm at work:\n{said.read_text()}"
    return tasks


def _at_work(pid: int, token: str) -> bool:
    """Whether `pid` is a Ray task of a pilot whose arm runs `token`."""
    mine = set(pgrep(token))
    return "_pilot_task" in _cmdline(pid) and any(d in mine for d in _descendants(pid))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[str]:
    """A local Ray cluster of two CPUs, started once for the tests below as benchkit
    starts one (`start_local`), its address given: a matrix in this process runs on it
    as a notebook's does once Ray is up, and the CLI joins it by `--ray-address`. Ray
    takes seconds to start a cluster; the SIGKILL test above starts its own from the
    CLI, before this one runs."""
    import ray

    start_local(2)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def test_a_matrix_on_a_local_ray_cluster_records_what_one_process_does(
    tiny: TinyRepo, tmp_path: Path, local_ray: str
) -> None:
    import ray

    benches = two_benches(tiny.bench_file, tmp_path)
    seen: list[tuple[str, str, bool]] = []
    told: list[Event] = []
    beside: set[str] = set()  # Ray's worker processes other than the pilots' tasks

    def beats(event: Event) -> None:  # the heartbeat of a pilot at work, as it is told
        told.append(event)
        if isinstance(event, StageBegun) and event.stage == "verify":
            beat = Store(tmp_path / "ray").beats().get(event.run_id)
            seen.append((event.run_id, event.stage, beat is not None and beat.stage == "verify"))
            titles = {_cmdline(p).strip() for p in _descendants(os.getpid())}
            beside.update(t for t in titles if t.startswith("ray::") and "Agent" not in t)

    made = benchkit.pilot(
        benches,
        ["human", "noop"],
        trials=2,
        launcher="ray",
        jobs=2,
        store=tmp_path / "ray",
        sandbox="none",
        events=beats,
    )
    assert len(made) == 8 and {r.launcher for r in made} == {"ray"}
    assert {r.status for r in made} == {"ok"}
    assert ray.is_initialized()  # a cluster benchkit did not start is left running
    runs = benchkit.runs(tmp_path / "ray")
    assert runs.height == 8 and set(runs["launcher"]) == {"ray"}
    assert os.getpid() not in set(runs["pid"])  # Ray's workers ran them
    ran_at_base = runs.filter(~runs["baseline_cached"])["baseline_key"].to_list()
    assert sorted(ran_at_base) == sorted(set(runs["baseline_key"]))  # once a key
    assert seen and any(beat for _, _, beat in seen)  # heartbeats while running
    # its stages, read from the tasks' heartbeats, and each run once as it came back
    recorded = [e.run.run_id for e in told if isinstance(e, Recorded)]
    assert sorted(recorded) == sorted(r.run_id for r in made)
    stages = [e for e in told if isinstance(e, StageBegun)]
    workers = {f"{r['host']}:{r['pid']}" for r in runs.select("host", "pid").to_dicts()}
    assert stages and {e.worker for e in stages} <= workers
    assert {e.label for e in stages} <= {f"{r.bench} {r.spec.arm} #{r.spec.trial}" for r in made}
    after = {e.run.run_id: n for n, e in enumerate(told) if isinstance(e, Recorded)}
    assert all(told.index(e) < after[e.run_id] for e in stages)
    # no Ray actor (a queue's) beside the pilots: a worker process of its own each
    assert beside <= {"ray::_pilot_task", "ray::IDLE", "ray::_ready"}, beside
    figures = {row[0]: row[1:] for row in runs.select("arm", *FIGURES).unique().rows()}
    assert len(figures) == 2  # the same figures on every bench and trial, as one process
    assert figures["human"][:3] == (2, 2, 0) and figures["noop"][:3] == (0, 0, 0)
    assert figures["human"][3] == figures["noop"][3] == "pass"


def test_the_cli_runs_a_pilot_on_ray_and_import_benchkit_does_not_load_ray(
    tiny: TinyRepo, tmp_path: Path, local_ray: str
) -> None:
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", "human", "--launcher", "ray", "--ray-address", local_ray]
    argv += ["--sandbox", "none"]
    done = subprocess.run(
        [*argv, "--store", str(tmp_path / "s")], capture_output=True, text=True, timeout=PATIENCE_S
    )
    assert done.returncode == 0, done.stderr
    assert ": 1 of 1 pilots · 1 ok" in done.stderr  # its run, told as the task came back
    [row] = benchkit.runs(tmp_path / "s").to_dicts()
    assert (row["launcher"], row["status"], row["sites_covered"]) == ("ray", "ok", 2)
    # the command left the cluster as its process ended (Ray's own leave not waited
    # for): its job is over, as the cluster saw its driver go
    import ray

    mine = ray.get_runtime_context().get_job_id()
    deadline = time.monotonic() + PATIENCE_S  # as the cluster hears of it
    while True:
        theirs = [j for j in ray._private.state.jobs() if j["JobID"] != mine]
        if (theirs and all(j["IsDead"] for j in theirs)) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert theirs and all(j["IsDead"] for j in theirs), theirs
    code = "import benchkit, sys; benchkit.runs; print('ray' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "False"


def test_a_ray_worker_killed_at_its_pilot_is_one_line_and_its_run_judged_at_once(
    tiny: TinyRepo, tmp_path: Path, local_ray: str
) -> None:
    # as the kernel's OOM killer would: Ray says "the worker died unexpectedly" in a
    # traceback of its own, and the run stayed `running`, its arm at work, until the
    # next benchkit read the store
    token, arm = _sleepy(tmp_path, 3597)
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--launcher", "ray", "--ray-address", local_ray]
    argv += ["--sandbox", "none", "--quiet", "--store", str(tmp_path / "s")]
    said = tmp_path / "stderr"
    with said.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    try:
        tasks = _tasks_at_work(proc, os.getpid(), token, 1, said)  # on the module's cluster
        os.kill(tasks[0], signal.SIGKILL)
        assert proc.wait(timeout=PATIENCE_S) == 2
        lines = said.read_text().strip().splitlines()
        assert lines[-1].startswith(
            "benchkit: --launcher ray: a pilot's task failed (WorkerCrashedError: The worker "
            "died unexpectedly"
        ), said.read_text()[-3000:]
        assert "Traceback" not in said.read_text()
        assert any("now crashed; stopped" in line for line in lines), lines  # its arm
        assert pgrep(token) == []
        [row] = benchkit.runs(tmp_path / "s").select("status", "failure_kind").to_dicts()
        assert row == {"status": "crashed", "failure_kind": "crash"}
    finally:
        for pid in pgrep(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("address", "why"),
    [("127.0.0.1:1", "connection refused"), ("localhost:port", "not host:port")],
)
def test_a_ray_address_nothing_answers_at_is_one_line_before_anything_is_written(
    tiny: TinyRepo, tmp_path: Path, address: str, why: str
) -> None:
    """Ray itself retries a dead address for minutes, a warning every few seconds."""
    argv = [sys.executable, "-m", "benchkit.cli", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", "noop", "--launcher", "ray", "--ray-address", address, "--quiet"]
    env = {**os.environ, "BENCHKIT_STORE": str(tmp_path / "store")}
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == (
        f"benchkit: {address}: --ray-address: no Ray cluster answers there ({why})"
    )
    assert time.monotonic() - started < 30
    assert not (tmp_path / "store").exists()


def test_a_local_cluster_that_cannot_start_is_one_line_and_nothing_is_recorded(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Ray's own failure to start (here its temporary folder is a file) reaches the
    user as one line, not Ray's traceback; a start that timed out (its raylet waits 15 s
    for its agents, which a loaded machine can miss) is tried again first."""
    (tmp_path / "a-file").write_text("")
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", "noop", "--launcher", "ray", "--jobs", "2", "--quiet"]
    argv += ["--sandbox", "none", "--store", str(tmp_path / "store")]
    env = {**os.environ, "RAY_TMPDIR": str(tmp_path / "a-file")}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr  # Ray may log a notice of its own before
    assert done.stderr.strip().splitlines()[-1] == (
        "benchkit: --launcher ray: the local Ray cluster did not start (Not a directory: "
        f"'{tmp_path / 'a-file' / 'ray'}'); --launcher processes runs the same pilots"
    )
    assert benchkit.runs(tmp_path / "store").height == 0
