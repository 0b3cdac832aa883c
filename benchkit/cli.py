"""The `benchkit` command: parse, call one library function, print."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

import benchkit
from benchkit.arms import ArmError
from benchkit.proc import Terminated, interrupts
from benchkit.records import Run, run_row
from benchkit.spec import BenchError
from benchkit.tables import line, table, tests_block

BAD_INPUT = 2
INTERRUPTED = 130

store_option = click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=None,
    help="Store folder [default: $BENCHKIT_STORE or data/runs].",
)


def _fail(message: str) -> None:
    click.echo(f"benchkit: {message}", err=True)
    sys.exit(BAD_INPUT)


def _print_runs(rows: Sequence[Mapping[str, Any]]) -> None:
    click.echo(table(rows))
    block = tests_block(rows)
    if block:
        click.echo("")
        click.echo(block)


def _var(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            _fail(f"--var takes NAME=VALUE, not {value!r}")
        pairs.append((name, text))
    return tuple(pairs)


@click.group()
@click.version_option(benchkit.__version__, prog_name="benchkit")
def main() -> None:
    """Rerun AI coding tools on benchmark repositories and keep every figure."""
    warnings.simplefilter("always")
    warnings.formatwarning = lambda message, *_args, **_kw: f"benchkit: warning: {message}\n"


@main.command()
@click.option("--bench", default="demo", show_default=True, help="Bundled name or path.")
@click.option(
    "--arm",
    "arms",
    multiple=True,
    default=["noop"],
    show_default=True,
    help="noop, human, replay:<name or path>, an arm file's name or path; repeatable.",
)
@click.option("--executor", default="", help="Executor label [default: the arm's own].")
@click.option("--model", default="", help="Model name handed to the arm.")
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
@store_option
@click.option("--keep", is_flag=True, help="Keep each pilot's worktree.")
def pilot(
    bench: str,
    arms: tuple[str, ...],
    executor: str,
    model: str,
    max_cost: float | None,
    trials: int,
    flake_reruns: int,
    arm_vars: tuple[str, ...],
    store: Path | None,
    keep: bool,
) -> None:
    """Run pilots, record them, and print one line per run and a table."""

    def progress(label: str, stage: str) -> None:
        if stage == "prepare":
            click.echo(f"{label}:", nl=False, err=True)
        click.echo(f" {stage}", nl=stage == "cleanup", err=True)

    def done(run: Run) -> None:
        click.echo(line(run_row(run)))
        if run.worktree:
            click.echo(f"  worktree kept: {run.worktree}", err=True)
        if run.status != "ok":
            click.echo(f"  {run.failure_detail}; logs: {run.artifacts}/logs", err=True)

    try:
        with interrupts():
            runs = benchkit.pilot(
                bench,
                arm=list(arms),
                executor=executor,
                model=model,
                max_cost=max_cost,
                trials=trials,
                flake_reruns=flake_reruns,
                arm_vars=_var(arm_vars),
                store=store,
                keep=keep,
                on_stage=progress,
                on_run=done,
            )
    except (BenchError, ArmError) as exc:
        _fail(str(exc))
        return
    except KeyboardInterrupt as exc:
        click.echo("benchkit: interrupted; the run in progress was recorded", err=True)
        sys.exit(exc.exit_code if isinstance(exc, Terminated) else INTERRUPTED)
    click.echo("")
    _print_runs([run_row(r) for r in runs])
    if any(r.status != "ok" for r in runs):
        sys.exit(1)


@main.command()
@store_option
@click.option("--bench", default=None, help="Only this bench.")
def runs(store: Path | None, bench: str | None) -> None:
    """List the runs in the store (marking those a killed benchkit left as crashed)."""
    benchkit.recover(store)
    frame = benchkit.runs(store)
    if bench is not None:
        frame = frame.filter(frame["bench"] == bench)
    if frame.is_empty():
        click.echo("no runs", err=True)
        return
    _print_runs(frame.to_dicts())


@main.command()
def benches() -> None:
    """List the bundled benches."""
    for bench in benchkit.benches():
        click.echo(f"{bench.name:<12} {bench.folder}  {bench.file.description}")


@main.command()
def arms() -> None:
    """List the built-in arms and the bundled arm files."""
    for name, what in benchkit.arms().items():
        click.echo(f"{name:<18} {what}")


if __name__ == "__main__":
    main()
