"""Checks: a bench's commands run on a tree, each with a status, a count and a log.

A check runs with the tree as its working directory, in the pilot's own instance of
the bench's environment (its `bin` first on PATH, the tree's code importable as the
bench says), with an allow-listed environment: nothing of the caller's PYTHONPATH,
of benchkit's virtualenv or of git's settings leaks in. The bench's own `env` applies
on top.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchkit.bench.bench_file import Bench, Check, Tests
from benchkit.gate.junit import CaseResult, ReportError, failed_count, in_tree, parse_report
from benchkit.gate.runners import Runner, runner_of
from benchkit.gate.summary import first_error
from benchkit.gate.verdict import TestRun, run_problem
from benchkit.records import CheckResult, CheckStatus, Phase
from benchkit.workspace import proc
from benchkit.workspace.commands import allowed_env, substitute, words
from benchkit.workspace.environment import Instance
from benchkit.workspace.inside import stays_in
from benchkit.workspace.sandbox import Sandbox

# `python -m tool` prints this when the tool is not installed.
_NO_MODULE = re.compile(r"^\S*python[\d.]*: No module named (\S+)\s*$", re.MULTILINE)


def check_env(bench: Bench, instance: Instance) -> dict[str, str]:
    env = allowed_env() | instance.variables()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for name, value in bench.file.env.items():
        env[name] = value.replace("{worktree}", str(instance.tree))
    return env


def status_of(finished: proc.Finished, output: str) -> tuple[CheckStatus, str | None]:
    """The status of a finished command, and a note on why when it is not plain."""
    if finished.timed_out:
        return "timeout", None
    if finished.not_found:
        return "missing", "command not found"
    missing = _NO_MODULE.search(output)
    if finished.exit_code != 0 and missing:
        return "missing", f"no module named {missing.group(1)}"
    return ("ok" if finished.exit_code == 0 else "fail"), None


def count_from_output(regex: str, output: str, status: CheckStatus) -> int | None:
    """The first group of the last match; 0 for a passing check that printed none."""
    matches = re.findall(regex, output, re.MULTILINE)
    if matches:
        last = matches[-1]
        return int(last[0] if isinstance(last, tuple) else last)
    return 0 if status == "ok" else None


def read_report(
    report: Path,
    runner: Runner | None,
    root: Path | None = None,
    log: str = "",
    *,
    tree: Path | None = None,
) -> tuple[tuple[CaseResult, ...] | None, str | None]:
    """The cases of a test report (JUnit, or the runner's own JSON, its paths relative
    to `root`; test ids by the runner's rule), and what is wrong with it: a report that
    is missing, empty or unreadable has no cases; one that names no test has zero. A
    file the runner's `log` says failed to load, and the report leaves out, is added as
    an `error` case. Pilots, `ab` and `probe` all read reports here. What is wrong
    names the report by its path in the `tree` (by default `root`); with a `tree` of
    which `root` is a package's folder, each file is named from the tree too."""
    tree = tree or root
    name = _named(report, tree)
    if tree is not None and not stays_in(tree, report):
        return None, f"{name}: a link out of the tree, not read"
    if not report.exists():
        return None, f"{name} not written"
    if report.is_dir():
        return None, f"{name}: a folder, not a test report"
    text = report.read_text(encoding="utf-8", errors="replace")
    try:
        cases = runner.read_report(text, root) if runner else parse_report(text)
    except ReportError as exc:
        return None, f"{name}: {exc}"
    if not cases:
        return (), f"{name} names no test"
    found = tuple(cases)
    found = runner.with_unloaded(found, log) if runner else found
    if root is None or tree is None:
        return found, None
    inside = root.relative_to(tree)
    if inside.parts:
        found = tuple(replace(c, file=str(inside / c.file)) if c.file else c for c in found)
    return in_tree(found, [str(tree), str(tree.resolve())]), None


def read_reports(
    tree: Path, tests: Tests, runner: Runner | None, log: str = ""
) -> tuple[tuple[CaseResult, ...] | None, str | None]:
    """The cases of the bench's test report, as `read_report`; a report whose path is a
    glob (`packages/*/.bench/junit.xml`) is one per package of a workspace, each read
    with the files it names from its package's folder: their cases merged, each file
    named from the tree (`packages/b/test/x.test.ts`). An unreadable report is the
    whole run's problem; a package's that names no test is left out."""
    if not tests.in_packages:
        return read_report(tree / tests.report, runner, tree, log)
    found = sorted(p for p in tree.glob(tests.report) if not p.is_dir())
    if not found:
        return None, f"{tests.report}: no report written"
    merged: list[CaseResult] = []
    for report in found:  # the log is every package's: not read for files left out
        cases, problem = read_report(report, runner, package_folder(report.parent, tree), tree=tree)
        if cases is None:
            return None, problem
        merged += cases
    if not merged:
        return (), f"{tests.report} names no test"
    return tuple(merged), None


def package_folder(folder: Path, tree: Path) -> Path:
    """The package a folder of the tree is in: the nearest folder, it or above it in the
    tree, that holds a package.json; else the tree."""
    for candidate in (folder, *folder.parents):
        if candidate == tree or not candidate.is_relative_to(tree):
            break
        if (candidate / "package.json").is_file():
            return candidate
    return tree


def _named(report: Path, root: Path | None) -> str:
    """A report's path as the bench gives it: in the tree, else as it is."""
    if root is not None and report.is_relative_to(root):
        return str(report.relative_to(root))
    return str(report) if root is not None else report.name


def could_not_run(cases: tuple[CaseResult, ...]) -> str | None:
    """A note on the tests that could not run (an import error, say), or None."""
    errors = [c for c in cases if c.outcome == "error"]
    if not errors:
        return None
    first = errors[0]
    return f"{len(errors)} could not run: {first.file or first.name}: {first.message or 'error'}"


@dataclass(frozen=True, kw_only=True)
class CheckRun:
    """A check's result and, for the bench's test check, what the gate needs of it."""

    result: CheckResult
    tests: TestRun | None = None


@dataclass(frozen=True, kw_only=True)
class Confinement:
    """Where a pilot's checks run (None: as they are) and the secret values they may
    print (the arm's: a check may print a file the arm wrote), redacted from logs."""

    sandbox: Sandbox | None = None
    secrets: Sequence[str] = ()


OPEN = Confinement()


def _run(
    command: str | list[str],
    *,
    bench: Bench,
    instance: Instance,
    log_path: Path,
    timeout_s: float,
    confinement: Confinement,
    cwd: Path | None = None,
) -> tuple[proc.Finished, str]:
    log_path.unlink(missing_ok=True)
    sandbox = confinement.sandbox
    finished = proc.run(
        command,
        cwd=cwd or instance.tree,
        env=check_env(bench, instance),
        log_path=log_path,
        timeout_s=timeout_s,
        secrets=confinement.secrets,
        sandbox=sandbox.with_network(bench.file.sandbox.network) if sandbox else None,
    )
    return finished, log_path.read_text(encoding="utf-8", errors="replace")


def _report_word(tree: Path, tests: Tests | None) -> str:
    """What `{report}` stands for in a check's command: the report's path, or, for one
    report per package, its path in each package (the packages' runners resolve it)."""
    if tests is None:
        return ""
    return tests.report_name if tests.in_packages else str(tree / tests.report)


def test_run_of(
    finished: proc.Finished,
    output: str,
    tests: Tests | Path,
    named: str | None = None,
    *,
    root: Path,
    command: Sequence[str] = (),
    tree: Path | None = None,
) -> TestRun:
    """What the gate needs of a test command that finished in `root`: its report's
    cases (the bench's, or a report file's), read by its runner (the one named, else
    the one whose summary the output holds, else the one the command's words name),
    that runner's own closing summary, and, when no test is left to judge, what it
    said went wrong. With a `tree` (`root` a package's folder in it), files are named
    from the tree."""
    runner = runner_of(named, output, command)
    found: tuple[tuple[CaseResult, ...] | None, str | None] = (None, None)
    if not finished.not_found:
        found = (
            read_report(tests, runner, root, output, tree=tree)
            if isinstance(tests, Path)
            else read_reports(root, tests, runner, output)
        )
    cases, problem = found
    said = None
    if not cases and not finished.not_found:
        said = runner.error(output) if runner else first_error(output)
    return TestRun(
        cases=cases,
        problem=problem,
        exit_code=finished.exit_code,
        timed_out=finished.timed_out,
        missing=finished.not_found,
        summary=runner.read_summary(output) if runner else None,
        runner=runner.name if runner else None,
        error=said,
    )


def _stale_gone(report: Path, tree: Path) -> None:
    """A report left by an earlier run removed: it must not pass for a new one (a
    folder where the report goes is left, and read as no report). Nothing is removed
    outside the tree: a report path that leads out through a link is left alone."""
    if stays_in(tree, report) and not report.is_dir():
        report.unlink(missing_ok=True)


def run_check(
    check: Check,
    *,
    phase: Phase,
    bench: Bench,
    instance: Instance,
    logs: Path,
    confinement: Confinement = OPEN,
) -> CheckRun:
    """Run one check on a tree, in its instance of the environment; read its status and
    count."""
    worktree = instance.tree
    tests = bench.file.tests
    by_report = tests is not None and (
        (check.count is not None and check.count.junit) or tests.check == check.name
    )
    if tests is not None and by_report:
        for stale in worktree.glob(tests.report) if tests.in_packages else [tests.report]:
            _stale_gone(worktree / stale, worktree)
    values = {"worktree": str(worktree), "report": _report_word(worktree, tests)}
    finished, output = _run(
        substitute(check.command, values),
        bench=bench,
        instance=instance,
        log_path=logs / f"{phase}-{check.name}.log",
        timeout_s=check.timeout,
        confinement=confinement,
    )
    status, note = status_of(finished, output)
    count: int | None = None
    named = tests.runner if tests else None
    test_run = (
        test_run_of(finished, output, tests, named, root=worktree, command=words(check.command))
        if by_report and tests
        else None
    )
    if check.count is not None and check.count.regex is not None:
        count = count_from_output(check.count.regex, output, status)
    elif test_run is not None and status in ("ok", "fail"):
        if not test_run.cases:
            status, note = "fail", test_run.problem  # no report or no test: no pass
        else:
            note = could_not_run(test_run.cases)
            if check.count is not None and check.count.junit:
                count = failed_count(test_run.cases)
    result = CheckResult(
        check=check.name,
        phase=phase,
        status=status,
        exit_code=finished.exit_code,
        duration_s=round(finished.duration_s, 3),
        count=count,
        note=note,
        log_path=str(logs / f"{phase}-{check.name}.log"),
        problem=run_problem(test_run) if test_run else None,
    )
    return CheckRun(result=result, tests=test_run)


def run_checks(
    bench: Bench, *, phase: Phase, instance: Instance, logs: Path, confinement: Confinement = OPEN
) -> tuple[CheckRun, ...]:
    return tuple(
        run_check(
            c, phase=phase, bench=bench, instance=instance, logs=logs, confinement=confinement
        )
        for c in bench.file.checks
    )


def run_alone(
    bench: Bench,
    *,
    instance: Instance,
    file: str,
    attempt: int,
    logs: Path,
    confinement: Confinement = OPEN,
) -> TestRun:
    """Run one test file alone with the bench's `alone` template."""
    worktree = instance.tree
    tests = bench.file.tests
    assert tests is not None
    package = worktree  # a workspace's file: by its own package's runner, in its folder
    if tests.in_packages:
        package = package_folder((worktree / file).parent, worktree)
    report = package / tests.report_name
    _stale_gone(report, worktree)
    test_check = next(c for c in bench.file.checks if c.name == tests.check)
    safe = file.replace("/", "_")
    given = str((worktree / file).relative_to(package))
    finished, output = _run(
        substitute(
            tests.alone_command,
            {"worktree": str(worktree), "report": str(report), "files": [given]},
        ),
        bench=bench,
        instance=instance,
        log_path=logs / f"rerun-{attempt}-{safe}.log",
        timeout_s=test_check.timeout,
        confinement=confinement,
        cwd=package,
    )
    if not finished.not_found and status_of(finished, output)[0] == "missing":
        finished = proc.Finished(
            exit_code=finished.exit_code,
            timed_out=False,
            not_found=True,
            duration_s=finished.duration_s,
        )
    alone = words(tests.alone_command)
    return test_run_of(
        finished, output, report, tests.runner, root=package, command=alone, tree=worktree
    )
