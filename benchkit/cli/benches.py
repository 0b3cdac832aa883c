"""The commands about benches and arms: `benches`, `arms`, `bench validate`."""

from __future__ import annotations

from pathlib import Path

import click

import benchkit
from benchkit.cli.options import stopped_by_interrupts


@click.command()
def benches() -> None:
    """List the bundled benches."""
    for bench in benchkit.benches():
        click.echo(f"{bench.name:<12} {bench.folder}  {bench.file.description}")


@click.command()
def arms() -> None:
    """List the built-in arms and the bundled arm files."""
    for name, what in benchkit.list_arms().items():
        click.echo(f"{name:<18} {what}")


@click.group(name="bench")
def bench_group() -> None:
    """Benches: validate one against what its base and human reference really do."""


@bench_group.command(name="validate")
@click.argument("bench", type=str)
@click.option("--reruns", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="The lock file.")
def bench_validate(bench: str, reruns: int, out: Path | None) -> None:
    """Run the checks K times at base and with the human reference; write a lock file."""
    with stopped_by_interrupts("interrupted; nothing written"):  # SIGTERM too: worktrees removed
        found = benchkit.validate(bench, reruns=reruns, out=out)
    click.echo(found.summary())
