"""Check commands: placeholders, statuses, counts, and the process group on timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchkit.bench import bench_file
from benchkit.gate.junit import parse_report
from benchkit.gate.runners import RUNNERS
from benchkit.workspace import proc
from benchkit.workspace.checks import count_from_output, read_reports, status_of
from benchkit.workspace.commands import substitute
from benchkit.workspace.sandbox import Bubblewrap
from tests.helpers import PATIENCE_S, needs_bwrap


def test_string_commands_get_shell_quoted_values(tmp_path: Path) -> None:
    nasty = "a b; touch pwned $(touch pwned2) 'q'\nnext"
    command = substitute("printf '%s|' {files} > out.txt", {"files": [nasty, "plain"]})
    assert isinstance(command, str)
    subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, check=True)
    assert (tmp_path / "out.txt").read_text() == f"{nasty}|plain|"
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


def test_list_commands_get_whole_arguments() -> None:
    argv = substitute(
        ["pytest", "--junitxml={report}", "{files}"],
        {"report": "r 1.xml", "files": ["a.py", "b c.py"]},
    )
    assert argv == ["pytest", "--junitxml=r 1.xml", "a.py", "b c.py"]


def _finished(
    code: int | None, *, timed_out: bool = False, not_found: bool = False
) -> proc.Finished:
    return proc.Finished(exit_code=code, timed_out=timed_out, not_found=not_found, duration_s=0.1)


def test_statuses() -> None:
    assert status_of(_finished(0), "") == ("ok", None)
    assert status_of(_finished(1), "E501") == ("fail", None)
    assert status_of(_finished(None, timed_out=True), "") == ("timeout", None)
    assert status_of(_finished(127, not_found=True), "") == ("missing", "command not found")
    out = "/venv/bin/python3: No module named mypy\n"
    assert status_of(_finished(1), out) == ("missing", "no module named mypy")
    # an import error inside the tool's own run is a failure, not a missing tool
    assert status_of(_finished(1), "ModuleNotFoundError: No module named 'tally'\n")[0] == "fail"


def test_counts_from_output() -> None:
    regex = r"Found (\d+) errors? in"
    assert count_from_output(regex, "x\nFound 3 errors in 2 files (checked 8)\n", "fail") == 3
    assert count_from_output(regex, "Success: no issues found\n", "ok") == 0
    assert count_from_output(regex, "Traceback ...\n", "fail") is None  # unreadable: no count


def test_a_timeout_stops_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    script = f"sh -c 'echo $$ > {marker}; sleep 3600' & sleep 3600"
    started = time.monotonic()
    done = proc.run(
        script,
        cwd=tmp_path,
        env=dict(os.environ),
        log_path=tmp_path / "log",
        timeout_s=0.5,
        grace_s=2,
    )
    assert done.timed_out
    assert time.monotonic() - started < PATIENCE_S  # long before the sleeps' end
    grandchild = int(marker.read_text())
    time.sleep(0.1)
    assert (
        not Path(f"/proc/{grandchild}").exists()
        or "Z" in Path(f"/proc/{grandchild}/stat").read_text().split()[2]
    )
    assert "timed out after 0.5 s" in (tmp_path / "log").read_text()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no pidfd"])
def test_a_short_command_that_closed_its_output_is_waited_for_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    """`capture` reads a command's output to its end, then waits for the command: to
    its exit, its status kept (woken by its end, not by polling), and no longer than
    its timeout, its group then stopped. Without `pidfd_open` (an old kernel, a
    seccomp profile that denies it, no free descriptor), it waits as Popen waits."""

    def denied(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    if not pidfd:
        monkeypatch.setattr(os, "pidfd_open", denied)
    ended = tmp_path / "ended"
    said = proc.capture(["sh", "-c", f"echo said; exec >&- 2>&-; sleep 0.2; touch {ended}"])
    assert said == "said\n" and ended.exists()  # not before it exited
    with pytest.raises(proc.ProcError, match="exited 3"):
        proc.capture(["sh", "-c", "exec >&- 2>&-; sleep 0.2; exit 3"])
    started = time.monotonic()
    with pytest.raises(proc.ProcError, match=r"timed out after 0\.3 s"):
        proc.capture(["sh", "-c", f"exec >&- 2>&-; sleep {PATIENCE_S}"], timeout_s=0.3)
    assert time.monotonic() - started < PATIENCE_S  # long before the sleep's end


def _gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.parametrize(
    "boxed", [pytest.param(False, id="as-is"), pytest.param(True, id="bwrap", marks=needs_bwrap)]
)
def test_what_a_command_leaves_running_is_stopped_when_it_exits(
    tmp_path: Path, boxed: bool
) -> None:
    """A command that exits leaving a process behind: benchkit stops it (without a
    sandbox, found in the command's group; in bubblewrap, the kernel ends the
    sandbox's pid namespace with it), and the command's duration is its own."""
    marker = tmp_path / "left.pid"
    box = Bubblewrap(tree=tmp_path, home=tmp_path / "h", tmp=tmp_path / "t")
    box.make()
    done = proc.run(
        f"sh -c 'echo $$ > {marker}; exec sleep 3600' & sleep 0.3; echo done",
        cwd=tmp_path,
        env=dict(os.environ),
        log_path=tmp_path / "log",
        timeout_s=30,
        grace_s=2,
        sandbox=box if boxed else None,
    )
    assert done.exit_code == 0 and not done.timed_out
    assert 0.3 <= done.duration_s < PATIENCE_S  # its own, not what it left's (an hour)
    assert (tmp_path / "log").read_text().strip().endswith("done")
    if boxed:  # its pid in the sandbox's namespace: find it by its command line
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _sleeps(p, marker)]
        assert left == [] or all(_gone(int(p.name)) for p in left)
    else:
        assert _gone(int(marker.read_text()))


@needs_bwrap
def test_a_program_named_by_its_path_in_a_bound_folder_starts(tmp_path: Path) -> None:
    """`node_modules/.bin/tool` in a tree whose node_modules the sandbox binds from the
    cache: benchkit looks for it where the host has it, and the sandbox runs it."""
    cached = tmp_path / "cache" / "node_modules"
    (cached / ".bin").mkdir(parents=True)
    tool = cached / ".bin" / "tool"
    tool.write_text("#!/bin/sh\necho ran from the cache\n")
    tool.chmod(0o755)
    tree = tmp_path / "tree"
    (tree / "node_modules").mkdir(parents=True)  # where it is bound: empty on the host
    box = Bubblewrap(tree=tree, home=tmp_path / "h", tmp=tmp_path / "t").with_read_only(
        ((cached, tree / "node_modules"),)
    )
    box.make()
    done = proc.run(
        ["node_modules/.bin/tool"],
        cwd=tree,
        env=dict(os.environ),
        log_path=tmp_path / "log",
        timeout_s=30,
        sandbox=box,
    )
    assert (done.exit_code, done.not_found) == (0, False)
    assert (tmp_path / "log").read_text() == "ran from the cache\n"


def _sleeps(proc_dir: Path, marker: Path) -> bool:
    try:
        return (proc_dir / "cwd").resolve() == marker.parent and (
            (proc_dir / "cmdline").read_bytes().startswith(b"sleep\x003600")
        )
    except OSError:
        return False


def test_pytest_reports_map_to_files(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text(
        "import pytest\n\ndef test_ok():\n    pass\n\ndef test_bad():\n    assert 0\n\n"
        "class TestGroup:\n    def test_in_class(self):\n        pass\n\n"
        "@pytest.mark." + "skip(reason='later')\ndef test_later():\n    pass\n"
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for family in ("xunit1", "xunit2"):
        report = tmp_path / f"{family}.xml"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={report}",
                "-o",
                f"junit_family={family}",
                "tests",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
        )
        cases = parse_report(report.read_text())
        assert {c.file for c in cases} == {"tests/test_a.py"}, family
        assert sorted((c.name, c.outcome) for c in cases) == [
            ("test_bad", "failed"),
            ("test_in_class", "passed"),
            ("test_later", "skipped"),
            ("test_ok", "passed"),
        ]


VITEST_JUNIT = """<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="2" failures="1" errors="0" time="0.01">
  <testsuite name="test/a.test.js" tests="2" failures="1" errors="0" skipped="0" time="0.01">
    <testcase classname="test/a.test.js" name="a &gt; adds" time="0.001"></testcase>
    <testcase classname="test/a.test.js" name="a &gt; fails" time="0.001">
      <failure message="2 is not 1 in {tree}/packages/{p}/src/a.js" type="Error">x</failure>
    </testcase>
  </testsuite>
</testsuites>
"""


def test_a_workspace_s_reports_are_merged_each_file_named_from_the_tree(tmp_path: Path) -> None:
    """One report per package (a glob): each read with its files from its package's
    folder, named from the tree, messages too; an unreadable one names itself from the
    tree; none at all names the glob."""
    tests = bench_file.Tests(report="packages/*/.bench/junit.xml", runner="vitest")
    vitest = RUNNERS["vitest"]
    assert read_reports(tmp_path, tests, vitest) == (
        None,
        "packages/*/.bench/junit.xml: no report written",
    )
    for name in ("calc", "cart"):
        (tmp_path / "packages" / name / ".bench").mkdir(parents=True)
        (tmp_path / "packages" / name / "package.json").write_text("{}")
        report = tmp_path / "packages" / name / ".bench" / "junit.xml"
        report.write_text(VITEST_JUNIT.format(tree=tmp_path, p=name))
    cases, problem = read_reports(tmp_path, tests, vitest)
    assert problem is None and cases is not None
    assert [(c.file, c.name, c.outcome) for c in cases] == [
        ("packages/calc/test/a.test.js", "a > adds", "passed"),
        ("packages/calc/test/a.test.js", "a > fails", "failed"),
        ("packages/cart/test/a.test.js", "a > adds", "passed"),
        ("packages/cart/test/a.test.js", "a > fails", "failed"),
    ]
    assert [c.message for c in cases if c.message] == [
        "2 is not 1 in packages/calc/src/a.js",
        "2 is not 1 in packages/cart/src/a.js",
    ]
    (tmp_path / "packages" / "cart" / ".bench" / "junit.xml").write_text("<testsuites><oops")
    cases, problem = read_reports(tmp_path, tests, vitest)
    assert cases is None and problem is not None
    assert problem.startswith("packages/cart/.bench/junit.xml: "), problem
