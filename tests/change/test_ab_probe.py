"""`benchkit ab` and `benchkit probe` on real temporary repositories with real pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from benchkit.change.ab import duration_change
from benchkit.change.probe import DISCRIMINATES, DOES_NOT, FAILS_AT_HEAD, PROVES_NOTHING, judge
from benchkit.gate.junit import CaseResult
from tests.conftest import activate, make_repo
from tests.helpers import PATIENCE_S, benchkit_in_process

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early

BASE = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef scale(x):\n    return x * 2\n",
    "util.py": "NAME = 'calc'\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": "from calc import add, scale\n\n\ndef test_add():\n"
    "    assert add(2, 2) == 4\n\n\ndef test_scale():\n    assert scale(2) == 6\n",
}
HEAD = {
    # the change: scale fixed, mul added, a cosmetic edit in util.py
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef scale(x):\n    return x * 3\n\n\n"
    "def mul(a, b):\n    return a * b\n",
    "util.py": "NAME = 'calc'  # the package's name\n",
    # its new test imports what the change added
    "tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}
JUNIT = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={report}"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    make_repo(path, BASE, HEAD, "fix")
    return path


@pytest.fixture(autouse=True)
def _maintainer(monkeypatch: pytest.MonkeyPatch, maintainer_venv: Path) -> None:
    """`ab` and `probe` run with the caller's environment: the maintainer's venv."""
    activate(monkeypatch, maintainer_venv)


def test_ab_runs_the_same_command_on_both_sides(repo: Path, tmp_path: Path) -> None:
    result = benchkit.ab("main", "fix", JUNIT, repeat=2, repo=repo, store=tmp_path / "store")
    base, head = result.runs["base"][0], result.runs["head"][0]
    assert (base.passed, base.failed, head.passed, head.failed) == (1, 1, 3, 0)
    assert len(result.runs["head"]) == 2
    flips = {f.test: (f.base, f.head) for f in result.flips()}
    assert flips == {
        "tests/test_calc.py::test_scale": ("failed", "passed"),  # the test that flipped
        "tests/test_mul.py::test_mul": ("absent", "passed"),
    }
    text = result.to_markdown()
    assert "| base | " + base.sha[:12] + " | 1 | 1 | 0 |" in text
    assert "| tests/test_calc.py::test_scale | failed | passed |" in text
    rows = benchkit.table("ab", tmp_path / "store")
    assert rows.height == 4
    assert sorted(rows["side"]) == ["base", "base", "head", "head"]
    assert set(rows["source"]) == {"junit"}


def test_ab_reads_the_runners_summary_without_a_report(repo: Path, tmp_path: Path) -> None:
    command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    result = benchkit.ab("main", "fix", command, repo=repo, store=tmp_path / "store")
    base = result.runs["base"][0]
    assert (base.source, base.passed, base.failed) == ("summary", 1, 1)
    assert "no JUnit report, so none can be named" in result.to_markdown()


def test_probe_tells_what_the_new_tests_prove(repo: Path, tmp_path: Path) -> None:
    result = benchkit.probe("main", "fix", repo=repo, store=tmp_path / "store")
    [group] = result.sets
    assert group.reverted == ("calc.py", "util.py")  # every non-test file changed
    verdicts = {v.test: v for v in group.verdicts}
    assert set(verdicts) == {"tests/test_mul.py::test_mul"}  # the changed test files
    mul = verdicts["tests/test_mul.py::test_mul"]
    # reverting calc.py takes mul away: an import error, which proves nothing
    assert (mul.at_head, mul.reverted, mul.verdict) == ("passed", "error", PROVES_NOTHING)


def test_probe_with_a_command_and_each_file(repo: Path, tmp_path: Path) -> None:
    result = benchkit.probe(
        "main",
        "fix",
        [*JUNIT, "tests/test_calc.py"],
        each=True,
        repo=repo,
        store=tmp_path / "store",
    )
    by_file = {
        s.reverted: {v.test.split("::")[1]: v.verdict for v in s.verdicts} for s in result.sets
    }
    assert by_file[("calc.py",)] == {"test_add": DOES_NOT, "test_scale": DISCRIMINATES}
    assert by_file[("util.py",)] == {"test_add": DOES_NOT, "test_scale": DOES_NOT}
    rows = benchkit.table("probes", tmp_path / "store")
    assert rows.height == 4
    assert "| calc.py | tests/test_calc.py::test_scale | passed | failed | discriminates |" in (
        result.to_markdown()
    )


def test_probe_keeps_new_files_and_removes_what_base_lacked(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    head = {
        **HEAD,
        "helpers.py": "def triple(x):\n    return 3 * x\n",
        "tests/test_helpers.py": "from helpers import triple\n\n\ndef test_triple():\n"
        "    assert triple(2) == 6\n",
    }
    make_repo(repo, BASE, head, "fix")
    result = benchkit.probe(
        "main",
        "fix",
        [*JUNIT, "tests/test_helpers.py"],
        revert=["helpers.py"],
        repo=repo,
        store=tmp_path / "store",
    )
    [verdict] = result.sets[0].verdicts
    assert (verdict.reverted, verdict.verdict) == ("error", PROVES_NOTHING)


@pytest.mark.parametrize(
    ("head", "reverted", "verdict"),
    [
        ("passed", "failed", DISCRIMINATES),
        ("passed", "passed", DOES_NOT),
        ("passed", "error", PROVES_NOTHING),
        ("passed", None, PROVES_NOTHING),
        ("failed", "failed", FAILS_AT_HEAD),
    ],
)
def test_probe_judgement(head: str, reverted: str | None, verdict: str) -> None:
    def case(outcome: str | None) -> CaseResult | None:
        if outcome is None:
            return None
        return CaseResult(
            file="t.py",
            name="t",
            outcome=outcome,  # type: ignore[arg-type]
            duration_s=0,
            message=None,
        )

    assert judge("t.py::t", case(head), case(reverted)).verdict == verdict


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ab", "--base", "nope", "--head", "fix", "--", "true"], "--base: no such ref: nope"),
        (
            ["ab", "--base", "main", "--head", "fix", "--factor", "nan", "--", "true"],
            "factor: is a finite number of at least 1, not nan",
        ),
        (
            ["probe", "--base", "main", "--head", "fix", "--", "python", "-m", "pytest"],
            "command: the probe needs a JUnit report",
        ),
        (
            ["probe", "--base", "main", "--head", "fix", "--revert", "README.md"],
            "--revert: not changed between base and head: README.md",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    repo: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    done = benchkit_in_process(*args[:1], "--repo", str(repo), *args[1:], store=tmp_path / "store")
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_ab_prints_both_shas(repo: Path, tmp_path: Path) -> None:
    args = ("ab", "--repo", str(repo), "--base", "main", "--head", "fix", "--", *JUNIT)
    done = benchkit_in_process(*args, store=tmp_path / "store")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("base ") and len(lines[0].split()[1]) == 40
    assert lines[1].startswith("head ") and len(lines[1].split()[1]) == 40


def test_ab_and_probe_in_the_repository_leave_its_git_status_clean(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default store (`data/runs` here) ignores itself: a maintainer's `git add -A`
    never takes benchkit's files into their change."""
    monkeypatch.delenv("BENCHKIT_STORE")
    for args in (
        ["ab", "--base", "main", "--head", "fix", "--", *JUNIT],
        ["probe", "--base", "main", "--head", "fix"],
    ):
        done = benchkit_in_process(*args, cwd=repo)
        assert done.returncode == 0, done.stderr
    assert list((repo / "data" / "runs" / "ab").glob("*.parquet"))
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
        ).stdout
        == ""
    )


FROZEN = {
    "tests/test_clock.py": "import freezegun  # in the maintainer's venv, not benchkit's\n"
    "import pytest\n\n\ndef test_pinned():\n    assert pytest.__version__ == '8.3.5'\n"
    "    assert freezegun.__version__ == '1.5.1'\n",
}


def test_ab_runs_in_the_maintainers_virtualenv(tmp_path: Path, maintainer_venv: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {**BASE, **FROZEN}, {**HEAD, **FROZEN}, "fix")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "benchkit", "ab", "--repo", str(repo)),
            *("--base", "main", "--head", "fix", "--", *JUNIT, "tests/test_clock.py"),
        ],
        env={**os.environ, "BENCHKIT_STORE": str(tmp_path / "store")},
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0, done.stderr
    python = str(maintainer_venv / "bin" / "python")
    base, head = done.stdout.splitlines()[:2]
    for side, line in zip(("base", "head"), (base, head), strict=True):
        assert line.startswith(side) and line.split("  python ")[1].endswith(f" {python}")
    rows = benchkit.table("ab", tmp_path / "store").sort("side").to_dicts()
    assert [(r["passed"], r["failed"], r["errors"]) for r in rows] == [(1, 0, 0), (1, 0, 0)]
    assert all(r["python"].endswith(python) for r in rows)


def test_ab_shows_an_import_error_apart_from_failures(repo: Path, tmp_path: Path) -> None:
    broken = {**HEAD, "tests/test_mul.py": "from calc import mul\nimport no_such_module\n"}
    make_repo(tmp_path / "broken", BASE, broken, "fix")
    result = benchkit.ab("main", "fix", JUNIT, repo=tmp_path / "broken", store=tmp_path / "s")
    head = result.runs["head"][0]
    # pytest stops at the collection error: nothing ran, and it is no failure
    assert (head.passed, head.failed, head.errors) == (0, 0, 1)
    text = result.to_markdown()
    assert "Tests that could not run:" in text
    assert "- head: tests/test_mul.py: ModuleNotFoundError: No module named 'no_such_module'" in (
        text
    )


def test_ab_in_a_benchs_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV")
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])  # deactivated
    repo = tmp_path / "repo"
    env_test = {
        "tests/test_env.py": "import os\n\n\ndef test_the_benchs_env():\n"
        "    assert os.environ['FROM_BENCH'] == os.getcwd() + '/yes'\n"
    }
    make_repo(repo, {**BASE, **FROZEN, **env_test}, {**HEAD, **FROZEN}, "fix")
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "bench.toml").write_text(
        f'name = "b"\ninstruction = "x"\n[repo]\ngit = "{repo}"\nbase = "main"\n'
        '[human]\nref = "fix"\n[environment]\nkind = "venv"\n'
        'packages = ["pytest==8.3.5", "freezegun==1.5.1"]\n[env]\nFROM_BENCH = "{worktree}/yes"\n'
    )
    command = [*JUNIT, "tests/test_clock.py", "tests/test_env.py"]
    result = benchkit.ab("main", "fix", command, repo=repo, store=tmp_path / "s", bench=bench)
    for side in ("base", "head"):
        run = result.runs[side][0]
        assert (run.passed, run.failed, run.errors) == (2, 0, 0)  # its [env] applied too
        assert run.python is not None and "-env/bin/python" in run.python


def test_ab_never_reads_a_report_an_earlier_run_left(tmp_path: Path) -> None:
    broken = {**HEAD, "conftest.py": "raise ImportError('the head cannot even start')\n"}
    make_repo(tmp_path / "repo", BASE, broken, "fix")
    report = tmp_path / "outside.xml"  # a report path outside the worktrees: it outlives them
    command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
    result = benchkit.ab("main", "fix", command, repo=tmp_path / "repo", store=tmp_path / "s")
    base, head = result.runs["base"][0], result.runs["head"][0]
    assert (base.passed, base.failed) == (1, 1)
    assert head.cases is None and head.passed is None  # no report of its own: no figures


def test_ab_fail_on_flip_exits_1_when_a_passing_test_fails_at_head(
    repo: Path, tmp_path: Path
) -> None:
    # From fix back to main: test_scale passed at fix and fails at main.
    argv = ["ab", "--repo", str(repo)]
    store = tmp_path / "store"
    broken = [*argv, "--base", "fix", "--head", "main", "--fail-on-flip", "--", *JUNIT]
    done = benchkit_in_process(*broken, store=store)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (
        "benchkit: 1 test(s) passed at base and fail at head: tests/test_calc.py::test_scale"
    )
    assert "| tests/test_calc.py::test_scale | passed | failed |" in done.stdout
    fixed = [*argv, "--base", "main", "--head", "fix", "--fail-on-flip", "--", *JUNIT]
    done = benchkit_in_process(*fixed, store=store)
    assert done.returncode == 0, done.stderr  # failed -> passed and a new test: no break


def _ab_cli(repo: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return benchkit_in_process("ab", "--repo", str(repo), *args, store=store)


def test_ab_fail_on_flip_fails_when_the_heads_tests_do_not_run(tmp_path: Path) -> None:
    """A head whose suite cannot start (pytest exits 4, no report) breaks every test
    that passed at base: the gate cannot call that a pass."""
    broken = {**BASE, "pytest.ini": "[pytest]\naddopts = --no-such-option\n"}
    make_repo(tmp_path / "repo", BASE, broken, "broken")
    store = tmp_path / "store"
    gate = ["--base", "main", "--head", "broken", "--fail-on-flip", "--"]
    done = _ab_cli(tmp_path / "repo", store, *gate, *JUNIT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "benchkit: head's tests cannot be judged (exit 4): .benchkit-report.xml not written; "
        "1 test passed at base"
    )
    assert "| head | " in done.stdout and " | 4 | " in done.stdout  # its exit code shown
    missing = _ab_cli(tmp_path / "repo", store, *gate, "no-such-runner-xyz", "--junitxml={report}")
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert missing.stderr.strip().startswith(
        "benchkit: base's tests cannot be judged (the command could not start): "
    )
    assert "nanx" not in missing.stdout
    assert "Duration: not judged: a side's command did not run." in missing.stdout


def test_a_probe_whose_tests_cannot_run_at_head_proves_nothing_and_exits_1(
    repo: Path, tmp_path: Path
) -> None:
    argv = ["probe", "--repo", str(repo)]
    argv += ["--base", "main", "--head", "fix", "--", "no-such-runner-xyz", "{report}"]
    done = benchkit_in_process(*argv, store=tmp_path / "store")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "benchkit: the tests at head cannot be judged (the command could not start): "
        ".benchkit-report.xml not written"
    )
    assert "cannot be judged (the command could not start)" in done.stdout


def test_ab_fail_on_flip_fails_when_the_heads_report_names_no_test(tmp_path: Path) -> None:
    """Every test deleted at head (pytest exits 5, its report empty): what passed at
    base no longer runs, so the gate cannot pass, at any repeat."""
    gone = {"tests/test_calc.py": "", "calc.py": BASE["calc.py"] + "\n# changed\n"}
    make_repo(tmp_path / "repo", BASE, gone, "gone")
    gate = ["--base", "main", "--head", "gone", "--repeat", "2", "--fail-on-flip", "--"]
    done = _ab_cli(tmp_path / "repo", tmp_path / "store", *gate, *JUNIT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "benchkit: head's tests cannot be judged (exit 5): .benchkit-report.xml names no test; "
        "1 test passed at base"
    )
    args = ("probe", "--repo", str(tmp_path / "repo"), "--base", "main", "--head", "gone")
    probed = benchkit_in_process(*args, store=tmp_path / "store")
    assert probed.returncode == 1, probed.stdout + probed.stderr
    assert probed.stderr.strip().startswith("benchkit: the tests at head cannot be judged (exit")


def test_ab_fail_on_flip_needs_a_report_to_name_flips(repo: Path, tmp_path: Path) -> None:
    command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    gate = ["--base", "main", "--head", "fix", "--fail-on-flip", "--"]
    done = _ab_cli(repo, tmp_path / "store", *gate, *command)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "benchkit: ab: --fail-on-flip: the command names no JUnit report ({report} or "
        "--junitxml PATH), so no test can be named as flipped"
    )
    assert not (tmp_path / "store").exists()  # refused before anything ran


@pytest.mark.parametrize(
    ("base", "head", "said"),
    [
        ([1.0], [2.0], "head 2.00x base: not judged, one run a side"),
        ([1.0, 1.1, 1.05], [1.5, 1.6, 1.55], "head 1.48x base: slower"),
        ([1.0, 1.1, 1.05], [0.5, 0.6, 0.55], "head 0.52x base: faster"),
        ([1.0, 2.0, 1.5], [1.9, 2.2, 2.0], "head 1.33x base: no change shown"),  # overlap
        ([1.0, 1.01, 1.02], [1.05, 1.06, 1.07], "head 1.05x base: no change shown"),  # < factor
    ],
)
def test_a_duration_change_is_called_only_when_the_repeats_say_it_is_real(
    base: list[float], head: list[float], said: str
) -> None:
    assert duration_change(base, head, factor=1.1).startswith(said)
