"""The commands about benches and arms: `benches`, `arms`, `bench validate`."""

from __future__ import annotations

from pathlib import Path

import click

import benchkit
from benchkit.cli.options import stopped_by_interrupts
from benchkit.errors import UsageError


@click.command()
def benches() -> None:
    """List the bundled benches."""
    for bench in benchkit.benches():
        click.echo(f"{bench.name:<12} {bench.folder}  {bench.file.description}")


@click.command()
def arms() -> None:
    """List the built-in arms and the bundled arm files, with what each arm file's
    tool needs on PATH and in the environment, and whether it is here."""
    from benchkit.arms.needs import arm_needs

    needs = arm_needs()
    for name, what in benchkit.list_arms().items():
        click.echo(f"{name:<18} {what}")
        if name in needs and (said := needs[name].said()):
            click.echo(f"{'':<18} {said}")


@click.command()
def prices() -> None:
    """List the price table a cost from tokens is computed with: US dollars per
    million tokens, by model (benchkit's, with the file BENCHKIT_PRICES names)."""
    from benchkit.bench.price_file import price_table

    table = price_table()
    width = max(len("model"), *map(len, table.models))
    click.echo("US dollars per million tokens; a cache price of - is the input's.")
    click.echo(
        f"{'model':<{width}} {'input':>8} {'cached':>8} {'cache write':>11} {'output':>8}  table"
    )
    for name, price in sorted(table.models.items()):
        cached, written = (
            "-" if v is None else f"{v:g}" for v in (price.cached_input, price.cache_write)
        )
        click.echo(
            f"{name:<{width}} {price.input:>8g} {cached:>8} {written:>11} {price.output:>8g}"
            f"  {table.dated[name]}"
        )


@click.group(name="bench")
def bench_group() -> None:
    """Benches: validate one against what its base and human reference really do."""


@bench_group.command(name="validate")
@click.argument("benches", nargs=-1, required=True, type=str, metavar="BENCH...")
@click.option("--reruns", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="The lock file (one bench)."
)
def bench_validate(benches: tuple[str, ...], reruns: int, out: Path | None) -> None:
    """Run the checks K times at base and with the human reference; write a lock file
    beside each bench (a task set's instances: each of them, an invalid one said)."""
    if out is not None and len(benches) > 1:
        raise UsageError("--out", str(out), "names the lock file of one bench, not of several")
    invalid = 0
    for bench in benches:
        with stopped_by_interrupts("interrupted; nothing written"):  # SIGTERM too
            found = benchkit.validate(bench, reruns=reruns, out=out)
        click.echo(found.summary())
        invalid += found.lock.invalid is not None
    if len(benches) > 1:
        click.echo(f"{len(benches) - invalid} of {len(benches)} benches valid")
