"""Command arms through the real `benchkit` process, with the fake agent and real signals."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.run.pilot import NETWORK_KEPT
from benchkit.workspace.cache import cache_dir
from tests.conftest import ROOT, TinyRepo
from tests.helpers import (
    PATIENCE_S,
    benchkit_in_process,
    kill_all,
    needs_root,
    pgrep,
    started_as_a_terminal_starts_it,
)

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early

FAKE_AGENT = ROOT / "benchkit" / "bundled" / "arms" / "fake-agent" / "fake_agent.py"
UPGRADER = ROOT / "tests" / "fakes" / "upgrader"
SECRET = "sk-test-5ecr3t-ZQ81x"

TINY_PLAN = {
    "cost_per_turn": 0.02,
    "edits": [
        {"file": "util.py", "old": "VERSION = 1", "new": "VERSION = 2"},
        {
            "file": "calc.py",
            "old": "    return a - b\n",
            "new": "    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        },
    ],
}

ARM = """\
name = "fake"
model = "fake-model"
command = {command}
timeout = {timeout}
grace = {grace}

[env]
allow = ["FAKE_AGENT_MODE", "FAKE_AGENT_TRACE", "FAKE_AGENT_PIDS"]
secret = ["FAKE_AGENT_API_KEY"]
set = {{ FAKE_AGENT_PLAN = "{plan}" }}

[report]
adapter = "claude-code"
"""
LIST_COMMAND = (
    '["python", "{fake}", "-p", "{{instruction}}", "--output-format", "json", '
    '"--model", "{{model}}", "--max-budget-usd", "{{max_cost}}"]'
)


def _arm(
    tmp_path: Path, *, timeout: float = 60, grace: float = 10, command: str = LIST_COMMAND
) -> Path:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(TINY_PLAN))
    path = tmp_path / "fake-arm.toml"
    path.write_text(
        ARM.format(command=command.format(fake=FAKE_AGENT), timeout=timeout, grace=grace, plan=plan)
    )
    return path


class Benchkit:
    """`benchkit pilot` on the tiny bench with one arm: a process of its own (`start`),
    for a test that signals or kills it, or its command group called in the test's
    process (`run`), for a test of what the pilot did with the arm's processes, said
    and recorded; outside the sandbox unless told (the fake agent writes its trace and
    pids beside the test, and its pids must be this machine's: the sandbox's own are
    tested in test_isolation)."""

    def __init__(
        self, tiny: TinyRepo, tmp_path: Path, arm: str | Path, *extra: str, **env: str
    ) -> None:
        self.store = tiny.seeded(tmp_path / "store")
        self.pids = tmp_path / "pids.txt"
        self.trace = tmp_path / "trace.json"
        self.env = {
            **os.environ,
            "BENCHKIT_STORE": str(self.store),
            "FAKE_AGENT_PIDS": str(self.pids),
            "FAKE_AGENT_TRACE": str(self.trace),
            **env,
        }
        self.args = [
            "pilot",
            "--bench",
            str(tiny.bench_dir),
            "--arm",
            str(arm),
            "--max-cost",
            "1",
            *extra,
            *([] if "--sandbox" in extra else ["--sandbox", "none"]),
        ]

    @property
    def argv(self) -> list[str]:
        """The command line of its own process."""
        return [sys.executable, "-m", "benchkit.cli", *self.args]

    def run(self) -> subprocess.CompletedProcess[str]:
        return benchkit_in_process(*self.args, env=self.env)

    def start(self) -> subprocess.Popen[str]:
        with started_as_a_terminal_starts_it():  # a Ctrl-C it is sent is heard
            return subprocess.Popen(
                self.argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )

    def wait_for_pids(self, count: int) -> list[int]:
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            if self.pids.exists():
                pids = [int(p) for p in self.pids.read_text().split()]
                if len(pids) >= count:
                    return pids
            time.sleep(0.05)
        raise AssertionError("the fake agent did not start")

    def row(self) -> dict[str, object]:
        [row] = benchkit.runs(self.store).to_dicts()
        return row


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def _wait_gone(pids: list[int], within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        if all(_gone(p) for p in pids):
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError(f"still running after {within} s: {[p for p in pids if not _gone(p)]}")


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """Pids to kill at the end whatever happened: a failed test leaves no process."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def test_a_command_arm_reports_its_cost(tiny: TinyRepo, tmp_path: Path) -> None:
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path))
    done = bk.run()
    assert done.returncode == 0, done.stderr
    row = bk.row()
    assert (row["status"], row["cost_usd"], row["cost_source"]) == ("ok", 0.04, "reported")
    assert (row["sessions"], row["turns"], row["executor"]) == (1, 2, "local")
    assert (row["sites_covered"], row["sites_matched"]) == (2, 2)
    sessions = benchkit.table("sessions", bk.store)
    assert sessions.select("session", "turns", "cost_usd").rows() == [(0, 2, 0.04)]
    trace = json.loads(bk.trace.read_text())
    assert trace["model"] == "fake-model"
    assert row["model"] == "fake-model"  # the model the arm file gave is the run's
    assert trace["max_budget_usd"] == 1.0
    # HOME is the pilot's own folder, gone afterwards; the worktree is the cwd
    assert trace["home"] != os.environ.get("HOME")
    assert not Path(trace["home"]).exists()
    assert "$" in done.stdout and "cost $0.04" in done.stdout


def test_the_arm_sees_only_its_allow_list(tiny: TinyRepo, tmp_path: Path) -> None:
    own = str(Path(sys.prefix) / "bin")
    bk = Benchkit(
        tiny,
        tmp_path,
        _arm(tmp_path),
        LEAKY_TOKEN="nope",
        PYTHONPATH="/somewhere",
        VIRTUAL_ENV="/venv",
        PATH=f"{own}{os.pathsep}{os.environ['PATH']}",  # benchkit's own venv, activated
    )
    assert bk.run().returncode == 0
    trace = json.loads(bk.trace.read_text())
    names = set(trace["env"])
    assert {"PATH", "HOME", "LANG", "FAKE_AGENT_PLAN", "FAKE_AGENT_TRACE"} <= names
    assert not names & {"LEAKY_TOKEN", "PYTHONPATH", "VIRTUAL_ENV", "BENCHKIT_STORE"}
    # the caller's PATH, never benchkit's virtualenv: `python` is not benchkit's
    assert own not in trace["path"].split(os.pathsep)
    assert not trace["python"].startswith(sys.prefix)


INJECTION = "Fix it\"; touch pwned; echo $(touch pwned2) `touch pwned3` 'q'\nnext line $HOME"


PLACEHOLDERS = "Use {model} in {worktree}; leave {home} and {max_cost} alone."


@pytest.mark.parametrize(
    "command",
    [
        LIST_COMMAND,
        '"python {fake} -p {{instruction}} --output-format json --model {{model}}"',
    ],
)
def test_a_value_is_filled_in_once_and_never_expanded_again(
    tiny: TinyRepo, tmp_path: Path, command: str
) -> None:
    text = tiny.bench_file.read_text().replace(
        'instruction = "Add mul() to calc and bump VERSION."',
        f"instruction = {json.dumps(PLACEHOLDERS)}",
    )
    tiny.bench_file.write_text(text)
    model = "$(touch pwned-model)"
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path, command=command), "--model", model)
    done = bk.run()
    assert done.returncode == 0, done.stderr
    trace = json.loads(bk.trace.read_text())
    assert (trace["prompt"], trace["model"]) == (PLACEHOLDERS, model)  # as given, verbatim
    assert not [p for p in tmp_path.rglob("pwned*")]
    assert not [p for p in Path(cache_dir()).rglob("pwned*")]


@pytest.mark.parametrize(
    "command",
    [
        LIST_COMMAND,
        # a string command runs under sh -c: every value is shell-quoted
        '"python {fake} -p {{instruction}} --output-format json --model {{model}}"',
    ],
)
def test_an_injection_through_the_instruction_is_plain_text(
    tiny: TinyRepo, tmp_path: Path, command: str
) -> None:
    text = tiny.bench_file.read_text().replace(
        'instruction = "Add mul() to calc and bump VERSION."',
        f"instruction = {json.dumps(INJECTION)}",
    )
    tiny.bench_file.write_text(text)
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path, command=command))
    done = bk.run()
    assert done.returncode == 0, done.stderr
    assert json.loads(bk.trace.read_text())["prompt"] == INJECTION
    assert not [p for p in tmp_path.rglob("pwned*")]
    assert not [p for p in Path(cache_dir()).rglob("pwned*")]


def test_a_secret_is_written_nowhere(tiny: TinyRepo, tmp_path: Path) -> None:
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path), FAKE_AGENT_API_KEY=SECRET)
    done = bk.run()
    assert done.returncode == 0, done.stderr
    assert "FAKE_AGENT_API_KEY" in json.loads(bk.trace.read_text())["env"]  # it was passed
    log = next(bk.store.rglob("arm.log")).read_text()
    assert "using api key [secret]" in log  # the tool printed it; benchkit redacted it
    patch = next(bk.store.rglob("agent.patch")).read_text()
    assert "authenticated with [secret]" in patch
    leaks = [p for p in bk.store.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert SECRET not in done.stdout + done.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_agents_whole_group_and_records_the_run(
    tiny: TinyRepo, tmp_path: Path, sig: signal.Signals, reap: list[int]
) -> None:
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path), FAKE_AGENT_MODE="grandchild")
    proc = bk.start()
    agent, grandchild = bk.wait_for_pids(2)
    reap.extend([agent])
    time.sleep(0.3)  # the agent has made its edits and sleeps
    proc.send_signal(sig)
    took = _wait_gone([agent, grandchild], within=PATIENCE_S)
    assert took < 60, f"the group took {took:.2f} s to stop"  # its child sleeps 600 s
    _, err = proc.communicate(timeout=PATIENCE_S)
    assert proc.returncode == 128 + sig, err
    row = bk.row()
    assert (row["status"], row["failure_kind"], row["retryable"]) == (
        "interrupted",
        "interrupted",
        True,
    )
    assert "+VERSION = 2" in Path(str(row["artifacts"]), "agent.patch").read_text()
    assert row["worktree"] is None
    assert not list((Path(cache_dir()) / "pilots").iterdir())
    assert f"logs: {row['artifacts']}/logs" in err


def test_a_hanging_agent_is_a_timeout(tiny: TinyRepo, tmp_path: Path) -> None:
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path, timeout=1.5), FAKE_AGENT_MODE="hang")
    done = bk.run()
    assert done.returncode == 1
    row = bk.row()
    assert (row["status"], row["failure_kind"], row["retryable"]) == ("timeout", "timeout", True)
    assert row["sites_covered"] == 1  # the one edit it made before it hung
    assert "timed out after 1.5 s" in Path(str(row["artifacts"]), "logs", "arm.log").read_text()


def test_a_grandchild_that_ignores_sigterm_is_killed_after_the_grace(
    tiny: TinyRepo, tmp_path: Path, reap: list[int]
) -> None:
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path, timeout=1, grace=1), FAKE_AGENT_MODE="stubborn")
    proc = bk.start()
    agent, stubborn = bk.wait_for_pids(2)
    reap.append(agent)
    _wait_gone([agent], within=PATIENCE_S)  # SIGTERM at the timeout: the agent goes ...
    assert not _gone(stubborn)  # ... its child ignores it ...
    took = _wait_gone([stubborn], within=PATIENCE_S)  # ... until the grace period's SIGKILL
    assert took < 60  # its 1 s, not the 600 s its child would sleep
    proc.communicate(timeout=PATIENCE_S)
    assert bk.row()["status"] == "timeout"


@pytest.mark.parametrize(
    ("mode", "kind", "retryable"),
    [
        ("budget", "budget", False),
        ("crash", "crash", False),
        ("auth", "auth", False),
        ("rate_limit", "rate_limit", True),
        ("context", "context_overflow", False),
    ],
)
def test_failure_kinds_of_a_real_process(
    tiny: TinyRepo, tmp_path: Path, mode: str, kind: str, retryable: bool
) -> None:
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path), FAKE_AGENT_MODE=mode)
    done = bk.run()
    assert done.returncode == 1
    row = bk.row()
    assert (row["status"], row["failure_kind"], row["retryable"]) == ("failed", kind, retryable)
    assert row["test_verdict"] is None  # nothing to verify after a failed arm
    assert f"logs: {row['artifacts']}/logs" in done.stderr
    if mode == "budget":
        assert row["over_budget"] is True
        assert isinstance(row["cost_usd"], float) and row["cost_usd"] > 1.0
    if mode == "crash":
        assert row["arm_exit_code"] == 1
        assert "+VERSION = 2" in Path(str(row["artifacts"]), "agent.patch").read_text()


def test_an_arm_whose_program_is_not_on_path_is_refused_at_planning(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    command = '["no-such-agent-cli", "-p", "{{instruction}}"]'
    arm = _arm(tmp_path, command=command)
    bk = Benchkit(tiny, tmp_path, arm)
    done = bk.run()
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"benchkit: {arm}: command: needs no-such-agent-cli on PATH: not found "
        "(install it, or put a stand-in first on PATH)"
    )
    assert not (tmp_path / "store" / "runs").exists()  # nothing run, nothing recorded


def test_an_arm_whose_program_is_missing_when_it_runs_says_so(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    command = '["{{home}}/no-such-agent-cli", "-p", "{{instruction}}"]'
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path, command=command))
    done = bk.run()
    assert done.returncode == 1
    row = bk.row()
    assert (row["status"], row["failure_kind"], row["retryable"]) == ("failed", "other", False)
    detail = str(row["failure_detail"])
    assert detail.startswith("cannot start ")
    assert detail.endswith("/no-such-agent-cli: not found or not executable")
    assert "/no-such-agent-cli: not found or not executable" in done.stderr


@needs_root
def test_a_read_only_store_a_killed_benchkit_left_is_read_and_never_written(
    tiny: TinyRepo, tmp_path: Path, reap: list[int]
) -> None:
    """`runs` and `status` on a read-only mount of a store holding a run a SIGKILLed
    benchkit left `running`: the run reads as crashed, said, and nothing is written or
    stopped (seen: exit 2, `agent.patch: Read-only file system`)."""
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path), FAKE_AGENT_MODE="halfway")
    proc = bk.start()
    [agent] = bk.wait_for_pids(1)
    reap.append(agent)
    proc.kill()
    proc.communicate()
    seen = tmp_path / "seen"
    seen.mkdir()
    subprocess.run(["mount", "--bind", str(bk.store), str(seen)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(seen)], check=True)
        for command in ("runs", "status"):
            argv = [sys.executable, "-m", "benchkit.cli", command, "--store", str(seen)]
            done = subprocess.run(argv, env=bk.env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert "the store is read-only: not recorded" in done.stderr
            assert "Traceback" not in done.stderr
            assert "crashed" in done.stdout and "running" not in done.stdout, done.stdout
    finally:
        subprocess.run(["umount", str(seen)], check=True)
    assert bk.row()["status"] == "running"  # as it was: nothing written
    assert not _gone(agent)  # nor stopped
    listed = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "runs"], env=bk.env, capture_output=True, text=True
    )
    assert "now crashed; stopped 1 process it left" in listed.stderr  # where it may write
    assert bk.row()["status"] == "crashed"


@pytest.mark.parametrize("secret", ["", "sk-secret-2a9c"])
def test_sigkill_leaves_a_running_record_that_the_next_command_marks_crashed(
    tiny: TinyRepo, tmp_path: Path, reap: list[int], secret: str
) -> None:
    keys = {"FAKE_AGENT_API_KEY": secret} if secret else {}
    bk = Benchkit(tiny, tmp_path, _arm(tmp_path), FAKE_AGENT_MODE="halfway", **keys)
    proc = bk.start()
    [agent] = bk.wait_for_pids(1)
    reap.append(agent)
    time.sleep(0.3)
    listed = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "runs"], env=bk.env, capture_output=True, text=True
    )
    assert " running " in listed.stdout  # a live run is left alone
    proc.kill()
    proc.communicate()
    time.sleep(0.5)
    assert not _gone(agent)  # outside a sandbox, the agent outlives a SIGKILLed benchkit
    assert bk.row()["status"] == "running"
    assert not list(bk.store.rglob("*.tmp"))  # nothing half-written
    listed = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "runs"], env=bk.env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    deadline = time.monotonic() + PATIENCE_S
    while not _gone(agent) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(agent)  # the next command stopped it, and says so
    assert "now crashed; stopped 1 process it left" in listed.stderr
    row = bk.row()
    assert (row["status"], row["failure_kind"], row["retryable"]) == ("crashed", "crash", True)
    patch = Path(str(row["artifacts"]), "agent.patch")
    if secret:  # this command cannot know the secret's value: no patch rather than a leak
        assert not patch.exists()
        assert "patch was not kept: the arm had secrets (FAKE_AGENT_API_KEY)" in str(
            row["failure_detail"]
        )
    else:
        assert "+VERSION = 2" in patch.read_text()
        assert "kept its partial patch" in str(row["failure_detail"])
    assert not list((Path(cache_dir()) / "pilots").iterdir())  # worktree, env copy, HOME


def _tarball(tmp_path: Path) -> Path:
    path = tmp_path / "upgrader-1.4.0.tgz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(UPGRADER / "package", arcname="package")
    return path


def test_a_tool_from_a_packed_tarball_with_its_own_report(tiny: TinyRepo, tmp_path: Path) -> None:
    bk = Benchkit(
        tiny,
        tmp_path,
        "upgrader-tarball",
        "--var",
        f"tarball={_tarball(tmp_path)}",
        UPGRADER_TOKEN="tok-123",
    )
    bk.args[bk.args.index("--max-cost") + 1] = "2"
    done = bk.run()
    assert done.returncode == 0, done.stderr
    row = bk.row()
    assert (
        row["cost_usd"],
        row["sessions"],
        row["sessions_accepted"],
        row["sessions_rejected"],
        row["feedback_rounds"],
    ) == (0.37, 3, 2, 1, 2)
    assert row["reported_flaky_files"] == ["test_calc.py"]
    assert row["over_budget"] is False
    assert (row["sites_covered"], row["sites_unrelated"]) == (1, 0)  # report.json not in it
    sessions = benchkit.table("sessions", bk.store).sort("session")
    assert sessions["status"].to_list() == ["accepted", "rejected", "accepted"]
    kept = json.loads(Path(str(row["artifacts"]), "logs", "report.json").read_text())
    assert kept["token_seen"] is True


REPORTING_ARM = """\
name = "reporting"
command = ["sh", "-c", 'printf "%s" "$REPORT" > report.json; echo x > n.txt']
timeout = 60

[env]
set = {{ REPORT = '{report}' }}

[report]
adapter = "jsonpath"
file = "report.json"
cost = "$.cost"
session_list = "$.sessions"
session_cost = "cost"
"""


@pytest.mark.parametrize(
    ("report", "said"),
    [
        ("{not json", "report.json: not JSON: "),
        ('{"cost": -5}', "cost_usd -5.0 is not a cost in USD"),
        ('{"cost": NaN}', "cost_usd nan is not a cost in USD"),
        ('{"cost": 0.5, "sessions": [{"cost": -1}]}', "session 0's cost_usd -1.0 is not a cost"),
        ('{"cost": "abc"}', "cost 'abc' is not a number: recorded as missing"),
        ('{"cost": 1e300}', "cost_usd 1e+300 is not a cost in USD: recorded as missing"),
    ],
)
def test_a_report_that_cannot_be_read_or_gives_no_cost_is_said_and_recorded_as_missing(
    tiny: TinyRepo, tmp_path: Path, report: str, said: str
) -> None:
    """A tool's report that is not JSON, or a cost that is negative or not a number,
    is no cost: recorded as missing, and the run's warnings say why."""
    arm = tmp_path / "reporting.toml"
    arm.write_text(REPORTING_ARM.format(report=report))
    bk = Benchkit(tiny, tmp_path, arm)
    done = bk.run()
    assert done.returncode == 0, done.stderr
    row = bk.row()
    warnings = row["warnings"]
    assert isinstance(warnings, list)
    warned = [w for w in warnings if w.startswith("arm report: ")]
    assert len(warned) == 1 and said in warned[0], row["warnings"]
    assert f"warning: {warned[0]}" in done.stderr
    if "sessions" in report:
        assert (row["cost_usd"], row["cost_source"]) == (0.5, "reported")
        [cost] = benchkit.table("sessions", bk.store)["cost_usd"].to_list()
        assert cost is None
    else:
        assert (row["cost_usd"], row["cost_source"]) == (None, "missing")


def test_a_tool_over_its_max_cost_is_a_budget_failure(tiny: TinyRepo, tmp_path: Path) -> None:
    bk = Benchkit(tiny, tmp_path, "upgrader-tarball", "--var", f"tarball={_tarball(tmp_path)}")
    bk.args[bk.args.index("--max-cost") + 1] = "0.25"
    assert bk.run().returncode == 1
    row = bk.row()
    assert (row["status"], row["failure_kind"], row["over_budget"]) == ("failed", "budget", True)
    assert row["cost_usd"] == 0.25


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--arm", "upgrader-tarball", "--max-cost", "1"],
            "vars.tarball: needs a value: --var tarball=VALUE",
        ),
        (["--arm", "fake-agent"], "passes {max_cost} to the tool: give --max-cost"),
        (
            ["--arm", "fake-agent", "--max-cost", "1", "--executor", "gpu"],
            "executors: no executor 'gpu' (known: cli, sdk, stream)",
        ),
        (["--arm", "fake-agent", "--max-cost", "1", "--var", "colour=red"], "no variable 'colour'"),
        (["--arm", "no-such-arm"], "no-such-arm: no such arm (built in: human, noop"),
        (
            ["--arm", "noop", "--arm", "human", "--var", "colour=red"],
            "human, noop: --var: no arm here takes variables (given: colour)",
        ),
    ],
)
def test_bad_arm_input_exits_2_and_writes_nothing(
    tiny: TinyRepo, tmp_path: Path, args: list[str], message: str
) -> None:
    store = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "pilot", "--bench", str(tiny.bench_dir), *args],
        env={**os.environ, "BENCHKIT_STORE": str(store)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not store.exists()


def test_a_bad_arm_file_names_the_field(tiny: TinyRepo, tmp_path: Path) -> None:
    arm = _arm(tmp_path)
    arm.write_text(arm.read_text().replace('adapter = "claude-code"', 'adapter = "cursor"'))
    done = Benchkit(tiny, tmp_path, arm).run()
    assert done.returncode == 2
    assert done.stderr.startswith(f"benchkit: {arm}: report: ")


def test_the_executor_is_recorded_and_its_args_passed(tiny: TinyRepo, tmp_path: Path) -> None:
    bk = Benchkit(
        tiny,
        tmp_path,
        "fake-agent",
        "--executor",
        "sdk",
        "--var",
        f"plan={_arm(tmp_path).parent / 'plan.json'}",
    )
    assert bk.run().returncode == 0
    assert bk.row()["executor"] == "sdk"
    assert "--verbose" in json.loads(bk.trace.read_text())["argv"]
    frame = benchkit.runs(bk.store)
    assert frame.filter(pl.col("executor") == "sdk").height == 1


@pytest.mark.parametrize(
    "breaks",
    [
        "rm -rf .git && git init -q",  # a new repository, with no history
        "rm -rf .git && echo 'gitdir: /nowhere' > .git",  # a .git file that leads nowhere
        "printf 'garbage' > .git/index && rm -rf .git/objects",  # an index git cannot read
    ],
)
def test_an_arm_that_breaks_its_git_still_has_its_change_read(
    tiny: TinyRepo, tmp_path: Path, breaks: str
) -> None:
    # benchkit reads the worktree through a git folder of its own: what the arm does to
    # its .git is no reason to lose its change (with a linked worktree, it was).
    arm = tmp_path / "breaker.toml"
    arm.write_text(f'name = "breaker"\ncommand = ["sh", "-c", "{breaks} && echo x > n.txt"]\n')
    store = tiny.seeded(tmp_path / "store")
    done = benchkit_in_process(
        *("pilot", "--bench", str(tiny.bench_dir)),
        *("--arm", str(arm), "--arm", "noop", "--store", str(store)),
    )
    assert done.returncode == 0, done.stderr
    rows = {r["arm"]: r for r in benchkit.runs(store).to_dicts()}
    assert rows[str(arm)]["status"] == "ok"
    patch = Path(str(rows[str(arm)]["artifacts"]), "agent.patch").read_text()
    assert "+++ b/n.txt" in patch
    assert ".git" not in patch
    assert rows["noop"]["status"] == "ok"
    assert not list((Path(cache_dir()) / "pilots").iterdir())


def test_what_a_tool_keeps_for_itself_is_no_change_but_a_tracked_file_stays_one(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    arm = tmp_path / "keeper.toml"
    arm.write_text(
        'name = "keeper"\n'
        'command = "mkdir -p .keeper/index && echo cache > .keeper/index/db '
        '&& echo note > .keeper-notes && echo x = 1 >> calc.py && echo y = 2 > new.py"\n'
        'scratch = [".keeper/", ".keeper-notes", "calc.py"]\n'
    )
    bk = Benchkit(tiny, tmp_path, arm)
    done = bk.run()
    assert done.returncode == 0, done.stderr
    row = bk.row()
    patch = Path(str(row["artifacts"]), "agent.patch").read_text()
    assert ".keeper" not in patch  # its own files: no part of its change, nor a warning
    assert not row["ignored_written"]
    assert "+x = 1" in patch  # a tracked file is the repository's, whatever the pattern
    assert "+y = 2" in patch


def test_a_shell_line_whose_program_is_missing_names_that_program(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    arm = tmp_path / "shell.toml"
    arm.write_text('name = "shell"\ncommand = "no-such-tool-9f {instruction}"\n')
    bk = Benchkit(tiny, tmp_path, arm)
    assert bk.run().returncode == 1
    row = bk.row()
    assert row["failure_detail"] == "cannot start no-such-tool-9f: not found or not executable"


def test_a_report_file_the_tool_links_elsewhere_is_not_read(tiny: TinyRepo, tmp_path: Path) -> None:
    private = tmp_path / "private.json"
    private.write_text('{"cost": 0.5, "note": "host-only-4f1c"}')
    arm = tmp_path / "linker.toml"
    arm.write_text(
        'name = "linker"\n'
        f'command = "ln -s {private} report.json && echo y = 2 > new.py"\n'
        '[report]\nadapter = "jsonpath"\nfile = "report.json"\ncost = "$.cost"\n'
    )
    bk = Benchkit(tiny, tmp_path, arm)
    assert bk.run().returncode == 0
    row = bk.row()
    assert row["cost_usd"] is None
    assert row["warnings"] == ["arm report: report file report.json is a link: not read"]
    logs = Path(str(row["artifacts"]), "logs")
    assert not any("host-only-4f1c" in f.read_text() for f in logs.iterdir() if f.is_file())


def test_network_false_without_a_sandbox_is_said_once_in_the_runs_warnings(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Seen before (issue 36, case 7): `network = false` under `--sandbox none` was
    silently not kept: the arm reached a listener on the host, `warnings = []`."""
    arm = tmp_path / "offline.toml"
    arm.write_text('name = "offline"\ncommand = "echo y = 2 > new.py"\nnetwork = false\n')
    bk = Benchkit(tiny, tmp_path, arm)
    assert bk.run().returncode == 0
    assert bk.row()["warnings"] == [NETWORK_KEPT]
    online = tmp_path / "online.toml"  # an arm that keeps the network: nothing to say
    online.write_text('name = "online"\ncommand = "echo y = 2 > new.py"\n')
    other = Benchkit(tiny, tmp_path / "second", online)
    assert other.run().returncode == 0
    assert other.row()["warnings"] == []


def test_a_daemon_the_arm_leaves_is_stopped_with_its_pilot(tiny: TinyRepo, tmp_path: Path) -> None:
    """Seen before (issue 36, case 6): under `--sandbox none` a process the arm started
    in a session of its own (`setsid -f`) ran on after the pilot, its environment
    carrying the run's mark all the while."""
    token = f"sleep 3158.{os.getpid()}"
    arm = tmp_path / "daemon.toml"
    line = f"setsid -f {token} >/dev/null 2>&1 </dev/null && echo y = 2 > new.py"
    arm.write_text(f'name = "daemon"\ncommand = "{line}"\n')  # its stdio closed, as a daemon
    bk = Benchkit(tiny, tmp_path, arm)
    try:
        assert bk.run().returncode == 0
        deadline = time.monotonic() + PATIENCE_S  # SIGKILLed: gone once the kernel reaps it
        while pgrep(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pgrep(token) == []
        warnings = bk.row()["warnings"]
        assert isinstance(warnings, list) and len(warnings) == 1
        assert str(warnings[0]).startswith("stopped 1 process the pilot left running")
    finally:
        kill_all(token)


def test_a_daemon_holding_the_arms_output_does_not_hold_the_pilot(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """A daemon that kept the arm's stdout open (`setsid -f` without redirecting it)
    holds the output pipe for as long as it lives: its output is copied a few seconds
    past the arm's end, no longer (seen: the pilot waited for it, and a SIGTERM did
    not end the wait)."""
    token = f"sleep 3159.{os.getpid()}"
    arm = tmp_path / "daemon.toml"
    line = f"setsid -f sh -c 'echo from the daemon; {token}'; echo y = 2 > new.py"
    arm.write_text(f'name = "daemon"\ncommand = "{line}"\n')
    bk = Benchkit(tiny, tmp_path, arm)
    try:
        done = bk.run()
        assert done.returncode == 0, done.stderr
        row = bk.row()
        assert float(str(row["wall_s"])) < 600  # not the daemon's hour
        assert pgrep(token) == []  # stopped with its pilot, by its mark
        said = Path(str(row["artifacts"]), "logs", "arm.stdout").read_text()
        assert "from the daemon" in said  # what it wrote while it was copied
    finally:
        kill_all(token)
