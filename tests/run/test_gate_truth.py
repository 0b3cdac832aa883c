"""The gate tells every test apart, never passes a run whose tests did not run, keeps
no stale baseline, and benches are validated: real pytest, real repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchkit
from benchkit.bench.find import find_bench
from benchkit.errors import BenchError
from benchkit.records import PilotSpec, Run
from benchkit.run.plan import plan
from benchkit.workspace.git import git_env
from benchkit.workspace.venv import uv
from tests.conftest import make_repo
from tests.helpers import PATIENCE_S, benchkit_in_process

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early

BENCH = """\
name = "truth"
instruction = "Change the code."

[repo]
git = "{repo}"
base = "main"

[human]
ref = "arm"

[[checks]]
name = "test"
command = "python -m pytest -q -p no:cacheprovider --junitxml {{report}}"
timeout = 120
count = "junit"

[tests]
report = ".bench/junit.xml"
runner = "pytest"
{expected}

[environment]
{environment}
"""
VENV = 'kind = "venv"\npackages = ["pytest==8.3.5"]'

SRC = {
    ".gitignore": ".bench/\nstate/\n",
    "m.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ndef h(x):\n    return x\n",
}
TWINS = """\
import pytest

from m import f, g, h


class TestA:
    def test_x(self):
        assert f() == 0  # fails at base and after: preexisting


class TestB:
    def test_x(self):
        assert g() == 2


@pytest.mark.parametrize("x", [1, 2, 3])
def test_p(x):
    assert h(x) == x
"""


def _bench(
    tmp_path: Path,
    base: dict[str, str],
    arm: dict[str, str],
    *,
    expected: str = "",
    environment: str = VENV,
) -> Path:
    repo = tmp_path / "repo"
    make_repo(repo, base, arm, "arm")
    bench = tmp_path / "bench"
    (bench / "patches").mkdir(parents=True)
    text = BENCH.format(repo=repo, expected=expected, environment=environment)
    (bench / "bench.toml").write_text(text)
    patch = subprocess.run(
        ["git", "diff", "main", "arm"], cwd=repo, env=git_env(), check=True, capture_output=True
    ).stdout.decode()
    (bench / "patches" / "arm.patch").write_text(patch)
    return bench


def _pilot(bench: Path, tmp_path: Path, arm: str = "replay:arm", **kw: object) -> Run:
    """One pilot, run even when the store holds its unit (in a new set)."""
    store = tmp_path / "store"
    [run] = benchkit.pilot(str(bench), arm=arm, store=store, new_set=True, **kw)  # type: ignore[arg-type]
    return run


def test_a_new_failure_of_a_same_named_test_in_another_class_is_a_regression(
    tmp_path: Path,
) -> None:
    arm = {"m.py": SRC["m.py"].replace("return 2", "return 5")}  # breaks TestB::test_x
    run = _pilot(_bench(tmp_path, {**SRC, "tests/test_m.py": TWINS}, arm), tmp_path)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.regressions) == ("fail", 1)
    assert run.gate.regression_files == ("tests/test_m.py",)
    assert [f.test for f in run.gate.first_failures] == ["TestB::test_x"]
    tests = benchkit.table("tests", tmp_path / "store")
    after = tests.filter((tests["phase"] == "after") & (tests["outcome"] == "failed"))
    assert sorted(after["test_id"]) == ["TestA::test_x", "TestB::test_x"]
    assert sorted(after["test"]) == ["test_x", "test_x"]  # the name alone tells them not apart


def test_one_broken_parameter_is_one_regression(tmp_path: Path) -> None:
    arm = {"m.py": SRC["m.py"].replace("return x\n", "return 0 if x == 2 else x\n")}
    run = _pilot(_bench(tmp_path, {**SRC, "tests/test_m.py": TWINS}, arm), tmp_path)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.regressions) == ("fail", 1)
    assert [f.test for f in run.gate.first_failures] == ["test_p[2]"]
    line = benchkit_in_process("runs", "--store", str(tmp_path / "store")).stdout
    assert "regression tests/test_m.py (test_p[2])" in line


BROKEN = "import not_a_module_anywhere\n\n\ndef test_a():\n    assert True\n"
OK_TEST = "from m import f\n\n\ndef test_f():\n    assert f() == 1\n"


def test_tests_that_do_not_run_at_base_are_an_error_not_a_pass(tmp_path: Path) -> None:
    base = {**SRC, "tests/test_broken.py": BROKEN, "tests/test_ok.py": OK_TEST}
    run = _pilot(_bench(tmp_path, base, {"m.py": SRC["m.py"] + "\n\nK = 0\n"}), tmp_path)
    assert run.gate is not None
    assert run.gate.verdict == "error"
    [reason] = run.gate.reasons
    assert reason.startswith("the tests did not run at base: pytest was interrupted: 1 error")
    row = benchkit.runs(tmp_path / "store").row(0, named=True)
    assert row["test_verdict"] == "error"
    assert benchkit.compare(benchkit.runs(tmp_path / "store"), metrics=["pass", "error"]).frame[
        ["pass_mean", "error_mean"]
    ].row(0) == (0.0, 1.0)
    evidence = str(benchkit.evidence([run]))
    assert "| error (the tests did not run at base: pytest was interrupted" in evidence


def test_a_collection_error_the_arm_brings_is_a_fail(tmp_path: Path) -> None:
    base = {**SRC, "tests/test_ok.py": OK_TEST}
    run = _pilot(_bench(tmp_path, base, {"tests/test_broken.py": BROKEN}), tmp_path)
    assert run.gate is not None
    assert run.gate.verdict == "fail"
    assert any("pytest was interrupted" in r for r in run.gate.reasons)


def test_no_test_collected_at_base_is_an_error(tmp_path: Path) -> None:
    run = _pilot(_bench(tmp_path, SRC, {"tests/test_ok.py": OK_TEST}), tmp_path)
    assert run.gate is not None
    assert run.gate.verdict == "error"
    assert "the test run ran no test" in run.gate.reasons[0]


def test_a_changed_tool_gives_a_new_baseline_and_refresh_forces_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kind = none: the caller's own virtualenv, whose pytest is upgraded in place
    user = tmp_path / "user-venv"
    uv("venv", "--quiet", "--python", "3.11", str(user))
    python = str(user / "bin" / "python")
    uv("pip", "install", "--quiet", "--python", python, "pytest==8.3.5")
    monkeypatch.setenv("PATH", f"{user / 'bin'}{os.pathsep}{os.environ['PATH']}")
    bench = _bench(
        tmp_path,
        {**SRC, "tests/test_ok.py": OK_TEST},
        {"m.py": SRC["m.py"] + "\nK = 0\n"},
        environment='kind = "none"',
    )
    first = _pilot(bench, tmp_path, arm="noop")
    again = _pilot(bench, tmp_path, arm="noop")
    assert (first.baseline_cached, again.baseline_cached) == (False, True)
    assert first.baseline_key == again.baseline_key
    uv("pip", "install", "--quiet", "--python", python, "pytest==8.3.4")
    changed = _pilot(bench, tmp_path, arm="noop")
    assert changed.baseline_key != first.baseline_key and not changed.baseline_cached
    assert changed.environment is not None and changed.environment.packages is not None
    assert "pytest==8.3.4" in changed.environment.packages
    refreshed = _pilot(bench, tmp_path, arm="noop", refresh_baseline=True)
    assert (refreshed.baseline_key, refreshed.baseline_cached) == (changed.baseline_key, False)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "benchkit", "pilot", "--bench", str(bench), "--arm", "noop"),
            *("--refresh-baseline", "--store", str(tmp_path / "store")),
        ],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0, done.stderr
    rows = benchkit.runs(tmp_path / "store").to_dicts()
    assert rows[-1]["baseline_key"] == changed.baseline_key and not rows[-1]["baseline_cached"]


FEATURE = {
    **SRC,
    "tests/test_f.py": "import m\n\n\ndef test_feature():\n    assert m.twice(2) == 4\n\n\n"
    "def test_other():\n    assert m.f() == 1\n",
}
HUMAN = {"m.py": SRC["m.py"] + "\n\ndef twice(x):\n    return 2 * x\n"}
EXPECTED = (
    'must_pass = ["tests/test_f.py::test_feature"]\nkeep_passing = ["tests/test_f.py::test_other"]'
)


def test_resolved_means_every_named_test_passed_and_nothing_regressed(tmp_path: Path) -> None:
    bench = _bench(tmp_path, FEATURE, HUMAN, expected=EXPECTED)
    human, noop = benchkit.pilot(str(bench), arm=["human", "noop"], store=tmp_path / "store")
    assert (human.resolved, noop.resolved) == (True, False)
    assert noop.gate is not None and noop.gate.verdict == "pass"  # preexisting, not resolved
    rows = benchkit.runs(tmp_path / "store").to_dicts()
    assert [r["resolved"] for r in rows] == [True, False]
    (tmp_path / "plain").mkdir()
    unnamed = _bench(tmp_path / "plain", FEATURE, HUMAN)
    assert _pilot(unnamed, tmp_path / "plain", arm="human").resolved is None


FLAKY_HALF = """\
from pathlib import Path

STATE = Path(__file__).resolve().parents[1] / "state" / "flaky-half"


def test_coin():
    STATE.parent.mkdir(exist_ok=True)
    n = int(STATE.read_text()) + 1 if STATE.exists() else 1
    STATE.write_text(str(n))
    assert n % 2 == 0, f"run {n}"
"""


def test_validate_writes_a_lock_the_gate_then_uses(tmp_path: Path) -> None:
    base = {**FEATURE, "tests/test_coin.py": FLAKY_HALF}
    bench = _bench(tmp_path, base, HUMAN, expected=EXPECTED)
    done = subprocess.run(
        [sys.executable, "-m", "benchkit", "bench", "validate", str(bench), "--reruns", "2"],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0, done.stderr
    assert "proposed must_pass (fail at base, pass with the human):\n  tests/test_f.py::" in (
        done.stdout
    )
    lock = json.loads((bench / "bench.lock.json").read_text())
    assert lock["must_pass"] == ["tests/test_f.py::test_feature"]
    assert lock["preexisting"] == ["tests/test_f.py::test_feature"]
    assert {"test": "tests/test_coin.py::test_coin", "side": "base", "failed": 1, "runs": 2} in (
        lock["flaky"]
    )
    # pilots take the lock's flaky tests while it is current, and not once the bench changed
    [planned] = plan([PilotSpec(bench=str(bench), arm="human")])
    assert planned.known_flaky == {("tests/test_coin.py", "test_coin")}
    path = bench / "bench.toml"
    path.write_text(path.read_text().replace('instruction = "Change', 'instruction = "Alter'))
    [stale] = plan([PilotSpec(bench=str(bench), arm="human")])
    assert stale.known_flaky == frozenset()


def test_validate_checks_where_its_lock_goes_before_running_anything(tmp_path: Path) -> None:
    bench = _bench(tmp_path, FEATURE, HUMAN, expected=EXPECTED)
    afile = tmp_path / "a-file"
    afile.write_text("x")
    for out, said in ((tmp_path, "a folder, not a lock file"), (afile / "x.json", "not a folder")):
        argv = [sys.executable, "-m", "benchkit", "bench", "validate", str(bench)]
        argv += ["--out", str(out)]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S)
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"benchkit: {out}: --out: ") and said in line, line
        assert time.monotonic() - started < 5  # no check ran
    assert not (bench / "bench.lock.json").exists()


def test_validate_refuses_a_human_that_fails_its_own_must_pass(tmp_path: Path) -> None:
    wrong = {"m.py": SRC["m.py"] + "\n\ndef twice(x):\n    return x\n"}
    bench = _bench(tmp_path, FEATURE, wrong, expected=EXPECTED)
    with pytest.raises(BenchError, match=r"human reference does not pass tests/test_f\.py::test_f"):
        benchkit.validate(bench, reruns=1)
    assert not (bench / "bench.lock.json").exists()


def test_validate_refuses_tests_that_do_not_run_at_base(tmp_path: Path) -> None:
    bench = _bench(tmp_path, {**SRC, "tests/test_broken.py": BROKEN}, HUMAN)
    with pytest.raises(BenchError, match="the tests do not run at base"):
        benchkit.validate(bench, reruns=1)


def test_validate_the_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHKIT_LOCKS", str(tmp_path / "locks"))
    found = benchkit.validate("demo", reruns=2)
    assert found.path == tmp_path / "locks" / "demo.lock.json"  # not inside the package
    assert found.lock.preexisting == ("tests/test_dates.py::test_due_next_month_from_a_month_end",)
    assert found.lock.added_by_human == (
        "tests/test_report.py::test_render_uses_no_deprecated_helpers",
    )
    assert (found.lock.must_pass, found.lock.flaky) == ((), ())


def test_alone_must_name_its_files(tmp_path: Path) -> None:
    bench = _bench(tmp_path, SRC, HUMAN, expected='alone = "python -m pytest -q {report}"')
    with pytest.raises(BenchError, match=r"tests: .*alone must contain \{files\}"):
        find_bench(bench)
