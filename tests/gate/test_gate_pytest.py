"""The gate on real pytest runs in real temporary repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import benchkit
from benchkit.analysis.text import gate_findings
from benchkit.records import Run
from benchkit.workspace.git import git_env
from tests.conftest import make_repo, sh_git

BENCH = """\
name = "gate"
instruction = "Change the code."

[repo]
git = "{repo}"
base = "main"

[human]
ref = "arm"

[[checks]]
name = "test"
command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--continue-on-collection-errors", "--junitxml", "{{report}}"]
timeout = 60
count = "junit"

[tests]
report = "junit.xml"
alone = "{alone}"

[environment]
kind = "venv"
packages = ["pytest==8.3.5"]
"""
ALONE = "python -m pytest -q -p no:cacheprovider --junitxml {report} {files}"

# Fails on the first run in a worktree, passes on the next: a counter in an ignored folder.
FLAKY_ONCE = """\
from pathlib import Path

STATE = Path(__file__).resolve().parents[1] / "state" / "flaky-once"


def test_sometimes() -> None:
    STATE.parent.mkdir(exist_ok=True)
    first = not STATE.exists()
    STATE.write_text("seen")
    assert not first, "first run in this worktree"
"""

# Fails on odd runs and passes on even ones: about half the time.
FLAKY_HALF = """\
from pathlib import Path

STATE = Path(__file__).resolve().parents[1] / "state" / "flaky-half"


def test_coin() -> None:
    STATE.parent.mkdir(exist_ok=True)
    n = int(STATE.read_text()) + 1 if STATE.exists() else 1
    STATE.write_text(str(n))
    assert n % 2 == 0, f"run {n}"
"""

BASE = {
    ".gitignore": "state/\njunit.xml\n",
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
    "tests/test_other.py": "def test_other():\n    assert True\n",
}


def _bench(tmp_path: Path, base: dict[str, str], arm: dict[str, str], alone: str = ALONE) -> Path:
    repo = tmp_path / "repo"
    make_repo(repo, base, arm, "arm")
    bench = tmp_path / "bench"
    (bench / "patches").mkdir(parents=True)
    (bench / "bench.toml").write_text(BENCH.format(repo=repo, alone=alone))
    patch = subprocess.run(
        ["git", "diff", "main", "arm"],
        cwd=repo,
        env=git_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (bench / "patches" / "arm.patch").write_text(patch)
    return bench


def _pilot(bench: Path, tmp_path: Path, flake_reruns: int = 1) -> Run:
    [run] = benchkit.pilot(
        str(bench), arm="replay:arm", store=tmp_path / "store", flake_reruns=flake_reruns
    )
    assert run.status == "ok"
    assert run.gate is not None
    return run


def test_a_file_that_fails_once_then_passes_alone_is_flaky(tmp_path: Path) -> None:
    bench = _bench(tmp_path, BASE, {"tests/test_flaky.py": FLAKY_ONCE})
    gate = _pilot(bench, tmp_path).gate
    assert gate is not None
    assert (gate.verdict, gate.flaky_files, gate.regressions) == (
        "flaky-pass",
        ("tests/test_flaky.py",),
        0,
    )


def test_a_file_that_fails_twice_is_a_regression(tmp_path: Path) -> None:
    bench = _bench(tmp_path, BASE, {"calc.py": "def add(a, b):\n    return a - b\n"})
    run = _pilot(bench, tmp_path)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.regression_files, run.gate.regressions) == (
        "fail",
        ("tests/test_calc.py",),
        1,
    )
    assert run.gate.first_failures[0].test == "test_add"
    rerun_log = Path(run.artifacts, "logs", "rerun-1-tests_test_calc.py.log").read_text()
    assert "1 failed" in rerun_log


def _deleting(bench: Path, path: str) -> None:
    """The bench's arm patch made one that deletes `path` (a test file) and nothing else."""
    repo = bench.parent / "repo"
    sh_git(repo, "checkout", "--quiet", "-b", "gone", "main")
    sh_git(repo, "rm", "--quiet", path)
    sh_git(repo, "commit", "--quiet", "-m", "gone")
    sh_git(repo, "checkout", "--quiet", "main")
    (bench / "patches" / "arm.patch").write_text(sh_git(repo, "diff", "main", "gone") + "\n")


@pytest.mark.parametrize("allowed", [False, True])
def test_a_test_that_passed_at_base_and_is_gone_after_fails_the_gate(
    tmp_path: Path, allowed: bool
) -> None:
    """An arm that deletes a test file passing at base: its tests are `removed`, and the
    gate fails on them unless the bench says `allow_removed`."""
    bench = _bench(tmp_path, BASE, {"README.md": "The human's change.\n"})
    _deleting(bench, "tests/test_other.py")
    if allowed:
        toml = bench / "bench.toml"
        toml.write_text(toml.read_text().replace("[tests]\n", "[tests]\nallow_removed = true\n"))
    gate = _pilot(bench, tmp_path).gate
    assert gate is not None
    assert gate.removed == ("tests/test_other.py::test_other",)
    if allowed:
        assert (gate.verdict, gate.reasons) == ("pass", ())
    else:
        assert gate.verdict == "fail"
        assert gate.reasons == (
            "1 test(s) that passed at base are gone: tests/test_other.py::test_other",
        )
    [row] = benchkit.runs(tmp_path / "store").to_dicts()
    assert row["removed_tests"] == ["tests/test_other.py::test_other"]
    assert row["tampered"] == ["tests/test_other.py=deleted"]
    said = "removed (allowed) tests/test_other.py::test_other" if allowed else "are gone: tests/"
    assert said in gate_findings(row)


def test_a_new_test_file_of_the_arms_that_fails_is_new_failing_not_a_regression(
    tmp_path: Path,
) -> None:
    """A file that held no test at base cannot have regressed: it is the arm's own."""
    new = "def test_new():\n    assert 1 == 2\n"
    gate = _pilot(_bench(tmp_path, BASE, {"tests/test_new.py": new}), tmp_path).gate
    assert gate is not None
    assert (gate.verdict, gate.new_failing_files, gate.regression_files, gate.regressions) == (
        "fail",
        ("tests/test_new.py",),
        (),
        0,
    )
    assert gate.reasons == ("new failing test file tests/test_new.py",)
    assert gate.removed == ()


def test_a_crash_that_names_no_file_fails(tmp_path: Path) -> None:
    # A conftest that cannot load: pytest stops before any test file, with no report.
    bench = _bench(tmp_path, BASE, {"tests/conftest.py": "import no_such_plugin\n"})
    run = _pilot(bench, tmp_path)
    assert run.gate is not None
    assert run.gate.verdict == "fail"
    assert run.gate.reasons == (
        "tests did not run: pytest exited 4 (usage error): ModuleNotFoundError: No module "
        "named 'no_such_plugin' (junit.xml not written)",
    )
    test = run.after("test")
    assert test is not None and test.status == "fail"


def test_a_rerun_that_collects_no_test_fails(tmp_path: Path) -> None:
    # The bench's alone template filters on a marker that no test has: nothing runs.
    alone = "python -m pytest -q -p no:cacheprovider -m smoke --junitxml {report} {files}"
    bench = _bench(tmp_path, BASE, {"tests/test_flaky.py": FLAKY_ONCE}, alone=alone)
    gate = _pilot(bench, tmp_path).gate
    assert gate is not None
    assert (gate.verdict, gate.missing_files, gate.flaky_files) == (
        "fail",
        ("tests/test_flaky.py",),
        (),
    )
    assert gate.reasons == ("the rerun of tests/test_flaky.py ran no test",)


def test_a_preexisting_failure_is_not_charged(tmp_path: Path) -> None:
    base = {**BASE, "tests/test_known.py": "def test_known_bug():\n    assert 1 == 2\n"}
    bench = _bench(tmp_path, base, {"calc.py": "def add(a, b):\n    return b + a\n"})
    run = _pilot(bench, tmp_path)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.preexisting_files) == ("pass", ("tests/test_known.py",))
    assert not [t for t in run.tests if t.phase == "rerun"]  # nothing to rerun


# A reporter that leaves out test files that failed to load, as jest-junit does.
DROPPING_CONFTEST = """\
import xml.etree.ElementTree as ET

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    path = session.config.option.xmlpath
    if not path:
        return
    tree = ET.parse(path)
    for suite in tree.getroot().iter("testsuite"):
        for case in list(suite):
            error = case.find("error")
            if error is not None and error.get("message") == "collection failure":
                suite.remove(case)
    tree.write(path)
"""


def test_a_flaky_file_beside_a_file_missing_from_the_report_fails(tmp_path: Path) -> None:
    arm = {
        "tests/test_flaky.py": FLAKY_ONCE,
        "tests/test_broken.py": "import no_such_module\n\n\ndef test_never():\n    pass\n",
        "conftest.py": DROPPING_CONFTEST,
    }
    run = _pilot(_bench(tmp_path, BASE, arm), tmp_path)
    gate = run.gate
    assert gate is not None
    assert gate.flaky_files == ("tests/test_flaky.py",)  # the rerun passed ...
    assert gate.verdict == "fail"  # ... but the report does not account for the run
    assert gate.reasons == ("pytest's summary counts 2 failed, the report names 1",)
    assert "tests/test_broken.py" not in {t.case.file for t in run.tests}


def test_flake_reruns_on_a_file_that_fails_half_the_time(tmp_path: Path) -> None:
    run = _pilot(
        _bench(tmp_path, BASE, {"tests/test_coin.py": FLAKY_HALF}), tmp_path, flake_reruns=5
    )
    gate = run.gate
    assert gate is not None
    assert gate.verdict == "flaky-pass"
    [stats] = gate.reruns
    # the failing full run and the five reruns: 3 of 6 observations failed
    assert (stats.file, stats.attempts, stats.passes, stats.fails) == (
        "tests/test_coin.py",
        5,
        3,
        3,
    )
    low, high = stats.fail_rate or (0.0, 1.0)
    assert low < 0.5 < high  # 3 of 6, an interval wide enough to say how little 6 runs tell
    reruns = [t for t in run.tests if t.phase == "rerun"]
    assert [t.attempt for t in reruns] == [1, 2, 3, 4, 5]
    row = benchkit.runs(tmp_path / "store").row(0, named=True)
    assert row["flake_reruns"] == 5
    assert row["rerun_stats"][0]["passes"] == 3
    assert row["rerun_stats"][0]["fail_rate_low"] == pytest.approx(low)
