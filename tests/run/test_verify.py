"""Verdicts no arm can game: real pilots on a real pytest repository, with arms that
try. The checks after the arm run on its diff checked out on a clean tree; the bench's
held-out tests are reset before they run; what the arm did to tests is named."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

import benchkit
from benchkit.arms.protocol import Arm, ArmContext, ArmOutcome
from benchkit.errors import BenchError
from benchkit.records import PilotSpec, Run
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import plan
from benchkit.store.store import Store
from tests.conftest import make_repo, sh_git
from tests.helpers import benchkit_in_process
from tests.workspace.test_environment import editable_bench

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early

CALC = {
    ".gitignore": ".bench/\n__pycache__/\n",
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n\n\n"
    "def div(a, b):\n    return a // b\n",
    "tests/test_calc.py": "from calc import add, mul\n\n\ndef test_add():\n"
    "    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}
HUMAN = {
    "calc.py": CALC["calc.py"].replace("a // b", "a / b"),
    "tests/test_calc.py": CALC["tests/test_calc.py"].replace("add, mul", "add, div, mul")
    + "\n\ndef test_div():\n    assert div(7, 2) == 3.5\n",
}
BENCH = """\
name = "calc"
instruction = "Make div a true division."

[repo]
git = "{repo}"
base = "main"

[human]
ref = "human"

[environment]
kind = "venv"
python = "3.11"
packages = ["pytest==8.3.5"]

[env]
PYTHONPATH = "{{worktree}}:{{worktree}}/.bench/site"

[[checks]]
name = "test"
command = "python -m pytest -q -p no:cacheprovider --junitxml {{report}}"
timeout = 120
count = "junit"

[tests]
report = ".bench/junit.xml"
runner = "pytest"
{tests}
[sites]
exclude = ["tests/*"]
"""

# A sitecustomize.py in an ignored folder on the checks' PYTHONPATH that loads a pytest
# plugin turning every failure into a pass: what an arm can leave besides its diff.
SITECUSTOMIZE = 'import os\nos.environ["PYTEST_PLUGINS"] = "bk_pass_all"\n'
PASS_ALL = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome, report.longrepr = "passed", None
"""


@dataclass(frozen=True)
class Doing(Arm):
    """An arm that does what its function does to the worktree, in this process."""

    name: str
    do: Callable[[Path], None]

    def run(self, context: ArmContext) -> ArmOutcome:
        self.do(context.worktree)
        return ArmOutcome(ok=True)


def _bench(tmp_path: Path, tests: str = "") -> Path:
    repo = tmp_path / "repo"
    if not repo.exists():
        make_repo(repo, CALC, HUMAN, "human")
    bench = tmp_path / f"bench{len(list(tmp_path.glob('bench*')))}"
    bench.mkdir()
    (bench / "bench.toml").write_text(BENCH.format(repo=repo, tests=tests))
    return bench


def _pilot(bench: Path, store: Path, arm: str, do: Callable[[Path], None] | None = None) -> Run:
    [p] = plan([PilotSpec(bench=str(bench), arm="noop" if do else arm)])
    if do is not None:
        p = replace(p, arm=Doing(name=arm, do=do))
    return execute_plan(p, Store(store))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_an_ignored_plugin_the_arm_plants_reaches_no_check(tmp_path: Path) -> None:
    """The arm breaks `add` and plants, in an ignored folder on the checks' PYTHONPATH,
    a plugin that passes every failure: the checks see the break, not the plugin, and
    the run names what the arm wrote that did not count."""

    def plant(tree: Path) -> None:
        site = tree / ".bench" / "site"
        site.mkdir(parents=True)
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        (site / "bk_pass_all.py").write_text(PASS_ALL)
        _edit(tree / "calc.py", "a + b", "a - b")

    run = _pilot(_bench(tmp_path), tmp_path / "store", "plant", plant)
    assert run.status == "ok"
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.regression_files, run.gate.regressions) == (
        "fail",
        ("tests/test_calc.py",),
        1,
    )
    assert run.ignored_written == (".bench/site/bk_pass_all.py", ".bench/site/sitecustomize.py")
    [row] = benchkit.runs(tmp_path / "store").to_dicts()
    assert row["ignored_written"] == [".bench/site/bk_pass_all.py", ".bench/site/sitecustomize.py"]
    assert row["ignored_written_count"] == 2
    assert row["tampered"] == []  # calc.py is no test
    verified = Path(run.artifacts, "logs", "verify.log").read_text()
    assert "checked out at" in verified


def test_a_conftest_hidden_by_a_gitignore_that_ignores_itself_reaches_no_check(
    tmp_path: Path,
) -> None:
    """Issue 36, case 4a: the arm breaks `add`, and beside the tests plants a conftest
    that passes every failure, hidden by a `tests/.gitignore` that ignores itself and
    the conftest: the checks run on a clean tree, the arm's diff applied, where
    neither is; the break fails the gate, and the run names the two files."""

    def hide(tree: Path) -> None:
        (tree / "tests" / ".gitignore").write_text(".gitignore\nconftest.py\n")
        (tree / "tests" / "conftest.py").write_text(PASS_ALL)
        _edit(tree / "calc.py", "a + b", "a - b")

    run = _pilot(_bench(tmp_path), tmp_path / "store", "hide", hide)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.regression_files) == ("fail", ("tests/test_calc.py",))
    assert run.ignored_written == ("tests/.gitignore", "tests/conftest.py")
    assert "+    return a - b" in Path(run.artifacts, "agent.patch").read_text()


def test_the_checks_never_see_the_arms_home(tmp_path: Path) -> None:
    """Issue 36, case 4b: what the arm leaves in its HOME (a `usercustomize.py`, a
    tool's configuration) is not the checks': they run with a HOME of their own (the
    check below fails when pointed at the arm's)."""

    def plant(tree: Path) -> None:
        home = tree.with_name("home")  # the arm's HOME, beside its worktree
        assert home.is_dir()
        (home / "planted").write_text("the arm's\n")

    bench = _bench(tmp_path)
    text = (bench / "bench.toml").read_text()
    home_check = (
        '[[checks]]\nname = "home"\ncommand = "sh -c \'test ! -e $HOME/planted\'"\n\n[tests]'
    )
    (bench / "bench.toml").write_text(text.replace("[tests]", home_check, 1))
    run = _pilot(bench, tmp_path / "store", "plant", plant)
    seen = run.after("home")
    assert seen is not None and seen.status == "ok"


def test_a_change_hidden_by_an_index_flag_is_still_the_arms(tmp_path: Path) -> None:
    """An arm that marks a file it broke `assume-unchanged`: its diff holds the change
    all the same, and so does the clean tree the checks see."""

    def hide(tree: Path) -> None:
        _edit(tree / "calc.py", "a + b", "a - b")
        sh_git(tree, "update-index", "--assume-unchanged", "calc.py")

    run = _pilot(_bench(tmp_path), tmp_path / "store", "hide", hide)
    assert "-    return a + b\n+    return a - b" in Path(run.artifacts, "agent.patch").read_text()
    assert run.gate is not None and run.gate.regression_files == ("tests/test_calc.py",)


def test_a_held_out_test_the_arm_edits_runs_as_held_out(tmp_path: Path) -> None:
    """The arm breaks `mul` and edits its test to pass whatever: the held-out version
    of the test runs, and fails; the edit is in the arm's diff, named as tampering."""

    def cheat(tree: Path) -> None:
        _edit(tree / "calc.py", "a * b", "a * b + 1")
        _edit(tree / "tests" / "test_calc.py", "assert mul(2, 3) == 6", "assert True")

    bench = _bench(tmp_path, 'held_out = ["tests/*.py"]')
    run = _pilot(bench, tmp_path / "store", "cheat", cheat)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.regression_files, run.gate.regressions) == (
        "fail",
        ("tests/test_calc.py",),
        1,
    )
    assert run.tampered == (("tests/test_calc.py", "edited"),)
    assert "+    assert True" in Path(run.artifacts, "agent.patch").read_text()
    assert "held out, as base's: tests/test_calc.py" in (
        Path(run.artifacts, "logs", "verify.log").read_text()
    )
    # without held_out, the edit decides
    free = _pilot(_bench(tmp_path), tmp_path / "store", "cheat", cheat)
    assert free.gate is not None and free.gate.verdict == "pass"
    assert free.tampered == (("tests/test_calc.py", "edited"),)


def test_held_out_human_makes_the_humans_new_test_a_must_pass(tmp_path: Path) -> None:
    """`held_out = "human"`: the human's test file runs after every arm, so `must_pass`
    can name the test the human added. noop leaves it failing; the human, and an arm
    that fixes the code without writing the test, resolve the task."""
    tests = """held_out = "human"
must_pass = ["tests/test_calc.py::test_div"]
keep_passing = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"]
"""
    bench = _bench(tmp_path, tests)
    store = tmp_path / "store"

    def fix_only(tree: Path) -> None:
        _edit(tree / "calc.py", "a // b", "a / b")

    noop, human = _pilot(bench, store, "noop"), _pilot(bench, store, "human")
    fixed = _pilot(bench, store, "fix-only", fix_only)
    assert (noop.resolved, human.resolved, fixed.resolved) == (False, True, True)
    assert noop.gate is not None  # the human's new test fails on base's code: no regression
    assert (noop.gate.reasons, noop.gate.regressions, noop.gate.new_failing_files) == (
        ("new failing test(s), none run at base, in tests/test_calc.py",),
        0,
        ("tests/test_calc.py",),
    )
    assert fixed.tampered == ()
    assert human.tampered == (("tests/test_calc.py", "edited"),)
    names = {t.case.label for t in fixed.tests if t.phase == "after"}
    assert "tests/test_calc.py::test_div" in names  # the held-out test ran on the arm's code


def test_a_bench_that_holds_out_a_path_outside_the_repository_is_refused(
    tmp_path: Path,
) -> None:
    bench = _bench(tmp_path, 'held_out = ["../secrets"]')
    with pytest.raises(BenchError) as refused:
        benchkit.pilot(str(bench), arm="noop", store=tmp_path / "store")
    said = str(refused.value)
    assert str(bench / "bench.toml") in said
    assert "tests.held_out" in said and "inside the repository" in said


BROKEN_CONFTEST = {"helpers.py": "y = 1\n", "tests/conftest.py": "from helpers import x\n"}
DID_NOT_RUN = (
    "pytest exited 4 (usage error): ImportError: cannot import name 'x' from 'helpers' "
    "(.bench/junit.xml not written)"
)


def test_a_conftest_that_cannot_import_says_why_the_tests_did_not_run(tmp_path: Path) -> None:
    """No report: the reason names the runner's exit and what it means, its own error
    line, and the report by its path in the tree, once."""

    def broken(tree: Path) -> None:
        for name, text in BROKEN_CONFTEST.items():
            (tree / name).write_text(text)

    run = _pilot(_bench(tmp_path), tmp_path / "store", "broken", broken)
    assert run.gate is not None
    assert (run.gate.verdict, run.gate.reasons) == ("fail", (f"tests did not run: {DID_NOT_RUN}",))
    assert run.tampered == (("tests/conftest.py", "added"),)


def test_a_pilot_on_a_bench_whose_base_cannot_run_its_tests_exits_1(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {**CALC, **BROKEN_CONFTEST}, HUMAN, "human")
    bench = _bench(tmp_path)
    done = benchkit_in_process(
        "pilot", "--bench", str(bench), "--arm", "noop", "--sandbox", "none", store=tmp_path / "s"
    )
    assert done.returncode == 1, done.stderr
    assert f"the tests did not run at base: {DID_NOT_RUN}" in done.stdout
    assert "1 of 1 runs could not be judged (gate error)" in done.stdout


def test_an_editable_install_never_runs_a_build_the_arm_wrote(tmp_path: Path) -> None:
    """With `project = "editable"`, the clean tree is installed at base, before the arm:
    a build backend the arm writes into its tree never runs (outside the sandbox, as
    benchkit's user), and the checks still see the arm's files."""
    folder = editable_bench(tmp_path)
    marker = tmp_path / "built-by-the-arm"

    def own_backend(tree: Path) -> None:
        (tree / "backend.py").write_text(
            f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        )
        text = (tree / "pyproject.toml").read_text()
        (tree / "pyproject.toml").write_text(
            text.replace(
                'requires = ["flit_core>=3.9,<4"]', 'requires = []\nbackend-path = ["."]'
            ).replace('"flit_core.buildapi"', '"backend"')
        )
        _edit(tree / "src" / "mpkg" / "__init__.py", "return 1", "return 2")

    run = _pilot(folder, tmp_path / "store", "own-backend", own_backend)
    assert run.status == "ok", run.failure_detail
    assert not marker.exists()
    assert run.gate is not None and run.gate.regression_files == ("tests/test_mpkg.py",)
    assert ("pyproject.toml", "edited") not in run.tampered  # its build, not its tests


def test_a_held_out_glob_that_holds_nothing_is_said(tmp_path: Path) -> None:
    run = _pilot(_bench(tmp_path, 'held_out = ["./test/*.py"]'), tmp_path / "store", "noop")
    assert run.warnings == ("held_out ['test/*.py']: no file held out",)
