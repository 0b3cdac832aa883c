"""Every pilot isolated: its own clone, a sandbox, no secret on disk, nothing left running.

Real git, real processes, real signals, real bubblewrap (the tests that need it say
why they do not run where it is missing) and, as root, real read-only and full mounts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import benchkit
from benchkit.run.recovery import RecoveryWarning, stop_processes
from benchkit.workspace import signals
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.proc import ProcError, Stoppable, capture
from benchkit.workspace.processes import process_start
from benchkit.workspace.sandbox import Bubblewrap
from benchkit.workspace.signals import Terminated, deferred_interrupts, interrupts
from tests.conftest import TinyRepo, sh_git
from tests.helpers import PATIENCE_S, needs_bwrap, needs_root, pgrep, trash_gone

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early

SANDBOXES = ["none", pytest.param("bwrap", marks=needs_bwrap)]


def _arm(tmp_path: Path, name: str, script: str, extra: str = "") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f"name = \"{name}\"\ncommand = ['sh', '-c', '''{script}''']\ntimeout = 120\n{extra}"
    )
    return path


def _pilot(
    tiny: TinyRepo, tmp_path: Path, *arms: str | Path, sandbox: str = "none", **env: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    for arm in arms:
        argv += ["--arm", str(arm)]
    argv += ["--store", str(tiny.seeded(tmp_path / "store")), "--sandbox", sandbox]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=PATIENCE_S, env={**os.environ, **env}
    )
    trash_gone()  # the cache as the command left it, once its `rm` is done
    return done


@contextlib.contextmanager
def _tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A file system of its own at `folder` (a small one, a full one, a read-only one),
    for the block only."""
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _rows(tmp_path: Path) -> dict[str, dict[str, object]]:
    return {str(r["arm"]): r for r in benchkit.runs(tmp_path / "store").to_dicts()}


def _patch(row: dict[str, object]) -> str:
    return Path(str(row["artifacts"]), "agent.patch").read_text()


POISON = """\
set -e
git update-ref refs/heads/human HEAD
git update-ref refs/benchkit/human HEAD
mkdir -p .evil
for h in pre-commit post-commit post-checkout post-index-change reference-transaction; do
  printf '#!/bin/sh\\ntouch {marks}/hook-$h\\n' > .evil/$h; chmod +x .evil/$h
done
printf '#!/bin/sh\\ntouch {marks}/fsmonitor\\n' > .evil/monitor; chmod +x .evil/monitor
git config core.hooksPath "$PWD/.evil"
git config core.fsmonitor "$PWD/.evil/monitor"
git config filter.evil.clean "touch {marks}/filter; cat"
printf '* filter=evil\\n' > .gitattributes
echo '# hi' >> util.py
"""


def test_an_arm_cannot_plant_hooks_or_move_the_human_reference(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    # With worktrees linked to the mirror, the arm's config and refs were the mirror's:
    # benchkit's own `git add` ran its hooks, and the next human pilot measured 0/0.
    marks = tmp_path / "marks"
    marks.mkdir()
    poison = _arm(tmp_path, "poison", POISON.format(marks=marks))
    first = _pilot(tiny, tmp_path, poison)  # no sandbox: the clone alone must hold
    assert first.returncode == 0, first.stderr
    rows = _rows(tmp_path)
    assert "+# hi" in _patch(rows[str(poison)])
    again = _pilot(tiny, tmp_path, "human", "noop")
    assert again.returncode == 0, again.stderr
    human = _rows(tmp_path)["human"]
    assert human["human_sha"] == tiny.human
    assert human["sites_covered"] == human["sites_total"] == rows[str(poison)]["sites_total"]
    assert list(marks.iterdir()) == []  # no hook, fsmonitor or filter ever ran
    mirrors = list((cache_dir() / "repos").glob("*.git"))
    for mirror in mirrors:
        config = (mirror / "config").read_text()
        assert "hooksPath" not in config and "evil" not in config
        assert sh_git(mirror, "rev-parse", "refs/heads/human") == tiny.human


def test_git_paths_are_read_unquoted(tiny: TinyRepo, tmp_path: Path) -> None:
    arm = _arm(tmp_path, "names", "printf 'x\\n' > 'ünï.txt'")
    done = _pilot(tiny, tmp_path, arm)
    assert done.returncode == 0, done.stderr
    assert "+++ b/ünï.txt" in _patch(_rows(tmp_path)[str(arm)])


def _server() -> tuple[int, threading.Event]:
    """A TCP server on this machine's loopback; its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], stop


CONNECT = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"

CONFINED = """\
tr '\\0' '\\n' < /proc/1/environ > /dev/null
cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c BK_PARENT_ONLY > seen-env.txt
true
ls /proc | grep -c '^[0-9]' > procs.txt
touch {outside}/escaped 2>/dev/null || echo refused > outside.txt
echo h > "$HOME/h" && echo ok > home.txt
echo t > "$TMPDIR/from-arm" && echo ok > tmp.txt
touch /tmp/benchkit-systmp-$$ 2>/dev/null && echo yes > systmp.txt || true
{connect} && echo connected > net.txt || echo refused > net.txt
"""

CHECKS = """
[[checks]]
name = "tmp"
command = "test -f \\"$TMPDIR/from-arm\\""
timeout = 30

[[checks]]
name = "net"
command = '''{connect}'''
timeout = 30
"""


def _add_checks(tiny: TinyRepo, connect: str, extra: str = "") -> None:
    text = tiny.bench_file.read_text()
    text = text.replace("\n[tests]", CHECKS.format(connect=connect) + "\n[tests]")
    tiny.bench_file.write_text(text + extra)


@pytest.fixture
def server() -> Iterator[int]:
    port, stop = _server()
    yield port
    stop.set()


@needs_bwrap
@pytest.mark.parametrize("arm_network", [True, False])
def test_the_sandbox_confines_arms_and_checks(
    tiny: TinyRepo, tmp_path: Path, server: int, arm_network: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    connect = CONNECT.format(port=server)
    (tiny.bench_file).write_text(
        tiny.bench_file.read_text().replace(
            "\n[tests]", CHECKS.format(connect=connect) + "\n[tests]"
        )
    )
    script = CONFINED.format(outside=outside, connect=connect)
    extra = "" if arm_network else "network = false\n"
    arm = _arm(tmp_path, "confined", script, extra)
    done = _pilot(tiny, tmp_path, arm, sandbox="bwrap", BK_PARENT_ONLY="x")
    assert done.returncode == 0, done.stderr
    row = _rows(tmp_path)[str(arm)]
    assert row["sandbox"] == "bwrap"
    patch = _patch(row)
    added = {
        line.split("+++ b/")[1]: patch.split(line)[1].split("\n+", 1)[1].split("\n")[0]
        for line in patch.splitlines()
        if line.startswith("+++ b/")
    }
    assert added["seen-env.txt"] == "0"  # benchkit's environment is out of sight
    assert int(added["procs.txt"]) < 10  # its own pid namespace: no other process
    assert added["outside.txt"] == "refused" and list(outside.iterdir()) == []
    assert added["home.txt"] == "ok" and added["tmp.txt"] == "ok"
    assert "systmp.txt" not in added  # the system's /tmp is read-only
    assert added["net.txt"] == ("connected" if arm_network else "refused")
    assert row["tmp_status"] == "fail"  # the arm's tmp is not its checks': a clean tree's
    assert row["net_status"] == "fail"  # checks have no network unless the bench says so


@needs_bwrap
def test_a_bench_may_give_its_checks_the_network(
    tiny: TinyRepo, tmp_path: Path, server: int
) -> None:
    connect = CONNECT.format(port=server)
    text = tiny.bench_file.read_text().replace(
        "\n[tests]", CHECKS.format(connect=connect) + "\n[tests]"
    )
    tiny.bench_file.write_text(text + "\n[sandbox]\nnetwork = true\n")
    done = _pilot(tiny, tmp_path, "noop", sandbox="bwrap")
    assert done.returncode == 0, done.stderr
    assert _rows(tmp_path)["noop"]["net_status"] == "ok"


def test_sandbox_bwrap_where_it_cannot_run_is_one_line(tiny: TinyRepo, tmp_path: Path) -> None:
    missing = {"BENCHKIT_BWRAP": str(tmp_path / "no-bwrap")}
    refused = _pilot(tiny, tmp_path, "noop", sandbox="bwrap", **missing)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"benchkit: sandbox: BENCHKIT_BWRAP: {tmp_path / 'no-bwrap'}: no such program"
    ]
    assert not (tmp_path / "store" / "runs").exists()
    auto = _pilot(tiny, tmp_path, "noop", sandbox="auto", **missing)
    assert auto.returncode == 0, auto.stderr
    assert "no such program: arms and checks run without a sandbox" in auto.stderr
    assert _rows(tmp_path)["noop"]["sandbox"] == "none"


@needs_bwrap
def test_a_bubblewrap_that_cannot_say_its_pid_1_still_sandboxes(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """bubblewrap before 0.4 has no `--json-status-fd`: benchkit leaves it out, and
    finds what a command leaves behind in its process group instead."""
    old = tmp_path / "old-bwrap"
    old.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = --json-status-fd ] && '
        '{ echo "bwrap: Unknown option --json-status-fd" >&2; exit 1; }; done\n'
        f'exec {shutil.which("bwrap")} "$@"\n'
    )
    old.chmod(0o755)
    done = _pilot(tiny, tmp_path, "human", sandbox="bwrap", BENCHKIT_BWRAP=str(old))
    assert done.returncode == 0, done.stderr
    row = _rows(tmp_path)["human"]
    assert (row["sandbox"], row["status"], row["test_verdict"]) == ("bwrap", "ok", "pass")


@pytest.mark.parametrize(
    ("where", "text"),
    [("bench", '\n[sandbox]\nnetwork = "yes"\n'), ("arm", 'network = "no"\n')],
)
def test_a_network_that_is_not_true_or_false_is_refused(
    tiny: TinyRepo, tmp_path: Path, where: str, text: str
) -> None:
    # pydantic's lax bool took "yes" as true: a typo gave the checks the network.
    arm: str | Path = "noop"
    if where == "bench":
        tiny.bench_file.write_text(tiny.bench_file.read_text() + text)
    else:
        arm = _arm(tmp_path, "netno", "true", text)
    done = _pilot(tiny, tmp_path, arm)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    field = "sandbox.network" if where == "bench" else "network"
    assert f": {field}: " in line and "valid boolean" in line
    assert not (tmp_path / "store" / "runs").exists()


@needs_bwrap
def test_no_arm_outlives_a_sigkilled_benchkit_in_the_sandbox(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    token = f"sleep 3047.{os.getpid()}"
    arm = _arm(tmp_path, "sleepy", f"{token}; echo late > late.txt")
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", str(arm), "--store", str(tmp_path / "store"), "--sandbox", "bwrap"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not pgrep(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pgrep(token), "the arm did not start"
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + PATIENCE_S
        while pgrep(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pgrep(token) == []  # gone with benchkit, before any command recovers it
    finally:
        for pid in pgrep(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_recovery_stops_only_the_process_that_started_then(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "3600"], start_new_session=True)
    try:
        started = process_start(sleeper.pid)
        assert started is not None
        ledger = tmp_path / "processes"
        ledger.write_text(f"{sleeper.pid} {started - 1}\n")  # a pid reused since: not ours
        assert stop_processes(ledger, "run-1") == 0
        assert sleeper.poll() is None
        ledger.write_text(f"{sleeper.pid} {started}\n")
        assert stop_processes(ledger, "run-1") == 1
        assert sleeper.wait(timeout=PATIENCE_S) == -signal.SIGKILL
    finally:
        with contextlib.suppress(ProcessLookupError):
            sleeper.kill()


CANARY = "CANARY-5e1f0c2d"

LEAK = """\
printf 'def test_leak():\\n    assert "%s" == ""\\n' "$BK_CANARY" > test_leak.py
printf 'bin\\000%s' "$BK_CANARY" > blob.bin
printf 'token = %s\\n' "$BK_CANARY" > settings.txt
echo "my key is $BK_CANARY"; echo "err $BK_CANARY" >&2
"""


def _holders(root: Path, value: str) -> list[str]:
    """Every file under root that holds the value: as bytes, in Parquet's cells, and in
    git's (compressed) objects."""
    found = []
    needle = value.encode()
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            cells = str(pq.read_table(path).to_pylist()) if path.suffix == ".parquet" else ""
            if needle in path.read_bytes() or value in cells:
                found.append(str(path))
        if path.is_dir() and (path / "objects").is_dir() and (path / "HEAD").is_file():
            objects = subprocess.run(
                ["git", "--git-dir", str(path), "cat-file", "--batch-all-objects", "--batch"],
                capture_output=True,
            ).stdout
            if needle in objects:
                found.append(f"{path} (git objects)")
    return found


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_no_secret_reaches_the_disk(tiny: TinyRepo, tmp_path: Path, sandbox: str) -> None:
    arm = _arm(tmp_path, "leak", LEAK, '[env]\nsecret = ["BK_CANARY"]\n')
    done = _pilot(tiny, tmp_path, arm, sandbox=sandbox, BK_CANARY=CANARY)
    assert done.returncode == 0, done.stderr
    assert CANARY not in done.stdout + done.stderr
    row = _rows(tmp_path)[str(arm)]
    assert row["test_status"] == "fail"  # the check printed it; its log has the mark
    log = Path(str(row["artifacts"]), "logs", "after-test.log").read_text()
    assert "[secret]" in log
    assert row["warnings"] == [
        "blob.bin: a binary file holding a secret's value, left out of agent.patch"
    ]
    patch = _patch(row)
    assert "+token = [secret]" in patch and "blob.bin" not in patch
    assert _holders(tmp_path / "store", CANARY) == []
    assert _holders(cache_dir(), CANARY) == []


@needs_root
def test_a_read_only_store_is_one_line_and_nothing_written(tiny: TinyRepo, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as mount:
        argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
        argv += ["--arm", "noop", "--store", str(mount / "store"), "--sandbox", "none"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [
            f"benchkit: {mount / 'store'}: cannot write the store: Read-only file system"
        ]
        assert not list(cache_dir().glob("pilots/*"))


@needs_root
def test_a_store_on_a_full_disk_is_one_line_and_nothing_made(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Seen: a traceback (`OSError: [Errno 28]`) and an empty `.gitignore` left."""
    with _tmpfs(tmp_path / "full", "size=1m") as disk:
        filler = disk / "filler"
        with filler.open("wb") as file, contextlib.suppress(OSError):
            file.write(b"x" * 2_000_000)
        seed = Path(__file__).parents[1] / "fixtures" / "tables" / "seed_pilot.csv"
        pilot = ["pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--sandbox", "none"]
        imports = ["import", str(seed), "--const", "bench=b", "--map", "label=arm"]
        for argv in (pilot, [*imports, "--ignore", "stopped_by_budget"]):
            store = disk / "store"
            command = [sys.executable, "-m", "benchkit", *argv, "--store", str(store)]
            done = subprocess.run(command, capture_output=True, text=True)
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip().splitlines() == [
                f"benchkit: {store}: cannot make the store: No space left on device"
            ]
            assert [p.name for p in disk.iterdir()] == ["filler"]


@needs_root
def test_a_full_store_marks_the_run_failed_and_leaves_no_temporary_file(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    with _tmpfs(tmp_path / "small", "size=600k") as mount:
        # The arm's output fills the store's disk (its log is written there).
        arm = _arm(tmp_path, "chatty", "head -c 2000000 /dev/zero | tr '\\0' 'x'; echo x > n.txt")
        argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
        argv += ["--arm", str(arm), "--store", str(mount / "store"), "--sandbox", "none"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (1, 2), done.stderr
        [row] = benchkit.runs(mount / "store").to_dicts()
        assert (row["status"], row["failure_kind"]) == ("failed", "disk")
        assert str(row["failure_detail"]).startswith("no space left on ")
        assert not [p for p in (mount / "store").rglob("*") if p.name.endswith(".tmp")]


@needs_root
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_an_arm_that_fills_the_disk_of_store_and_cache_leaves_no_worktree(
    tiny: TinyRepo, tmp_path: Path, sandbox: str
) -> None:
    """Store and cache on one file system, which the arm fills from its worktree: the
    worktree is removed at once to make room, and the run recorded failed / disk
    (seen: exit 2, the 56 MB worktree left on the full disk, the run crashed)."""
    with _tmpfs(tmp_path / "disk", "size=60m") as disk:
        arm = _arm(tmp_path, "filler", "head -c 100000000 /dev/zero > big.bin; echo x > n.txt")
        argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
        argv += ["--arm", str(arm), "--store", str(disk / "store"), "--sandbox", sandbox]
        env = {**os.environ, "BENCHKIT_CACHE": str(disk / "cache")}  # its environment too
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == 1, done.stderr  # a run that failed, recorded
        [row] = benchkit.runs(disk / "store").to_dicts()
        assert (row["status"], row["failure_kind"]) == ("failed", "disk")
        assert str(row["failure_detail"]).endswith(
            "its logs and its worktree were removed to record the run"
        )
        assert not list((disk / "cache" / "pilots").iterdir())
        assert shutil.disk_usage(disk).used < 20e6  # the environment, the mirror, the record


@needs_root
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_store_too_full_to_record_is_one_line_and_no_half_record(
    tiny: TinyRepo, tmp_path: Path, jobs: int
) -> None:
    """The arm fills the store's disk with a file benchkit does not own: even with the
    run's logs removed, nothing of its record fits. One line says so, no detail table
    holds a file of the run, and once there is room the run reads as crashed."""
    begun = tmp_path / "begun"  # each arm's mark, off the small disk: none fills it alone
    begun.mkdir()
    with _tmpfs(tmp_path / "small", "size=600k") as mount:
        filler = mount / "filler"
        # every arm begun: its own marks, which stay (a heartbeat goes with its pilot, and
        # an arm that came later waited out its timeout for the one that had ended)
        started = (
            f"touch {begun}/$$; while [ $(ls {begun} | wc -l) -lt {jobs} ]; do sleep 0.1; done"
        )
        fill = f"head -c 2000000 /dev/zero >> {filler}; echo x > n.txt"
        arm = _arm(tmp_path, "filler", f"{started}; {fill}")
        argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
        argv += ["--arm", str(arm), "--store", str(mount / "store"), "--sandbox", "none"]
        argv += ["--trials", str(jobs), "--jobs", str(jobs), "--quiet"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"benchkit: {mount / 'store'}: cannot record run "), line
        assert "no space left" in line
        filler.unlink()
        store = mount / "store"
        for table in ("sites", "sessions", "tests", "checks"):
            assert not list((store / table).glob("2*.parquet")), table
        assert not [p for p in store.rglob("*") if p.name.endswith(".tmp")]
        with pytest.warns(RecoveryWarning, match="now crashed"):
            assert len(benchkit.recover(store)) == jobs
        rows = benchkit.runs(store).to_dicts()
        assert len(rows) == jobs
        assert {row["status"] for row in rows} == {"crashed"}


@needs_bwrap
def test_the_environments_node_modules_is_read_only_in_the_sandbox(tmp_path: Path) -> None:
    """The tree is the arm's to write; its node_modules, the cached environment's own
    bound read-only there, is not: a write in place would reach the cache."""
    tree, home, tmp = (tmp_path / name for name in ("tree", "home", "tmp"))
    cached = tmp_path / "cache" / "node_modules"
    (cached / "pkg").mkdir(parents=True)
    (cached / "pkg" / "index.js").write_text("module.exports = 1;\n")
    (tree / "node_modules").mkdir(parents=True)  # where it is bound
    box = Bubblewrap(tree=tree, home=home, tmp=tmp).with_read_only(
        ((cached, tree / "node_modules"),)
    )
    box.make()
    write = "cat node_modules/pkg/index.js; echo 2 > node_modules/pkg/index.js; echo x > mine.txt"
    done = subprocess.run(box.command(["sh", "-c", write]), capture_output=True, text=True)
    assert done.stdout == "module.exports = 1;\n"
    assert "Read-only file system" in done.stderr
    assert (cached / "pkg" / "index.js").read_text() == "module.exports = 1;\n"
    assert not list((tree / "node_modules").iterdir())  # nothing copied into the tree
    assert (tree / "mine.txt").read_text() == "x\n"


def test_a_deferred_block_within_another_leaves_the_signal_to_the_outer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record written under `deferred_interrupts` that runs a git command (itself
    deferring its start) is still written: the inner block does not raise the SIGTERM
    that came meanwhile, the outer one does, once done."""
    monkeypatch.setattr(signals, "_TERMINATED", [0.0])  # no SIGTERM yet, in this process
    reached = []
    with pytest.raises(Terminated), deferred_interrupts():
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs in this thread, here
        reached.append("after the inner block")
    assert reached == ["after the inner block"]


def test_an_interrupted_capture_stops_its_whole_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or SIGTERM while a short command runs stops its process group, not only
    the command: nothing it started runs on (a background `sleep` here)."""
    monkeypatch.setattr(signals, "_TERMINATED", [0.0])
    token = f"sleep 3047.{os.getpid()}"
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with interrupts(), pytest.raises(Terminated):
            capture(["sh", "-c", f"{token} & {token}"])
    finally:
        timer.cancel()
    deadline = time.monotonic() + PATIENCE_S
    while pgrep(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pgrep(token) == []


def test_a_command_a_thread_runs_for_the_caller_stops_when_the_caller_says(
    tmp_path: Path,
) -> None:
    """A pilot's worktree is checked out by a thread, which no interrupt reaches: the
    interrupted pilot stops it (`Stoppable`), its whole group, at once, and one the
    thread starts afterwards is stopped as it starts."""
    token = f"sleep 3048.{os.getpid()}"
    making = Stoppable()
    said: list[BaseException] = []

    def thread() -> None:
        for _ in range(2):  # the second starts after the stop
            try:
                capture(["sh", "-c", f"{token} & {token}"], within=making)
            except ProcError as exc:
                said.append(exc)

    worker = threading.Thread(target=thread)
    worker.start()
    deadline = time.monotonic() + PATIENCE_S
    while not pgrep(token) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pgrep(token), "the command never started"
    making.stop()
    worker.join(PATIENCE_S)
    assert not worker.is_alive() and len(said) == 2
    deadline = time.monotonic() + PATIENCE_S
    while pgrep(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pgrep(token) == []


def test_the_sigterm_repeated_at_once_does_not_cut_the_record_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker gets SIGTERM once for each of benchkit's threads as benchkit dies: the
    first stops the pilot, the next, at once, must not land in the record (it landed
    as the record's deferral began, and the run stayed `running`). One a while later
    is a new stop."""
    monkeypatch.setattr(signals, "_TERMINATED", [0.0])
    recorded = []
    with interrupts(), pytest.raises(Terminated):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # the kernel's next, as benchkit dies
            time.sleep(0.05)
            recorded.append("the run")
    assert recorded == ["the run"]
    monkeypatch.setattr(signals, "_TERMINATED", [time.monotonic() - 2 * signals.REPEAT_S])
    with interrupts(), pytest.raises(Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
