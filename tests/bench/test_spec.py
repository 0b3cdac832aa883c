"""Bench files: a bad one is one line naming the file and the field, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchkit
from benchkit.bench.bench_file import load_bench
from benchkit.bench.find import find_bench
from benchkit.errors import BenchError
from benchkit.workspace.cache import cache_dir
from tests.conftest import DEMO, TinyRepo
from tests.helpers import benchkit_in_process

GOOD = """\
name = "ok"
instruction = "Do it."

[repo]
tree = "base"

[human]
patch = "human.patch"

[[checks]]
name = "test"
command = ["python", "-c", "pass"]
"""


def _bench(tmp_path: Path, text: str) -> Path:
    (tmp_path / "base").mkdir(exist_ok=True)
    (tmp_path / "human.patch").write_text("")
    path = tmp_path / "bench.toml"
    path.write_text(text)
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    bench = load_bench(_bench(tmp_path, GOOD))
    assert bench.name == "ok"
    assert bench.file.checks[0].timeout == 300.0
    assert bench.resolve("base") == (tmp_path / "base").resolve()


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("colour = 'red'\n" + GOOD, "colour", "unknown key"),
        (GOOD.replace('name = "ok"\n', ""), "name", "Field required"),
        (GOOD.replace('name = "ok"', 'name = "a b"'), "name", "String should match"),
        (GOOD + "timeout = 'soon'\n", "checks.0.timeout", "valid number"),
        (GOOD + "timeout = true\n", "checks.0.timeout", "valid number"),
        (GOOD + "timeout = inf\n", "checks.0.timeout", "finite number"),
        (GOOD + "timeout = nan\n", "checks.0.timeout", "finite number"),
        (GOOD + "timeout = 1e300\n", "checks.0.timeout", "less than or equal to 604800"),
        (GOOD + "count = 'lines'\n", "checks.0.count", "Input should be"),
        (GOOD + "count = {junit = true, regex = '(x)'}\n", "checks.0.count", "give one of"),
        (
            GOOD.replace(
                'command = ["python", "-c", "pass"]', "command = 'x'\ncount = {regex='('}"
            ),
            "checks.0.count.regex",
            "not a regular expression",
        ),
        (
            GOOD.replace(
                'command = ["python", "-c", "pass"]', "command = 'x'\ncount = {regex='x'}"
            ),
            "checks.0.count.regex",
            "needs one group",
        ),
        (
            GOOD.replace('tree = "base"', 'tree = "base"\ngit = "/x"'),
            "repo",
            "exactly one of 'tree'",
        ),
        (GOOD.replace('tree = "base"', 'git = "/x"'), "repo", "'base' (the base ref) is required"),
        (
            GOOD.replace('patch = "human.patch"', 'patch = "nope.patch"'),
            "human.patch",
            "no such file",
        ),
        (
            GOOD + "[tests]\ncheck = 'unit'\nreport = 'r.xml'\nalone = 'x {files}'\n",
            "(file)",
            "tests.check names no check",
        ),
        (
            GOOD + "[tests]\nreport = 'packages/*/junit-*.xml'\nrunner = 'vitest'\n",
            "tests.report",
            "a glob names the packages' folders, then the report's path in each",
        ),
        (GOOD + "[tests]\nreport = '../r.xml'\nrunner = 'vitest'\n", "tests.report", "inside"),
    ],
)
def test_bad_files_name_the_field(tmp_path: Path, text: str, field: str, message: str) -> None:
    path = _bench(tmp_path, text)
    with pytest.raises(BenchError) as caught:
        load_bench(path)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"{path}: {field}: ")
    assert message in line


def test_not_toml(tmp_path: Path) -> None:
    path = _bench(tmp_path, "name = \n")
    with pytest.raises(BenchError, match=r"bench.toml: not valid TOML"):
        load_bench(path)


def test_an_unknown_bench_name_lists_the_bundled_ones() -> None:
    with pytest.raises(BenchError, match=r"no such bench \(bundled: .*demo"):
        find_bench("no-such-bench")


def test_the_demo_bench_loads() -> None:
    bench = find_bench("demo")
    assert bench.path == DEMO / "bench.toml"
    assert [c.name for c in bench.file.checks] == ["install", "typecheck", "lint", "test", "build"]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: t.replace('base = "main"', 'base = "no-such-branch"'), "repo.base"),
        (lambda t: t.replace('ref = "human"', 'ref = "v9.9"'), "human.ref"),
        (lambda t: "surprise = 1\n" + t, "surprise"),
        (lambda t: t.replace("timeout = 30", "timeout = -1"), "checks.0.timeout"),
        (lambda t: t.replace('ref = "human"', 'ref = "main"'), "human.ref"),  # base itself
        (
            lambda t: t.replace("command = \"python -c 'import calc, util'\"", "command = []"),
            "checks.0.command",
        ),
        (
            lambda t: t.replace("command = \"python -c 'import calc, util'\"", 'command = " "'),
            "checks.0.command",
        ),
    ],
)
def test_cli_exits_2_and_writes_nothing(
    tiny: TinyRepo, tmp_path: Path, edit: object, field: str
) -> None:
    assert callable(edit)
    tiny.bench_file.write_text(edit(tiny.bench_file.read_text()))
    store = tmp_path / "store"
    done = benchkit_in_process(
        "pilot",
        "--bench",
        str(tiny.bench_dir),
        "--arm",
        "human",
        store=store,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"benchkit: {tiny.bench_file}: {field}: ")
    assert not store.exists()


def test_cli_unknown_arm_exits_2(tiny: TinyRepo, tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = benchkit_in_process(
        "pilot",
        "--bench",
        str(tiny.bench_dir),
        "--arm",
        "human",
        "--arm",
        "replay:zz",
        store=store,
    )
    assert done.returncode == 2
    assert "replay:zz: no patch named 'zz'" in done.stderr
    assert not store.exists()  # the good arm before it did not run either


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf"])
def test_a_max_cost_that_is_no_amount_is_refused(
    tiny: TinyRepo, tmp_path: Path, value: str
) -> None:
    store = tmp_path / "store"
    done = benchkit_in_process(
        "pilot",
        "--bench",
        str(tiny.bench_dir),
        "--arm",
        "noop",
        "--max-cost",
        value,
        store=store,
    )
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("benchkit: max_cost: must be a finite amount of USD")
    assert len(done.stderr.splitlines()) == 1
    assert not store.exists()


@pytest.mark.parametrize(
    ("make", "field", "message"),
    [
        (lambda b: (b / "base").write_text("not a folder"), "repo.tree", "not a folder: base"),
        (lambda b: (b / "human.patch").mkdir(), "human.patch", "not a file: human.patch"),
    ],
)
def test_a_tree_that_is_a_file_or_a_patch_that_is_a_folder(
    tmp_path: Path, make: object, field: str, message: str
) -> None:
    bench = tmp_path / "b"
    (bench / "base").mkdir(parents=True)
    (bench / "base" / "a.py").write_text("A = 1\n")
    (bench / "human.patch").write_text("")
    assert callable(make)
    if field == "repo.tree":
        (bench / "base" / "a.py").unlink()
        (bench / "base").rmdir()
    else:
        (bench / "human.patch").unlink()
    make(bench)
    (bench / "bench.toml").write_text(
        'name = "b"\ninstruction = "x"\n[repo]\ntree = "base"\n[human]\npatch = "human.patch"\n'
    )
    with pytest.raises(BenchError) as caught:
        load_bench(bench / "bench.toml")
    assert str(caught.value) == f"{bench / 'bench.toml'}: {field}: {message}"


def test_a_failed_clone_leaves_nothing_and_an_option_is_no_url(tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    for source in (str(tmp_path / "nowhere"), f"--upload-pack=touch {planted}"):
        (tmp_path / "b").mkdir(exist_ok=True)
        (tmp_path / "b" / "bench.toml").write_text(
            f'name = "b"\ninstruction = "x"\n[repo]\ngit = "{source}"\nbase = "main"\n'
            '[human]\nref = "main"\n'
        )
        with pytest.raises(BenchError, match=r"repo\.git: cannot clone"):
            benchkit.pilot(str(tmp_path / "b"), arm="noop", store=tmp_path / "store")
    assert not planted.exists()  # the option reached git as a URL, never as an option
    locks = (".lock", ".gate")
    left = [p.name for p in (cache_dir() / "repos").iterdir() if not p.name.endswith(locks)]
    assert left == []  # no half-made mirror
    assert not (tmp_path / "store").exists()
