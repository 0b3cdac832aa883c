"""The `benchkit` command as a user runs it: a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from tests.conftest import TinyRepo
from tests.helpers import benchkit_cli

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early


def test_benches_lists_the_demo(tmp_path: Path) -> None:
    done = benchkit_cli("benches", module="benchkit.cli", store=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("demo ")


def test_pilot_prints_a_line_per_run_and_a_table(tiny: TinyRepo, tmp_path: Path) -> None:
    done = benchkit_cli(
        "pilot",
        "--bench",
        str(tiny.bench_dir),
        "--arm",
        "human",
        "--arm",
        "noop",
        module="benchkit.cli",
        store=tiny.seeded(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(  # the human added a test: the line names it
        "human #1: ok  lint=ok test=ok  gate=pass  tampered test_calc.py (edited)  covered 2/2  "
        "matched 2  unrelated 0"
    )
    assert lines[1].startswith("noop #1: ok  lint=ok test=ok  gate=pass  covered 0/2")
    header = lines[3].split()
    assert header[:4] == ["run_id", "arm", "trial", "status"]
    assert [row.split()[1] for row in lines[4:6]] == ["human", "noop"]
    assert lines[7] == "tests, by the gate:"
    assert lines[8] == "  human #1  pass        no failing test; tampered test_calc.py (edited)"
    # progress went to stderr, stage by stage
    assert (
        "tiny human #1: prepare environment baseline execute verify score record cleanup"
        in done.stderr
    )


def test_a_failed_run_exits_1_and_is_listed(tiny: TinyRepo, tmp_path: Path) -> None:
    bad = tmp_path / "bad.patch"
    bad.write_text("--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n")
    done = benchkit_cli(
        "pilot",
        "--bench",
        str(tiny.bench_dir),
        "--arm",
        f"replay:{bad}",
        module="benchkit.cli",
        store=tmp_path,
    )
    assert done.returncode == 1
    assert "failed (patch)" in done.stdout
    listed = benchkit_cli("runs", module="benchkit.cli", store=tmp_path)
    assert listed.returncode == 0
    assert "failed (patch)" in listed.stdout
    assert len(benchkit.runs(tmp_path)) == 1
    run_id = benchkit.runs(tmp_path)["run_id"][0]
    shown = benchkit_cli("evidence", run_id, module="benchkit.cli", store=tmp_path)
    assert shown.returncode == 0, shown.stderr
    row = shown.stdout.splitlines()[2]  # a run that never got its change in says so
    assert row.startswith(f"| replay:{bad} (failed: patch) | {run_id} |"), row


def test_runs_on_an_empty_store(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = benchkit_cli("runs", module="benchkit.cli", store=tmp_path / "empty")
    assert done.returncode == 0
    assert done.stderr.strip() == "no runs"


def test_a_filter_no_run_matches_says_what_the_store_holds(tiny: TinyRepo, tmp_path: Path) -> None:
    """A typo in --set (or --arm, ...) is told apart from a store without runs."""
    for arm, run_set in (("human", "m1"), ("noop", "m2")):
        benchkit.pilot(str(tiny.bench_dir), arm=arm, run_set=run_set, store=tmp_path)
    for command in ("runs", "status"):
        done = benchkit_cli(command, "--set", "m3", module="benchkit.cli", store=tmp_path)
        assert done.returncode == 0, done.stderr
        said = (done.stderr if command == "runs" else done.stdout).strip()
        assert said == "no runs: none has --set m3 (the store's: m1, m2)"
    typo = benchkit_cli(
        "runs",
        "--set",
        "m1",
        "--arm",
        "humn",
        "--bench",
        "tiny",
        module="benchkit.cli",
        store=tmp_path,
    )
    assert typo.stderr.strip() == "no runs: none has --arm humn (the store's: human, noop)"
    apart = benchkit_cli(
        "runs", "--set", "m1", "--arm", "noop", module="benchkit.cli", store=tmp_path
    )
    assert apart.stderr.strip() == "no runs: none has --arm noop and --set m1 together"
    held = benchkit_cli("runs", "--set", "m1", module="benchkit.cli", store=tmp_path)
    assert held.returncode == 0 and "human" in held.stdout and "noop" not in held.stdout


def test_a_filter_no_run_matches_lists_only_some_of_many_values(tmp_path: Path) -> None:
    csv = tmp_path / "runs.csv"
    csv.write_text("bench,arm,run_set\n" + "".join(f"b,a,s{n:02d}\n" for n in range(12)))
    assert (
        benchkit_cli("import", str(csv), module="benchkit.cli", store=tmp_path / "s").returncode
        == 0
    )
    done = benchkit_cli("runs", "--set", "s99", module="benchkit.cli", store=tmp_path / "s")
    listed = "s00, s01, s02, s03, s04, s05, s06, s07, ... (12 in all)"
    assert done.stderr.strip() == f"no runs: none has --set s99 (the store's: {listed})"


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["status"],
        ["compare"],
        ["evidence", "20260101T000000-00000000"],
        ["plot", "wall", "--out", "w.png"],
        ["report", "--out", "site"],
        ["compact"],
        ["rerun", "20260101T000000-00000000"],
    ],
)
def test_a_reading_command_on_a_store_folder_that_is_not_there_says_so(
    tmp_path: Path, command: list[str]
) -> None:
    """A typo in --store is not an empty store: one line, exit 2, nothing made."""
    missing = tmp_path / "no-such-store"
    done = benchkit_cli(*command, module="benchkit.cli", store=missing)
    assert (done.returncode, done.stderr) == (
        2,
        f"benchkit: {missing}: BENCHKIT_STORE: no store here: the folder does not exist\n",
    )
    assert not missing.exists()


def test_public_face() -> None:
    assert benchkit.__all__ == sorted(benchkit.__all__)
    for name in benchkit.__all__:
        assert hasattr(benchkit, name), name


def test_pilot_runs_a_matrix_in_one_call(tiny: TinyRepo, tmp_path: Path) -> None:
    other = tmp_path / "bench2"
    other.mkdir()
    text = tiny.bench_file.read_text().replace('name = "tiny"', 'name = "tiny2"')
    (other / "bench.toml").write_text(text)
    args = ["--bench", str(tiny.bench_dir), "--bench", str(other), "--arm", "human"]
    args += ["--arm", "noop", "--model", "m1", "--model", "m2"]
    done = benchkit_cli("pilot", *args, module="benchkit.cli", store=tiny.seeded(tmp_path / "s"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    names = [line.split(":")[0] for line in lines[:8]]
    assert names == [
        f"{bench} {arm} {model} #1"
        for bench in ("tiny", "tiny2")
        for arm in ("human", "noop")
        for model in ("m1", "m2")
    ]
    assert lines[9].split()[:6] == ["run_id", "bench", "arm", "model", "trial", "status"]
    # its stages, under its label (again after the run before it, told meanwhile)
    label = "tiny2 noop m2 #1: "
    shown = [x.removeprefix(label) for x in done.stderr.splitlines() if x.startswith(label)]
    assert " ".join(shown).split()[:3] == ["prepare", "environment", "baseline"]
    runs = benchkit.runs(tmp_path / "s")
    keys = set(runs.select("bench", "arm", "model", "trial").iter_rows())
    assert keys == {
        (b, a, m, 1) for b in ("tiny", "tiny2") for a in ("human", "noop") for m in ("m1", "m2")
    }
    covered = {(r["bench"], r["arm"]): r["sites_covered"] for r in runs.to_dicts()}
    assert covered[("tiny2", "human")] == covered[("tiny", "human")] == 2


def test_the_api_takes_lists_for_a_matrix(tiny: TinyRepo, tmp_path: Path) -> None:
    runs = benchkit.pilot(
        tiny.bench_dir, arm="noop", model=["a", "b"], trials=2, store=tiny.seeded(tmp_path / "s")
    )
    assert [(r.spec.model, r.spec.trial) for r in runs] == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]


ENDING = """\
import atexit, gc, sys
from pathlib import Path

marker = Path(sys.argv[1])
said = lambda: marker.write_text(f"{marker.read_text()}frozen {gc.get_freeze_count() > 0}")
atexit.register(said)  # before the command's own: run after it

class Cycle:
    def __del__(self):
        marker.write_text("finalized ")

from benchkit.cli import main

def garbage():
    cycle = Cycle()
    cycle.me = cycle  # unreachable once this returns: only a collection finds it

gc.disable()  # no collection before the command's end
garbage()
main(["benches"])
"""


AT_ONCE = """\
import atexit, gc, sys
from pathlib import Path

marker = Path(sys.argv[1])

class Cycle:
    def __del__(self):  # as the interpreter's last collections find it
        marker.write_text(marker.read_text() + " finalized")

def garbage():
    cycle = Cycle()
    cycle.me = cycle  # unreachable once this returns: only a collection finds it

from benchkit.__main__ import main
from benchkit.workspace.processes import as_command

as_command()  # as the entry begins (once a process)
atexit.register(lambda: marker.write_text(marker.read_text() + "handled"))  # the command's
gc.disable()  # no collection before the command's end
garbage()
sys.argv = ["benchkit", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize(("args", "code"), [(["benches"], 0), (["runs", "--limit", "x"], 2)])
def test_a_commands_process_ends_at_once_with_its_output_and_status(
    tmp_path: Path, args: list[str], code: int
) -> None:
    """The `benchkit` command's process ends as its last exit handler runs: its exit
    status and its whole output as the command gave them, the handlers registered
    after its start run, and nothing of the interpreter's teardown after (its last
    collections would finalize the garbage left)."""
    marker = tmp_path / "marker"
    marker.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", AT_ONCE, str(marker), *args],
        capture_output=True,
        text=True,
        check=False,
        env=_buffered(),
    )
    assert done.returncode == code, done.stderr
    if code == 0:
        assert done.stdout.startswith("demo ") and done.stdout.endswith("\n")
    else:
        assert done.stderr.startswith("Usage:") or "benchkit:" in done.stderr, done.stderr
    assert marker.read_text() == "handled"


def _buffered() -> dict[str, str]:
    """This environment, Python's output buffered as in a terminal's pipe: what a
    process that ends at once has not flushed is lost."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


AFTER = """\
import sys
from benchkit.__main__ import main

sys.argv = ["benchkit", "--version"]
try:
    main()
except SystemExit:
    pass  # a caller that goes on: its own end is its own
raise RuntimeError("after the command")
"""


def test_a_process_that_goes_on_after_the_command_ends_as_python_ends_it() -> None:
    """A caller that catches the command's exit and goes on ends as its own end says:
    its error printed, and its exit status (not the command's)."""
    done = subprocess.run([sys.executable, "-c", AFTER], capture_output=True, text=True)
    assert done.stdout.startswith("benchkit, version")
    assert done.returncode == 1 and "RuntimeError: after the command" in done.stderr


LEFT = """\
import sys
from benchkit.workspace.processes import as_command, command_ended, left_to_the_end

print("library:", left_to_the_end(lambda: print("run at the end")))  # nothing left
as_command()
print("command:", left_to_the_end(lambda: print("run at the end")))
if sys.argv[1] != "as-python-ends":
    command_ended(0)
if sys.argv[1] == "ended, then an error":  # a caller that went on after the command
    raise RuntimeError("after the command")
raise SystemExit(0)
"""


@pytest.mark.parametrize(
    ("how", "runs"), [("ended", False), ("as-python-ends", True), ("ended, then an error", True)]
)
def test_what_a_command_leaves_to_its_end_is_run_unless_it_ends_at_once(
    how: str, runs: bool
) -> None:
    """A command's process leaves to its exit what the kernel's end does as well (a Ray
    cluster's connection): run there unless the command ended at once; benchkit used
    as a library leaves nothing (the caller runs it at once)."""
    done = subprocess.run(
        [sys.executable, "-c", LEFT, how], capture_output=True, text=True, env=_buffered()
    )
    assert done.returncode == (1 if "error" in how else 0), done.stderr
    said = done.stdout.splitlines()
    assert said[:2] == ["library: False", "command: True"]
    assert ("run at the end" in said) is runs


def test_a_command_ends_with_its_objects_frozen_and_its_garbage_finalized(tmp_path: Path) -> None:
    """A command's end does not walk every object polars and pyarrow made (frozen, the
    interpreter's last collections pass over them), and what was garbage is still
    collected first: a finalizer of an unreachable cycle runs, as at any exit."""
    marker = tmp_path / "marker"
    marker.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", ENDING, str(marker)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("demo ")
    assert marker.read_text() == "finalized frozen True"
