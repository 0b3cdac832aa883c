"""The commands that run pilots: `pilot` (a matrix from its flags), `run` (a matrix
from an experiment file) and `rerun` (a recorded pilot's spec again), with the one
printer of a matrix's runs as they end."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import benchkit
from benchkit.analysis.text import SPEC_COLUMNS, line, printable
from benchkit.cli.options import (
    pairs,
    print_runs,
    read_store,
    sandbox_option,
    stopped_by_interrupts,
    store_option,
)
from benchkit.errors import BenchkitError
from benchkit.records import DEFAULT_SET, LAUNCHERS, RERUNS, LauncherName

if TYPE_CHECKING:
    from benchkit.records import Run


@click.command()
@click.option(
    "--bench",
    "benches",
    multiple=True,
    default=["demo"],
    show_default=True,
    help="Bundled name or path; repeatable.",
)
@click.option(
    "--arm",
    "arms",
    multiple=True,
    default=["noop"],
    show_default=True,
    help="noop, human, replay:<name or path>, an arm file's name or path; repeatable.",
)
@click.option(
    "--executor",
    "executors",
    multiple=True,
    help="Executor label [default: the arm's own]; repeatable.",
)
@click.option("--model", "models", multiple=True, help="Model name handed to the arm; repeatable.")
@click.option("--max-cost", type=float, default=None, help="Budget cap in USD.")
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--flake-reruns",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Reruns alone of each new failing test file.",
)
@click.option("--var", "arm_vars", multiple=True, help="NAME=VALUE for an arm file's [vars].")
@click.option("--checks", default="", help="Only these checks, comma-separated [default: all].")
@store_option
@click.option("--keep", is_flag=True, help="Keep each pilot's worktree.")
@click.option(
    "--refresh-baseline", is_flag=True, help="Run the checks at base again, not from the cache."
)
@click.option(
    "--set",
    "run_set",
    default=DEFAULT_SET,
    show_default=True,
    help="The run set: units it holds already are not run again.",
)
@click.option("--new-set", is_flag=True, help="Run the matrix in a new set (NAME-2, ...).")
@click.option(
    "--retry-failed", is_flag=True, help="Run again the units whose run failed, retryably."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Pilots at a time, each in a worker process (or Ray CPUs, with --launcher ray).",
)
@click.option(
    "--launcher",
    type=click.Choice(LAUNCHERS),
    default=None,
    help="serial, processes or ray [default: serial, processes with --jobs > 1].",
)
@click.option("--ray-address", default=None, help="The Ray cluster [default: a local one].")
@sandbox_option
@click.option("--quiet", is_flag=True, help="No progress display.")
def pilot(
    benches: tuple[str, ...],
    arms: tuple[str, ...],
    executors: tuple[str, ...],
    models: tuple[str, ...],
    max_cost: float | None,
    trials: int,
    flake_reruns: int,
    arm_vars: tuple[str, ...],
    checks: str,
    store: Path | None,
    keep: bool,
    refresh_baseline: bool,
    run_set: str,
    new_set: bool,
    retry_failed: bool,
    jobs: int,
    launcher: LauncherName | None,
    ray_address: str | None,
    sandbox: str,
    quiet: bool,
) -> None:
    """Run pilots, record them, and print one line per run and a table. Several
    benches, arms, executors and models run as a matrix: every one with every other,
    times --trials, in a run set that runs each unit once."""
    run_matrix(
        dict(
            bench=list(benches),
            arm=list(arms),
            executor=list(executors),
            model=list(models),
            max_cost=max_cost,
            trials=trials,
            flake_reruns=flake_reruns,
            arm_vars=pairs("--var", arm_vars),
            checks=[c for c in checks.split(",") if c],
            run_set=run_set,
            new_set=new_set,
            retry_failed=retry_failed,
            jobs=jobs,
            launcher=launcher,
            ray_address=ray_address,
            sandbox=sandbox,
            keep=keep,
            refresh_baseline=refresh_baseline,
        ),
        store,
        quiet,
    )


@click.command(name="run")
@click.argument("experiment", type=click.Path(path_type=Path))
@click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=None,
    help="Store folder [default: the file's `store`, $BENCHKIT_STORE or data/runs].",
)
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="[default: the file's]")
@click.option("--launcher", type=click.Choice(LAUNCHERS), default=None)
@click.option("--ray-address", default=None)
@click.option("--new-set", is_flag=True, help="Run the matrix in a new set (NAME-2, ...).")
@click.option("--retry-failed", is_flag=True, help="Run again the units that failed, retryably.")
@click.option("--keep", is_flag=True, help="Keep each pilot's worktree.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def run_file(
    experiment: Path,
    store: Path | None,
    jobs: int | None,
    launcher: LauncherName | None,
    ray_address: str | None,
    new_set: bool,
    retry_failed: bool,
    keep: bool,
    quiet: bool,
) -> None:
    """Run the matrix of an experiment file (experiment.toml) in its run set: what
    the set holds already is not run again."""
    from benchkit.bench.experiment_file import experiment as load_experiment
    from benchkit.workspace.sandbox import choices

    matrix = load_experiment(experiment, {"launcher": LAUNCHERS, "sandbox": choices()})
    given = matrix.pop("store")
    for name, value in (("jobs", jobs), ("launcher", launcher), ("ray_address", ray_address)):
        if value is not None:
            matrix[name] = value
    matrix.update(new_set=new_set, retry_failed=retry_failed, keep=keep)
    run_matrix(matrix, store or (Path(str(given)) if given else None), quiet)


@click.command()
@click.argument("run_id")
@click.option(
    "--set",
    "run_set",
    default=RERUNS,
    show_default=True,
    help="The run set the new run belongs to.",
)
@store_option
@sandbox_option
@click.option("--keep", is_flag=True, help="Keep the pilot's worktree.")
def rerun(run_id: str, run_set: str, store: Path | None, sandbox: str, keep: bool) -> None:
    """Run a recorded pilot's spec again, as a new run that names the one it reruns."""
    from benchkit.run.events import Event, Recorded
    from benchkit.run.progress import Terminal

    folder = read_store(store)

    def printer(event: Event) -> None:
        if isinstance(event, Recorded):
            _said(event.run, ())

    terminal = Terminal(sys.stderr, printer)
    try:
        with stopped_by_interrupts("interrupted; the run in progress was recorded"):
            run = benchkit.rerun(
                run_id, store=folder, run_set=run_set, sandbox=sandbox, keep=keep, events=terminal
            )
    finally:
        terminal.close()
    from benchkit.store.query import pick_runs

    click.echo("")
    print_runs(pick_runs(benchkit.runs(folder), [run_id, run.run_id]).to_dicts())
    if run.status != "ok":
        sys.exit(1)


def run_matrix(matrix: dict[str, Any], store: Path | None, quiet: bool) -> None:
    """`benchkit.pilot(**matrix)`, with a line per run as it ends (naming the bench,
    executor or model where the matrix has several), the progress on stderr (but with
    `quiet`), then the table of the matrix's runs: those it ran and those its set held
    already."""
    show = [c for c in SPEC_COLUMNS if len(set(matrix[c])) > 1]  # what tells the runs apart
    from benchkit.run.events import Event, Planned, Recorded
    from benchkit.run.progress import Terminal
    from benchkit.store.rows import run_row  # polars: loaded by the commands that write

    held: list[str] = []

    def printer(event: Event) -> None:
        if isinstance(event, Planned):
            held[:] = event.recorded
            if event.recorded or event.running:
                busy = f", {event.running} at work elsewhere" if event.running else ""
                click.echo(
                    f"set {event.run_set}: {len(event.recorded)} of the matrix's pilots "
                    f"recorded already{busy}; {event.pilots} to run",
                    err=True,
                )
        elif isinstance(event, Recorded):
            _said(event.run, show)

    terminal = None if quiet else Terminal(sys.stderr, printer)
    try:
        since = datetime.now(UTC)
        with stopped_by_interrupts(lambda: f"interrupted; {_recorded_since(store, since)}"):
            runs = benchkit.pilot(**matrix, store=store, progress=False, events=terminal or printer)
    finally:
        if terminal is not None:
            terminal.close()
    rows = [run_row(r) for r in runs]
    if held:
        from benchkit.store.query import pick_runs

        rows = pick_runs(benchkit.runs(store), held).to_dicts() + rows
    if not rows:
        return
    click.echo("")
    print_runs(rows)
    unjudged = [r for r in rows if r.get("test_verdict") == "error"]
    if unjudged:  # the tests block above says why, run by run
        click.echo(
            f"\n{len(unjudged)} of {len(rows)} runs could not be judged (gate error): "
            f"{unjudged[0].get('test_reasons')}"
        )
    if unjudged or any(r["status"] != "ok" for r in rows):
        sys.exit(1)


def _recorded_since(store: Path | None, since: datetime) -> str:
    """What the store holds of the pilots begun since `since` (this command's), as an
    interrupted command says it: `2 runs recorded: 1 ok, 1 interrupted`. A pilot at
    work when the signal came is recorded as interrupted, or as it ended when it was
    already scoring or recording."""
    import polars as pl

    try:
        runs = benchkit.runs(store)
    except BenchkitError as exc:
        return f"what was recorded could not be read ({exc})"
    if runs.is_empty():
        return "no run was recorded"
    statuses = Counter(runs.filter(pl.col("started_at") >= since)["status"].to_list())
    total = sum(statuses.values())
    if not total:
        return "no run was recorded"
    each = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    return f"{total} run{'s' * (total != 1)} recorded: {each}"


def _said(run: Run, show: Sequence[str]) -> None:
    """A finished run: its line on stdout, what went wrong on stderr."""
    from benchkit.store.rows import run_row

    click.echo(line(run_row(run), show))
    if run.worktree:
        click.echo(f"  worktree kept: {run.worktree}", err=True)
    if run.status != "ok":
        logs = Path(run.artifacts, "logs")
        where = f"; logs: {logs}" if logs.is_dir() else ""
        click.echo(f"  {run.failure_detail}{where}", err=True)
    for warning in run.warnings:
        click.echo(f"  warning: {warning}", err=True)
    if run.ignored_written:
        count = run.ignored_written_count or len(run.ignored_written)
        first = ", ".join(map(printable, run.ignored_written[:3])) + (", ..." if count > 3 else "")
        click.echo(f"  not checked: {count} ignored file(s) the arm wrote ({first})", err=True)
    for check in run.checks:
        if check.phase == "after" and check.status != "ok" and check.note:
            click.echo(f"  {check.check}: {check.note}", err=True)
