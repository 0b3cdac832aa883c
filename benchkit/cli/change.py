"""The maintainer's commands on a repository: `ab` (one test command at two refs) and
`probe` (which tests catch a change reverted)."""

from __future__ import annotations

from pathlib import Path

import click

import benchkit
from benchkit.cli.options import bench_env_option, store_option
from benchkit.errors import UsageError


@click.command(name="ab")
@click.option("--base", required=True, help="The ref before the change.")
@click.option("--head", required=True, help="The ref after the change.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--factor",
    type=click.FloatRange(min=1.0),
    default=1.1,
    show_default=True,
    help="A duration change is called only past this ratio, with repeats apart.",
)
@click.option(
    "--fail-on-flip", is_flag=True, help="Exit 1 when a test passing at base fails at head."
)
@click.option("--repo", type=click.Path(path_type=Path), default=Path("."), show_default=True)
@bench_env_option
@store_option
@click.argument("command", nargs=-1, required=True)
def ab_(
    base: str,
    head: str,
    repeat: int,
    factor: float,
    fail_on_flip: bool,
    repo: Path,
    bench: str | None,
    store: Path | None,
    command: tuple[str, ...],
) -> None:
    """Run the identical test command at both refs: `benchkit ab --base A --head B -- CMD`."""
    from benchkit.change.testrun import report_path

    if fail_on_flip and report_path(command) is None:
        raise UsageError(
            "ab",
            "--fail-on-flip",
            "the command names no JUnit report ({report} or --junitxml PATH), "
            "so no test can be named as flipped",
        )
    result = benchkit.ab(
        base,
        head,
        list(command),
        repeat=repeat,
        repo=repo,
        store=store,
        bench=bench,
        factor=factor,
    )
    for side in ("base", "head"):
        python = result.runs[side][0].python or "no python found"
        click.echo(f"{side} {result.sha(side)}  python {python}")
    click.echo("")
    click.echo(result.to_markdown())
    unjudged = result.unjudged()
    if fail_on_flip and unjudged:
        for why in unjudged:
            click.echo(f"benchkit: {why}", err=True)
        raise SystemExit(1)
    broke = result.broke()
    if fail_on_flip and broke:
        names = ", ".join(f.test for f in broke)
        click.echo(
            f"benchkit: {len(broke)} test(s) passed at base and fail at head: {names}", err=True
        )
        raise SystemExit(1)


@click.command()
@click.option("--base", required=True, help="The ref before the change.")
@click.option("--head", required=True, help="The ref with the change and its tests.")
@click.option("--revert", multiple=True, help="A source file to restore to base (repeat).")
@click.option("--each", is_flag=True, help="Revert one file at a time.")
@click.option("--repo", type=click.Path(path_type=Path), default=Path("."), show_default=True)
@bench_env_option
@store_option
@click.argument("command", nargs=-1)
def probe(
    base: str,
    head: str,
    revert: tuple[str, ...],
    each: bool,
    repo: Path,
    bench: str | None,
    store: Path | None,
    command: tuple[str, ...],
) -> None:
    """Revert source files to base, keep the new tests, and see which tests catch it."""
    result = benchkit.probe(
        base,
        head,
        list(command) or None,
        revert=list(revert) or None,
        each=each,
        repo=repo,
        store=store,
        bench=bench,
    )
    click.echo(result.to_markdown())
    if result.unjudged:
        click.echo(f"benchkit: the tests at head cannot be judged {result.unjudged}", err=True)
        raise SystemExit(1)
