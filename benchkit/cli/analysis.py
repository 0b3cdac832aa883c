"""The commands that compare runs and show them: `evidence`, `compare`, `budget`,
`plot`, `report`."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

import benchkit
from benchkit.cli.options import pairs, read_store, store_option
from benchkit.errors import UsageError


@click.command()
@click.argument("run_ids", nargs=-1)
@click.option("--label", "labels", multiple=True, help="NAME=RUN_ID: a row's label.")
@store_option
def evidence(run_ids: tuple[str, ...], labels: tuple[str, ...], store: Path | None) -> None:
    """Print the pilot table (GitHub markdown) of some runs, for a PR body."""
    from benchkit.store.query import pick_runs

    named = pairs("--label", labels)
    if not run_ids and not named:
        raise UsageError("RUN_IDS", "", "give at least one run id")
    folder = read_store(store)
    frame = pick_runs(benchkit.runs(folder), [*run_ids, *(i for _, i in named)])
    arms = frame["arm"].head(len(run_ids)).to_list()
    shown = [*arms, *(name for name, _ in named)]
    click.echo(str(benchkit.evidence(frame, labels=shown, store=folder)))


@click.command()
@click.option("--by", default="arm", show_default=True, help="Group columns, comma-separated.")
@click.option("--bench", default=None, help="Only this bench.")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="A metric (coverage, cost, pass, ...) or any numeric column; repeatable.",
)
@click.option("--sum", "sums", is_flag=True, help="Show each metric's sum beside its mean.")
@store_option
def compare(
    by: str, bench: str | None, metrics: tuple[str, ...], sums: bool, store: Path | None
) -> None:
    """Print means and 95% intervals per group (GitHub markdown)."""
    frame = benchkit.runs(read_store(store), bench=bench)
    keys = [k for k in by.split(",") if k]
    click.echo(benchkit.compare(frame, by=keys, metrics=metrics or None, sums=sums).to_markdown())


@click.command()
@click.argument("run_ids", nargs=-1)
@click.option("--cap", type=float, required=True, help="The cap in USD the sessions replay under.")
@click.option(
    "--rule",
    type=click.Choice(["mean", "last", "none"]),
    default="mean",
    show_default=True,
    help="mean: no session starts when what is left is below the mean cost so far; last: "
    "below the last one's; none: whenever anything is left (today's).",
)
@click.option("--bench", default=None, help="Only this bench.")
@click.option("--set", "run_set", default=None, help="Only this run set.")
@store_option
def budget(
    run_ids: tuple[str, ...],
    cap: float,
    rule: str,
    bench: str | None,
    run_set: str | None,
    store: Path | None,
) -> None:
    """Replay the runs' recorded sessions under a budget rule: what each would have
    started, spent and lost (GitHub markdown)."""
    from benchkit.analysis.budget import Rule
    from benchkit.store.query import pick_runs

    folder = read_store(store)
    frame = benchkit.runs(folder, bench=bench, run_set=run_set)
    if run_ids:
        frame = pick_runs(frame, list(run_ids))
    if frame.is_empty():
        raise UsageError("budget", "", "no runs to replay: the selection is empty")
    replayed = benchkit.budget(
        frame, cap=cap, rule=cast(Rule, rule), store=folder, latest=not run_ids
    )  # the runs named: as named, an earlier attempt too
    click.echo(str(replayed))


@click.command()
@click.argument("kind", type=click.Choice(["coverage-cost", "wall", "checks", "flaky"]))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Image file.")
@click.option("--bench", default=None, help="Only this bench.")
@click.option(
    "--by",
    default=None,
    help="Group by these columns, comma-separated (default: arm, and each of executor, "
    "model and bench that differs).",
)
@store_option
def plot(kind: str, out: Path, bench: str | None, by: str | None, store: Path | None) -> None:
    """Save one plot of the runs (a .png, .svg or .pdf)."""
    keys = [k for k in by.split(",") if k] if by is not None else None
    figure = benchkit.plot(kind, benchkit.runs(read_store(store), bench=bench), by=keys)
    kinds = figure.canvas.get_supported_filetypes()
    if out.suffix.lstrip(".").lower() not in kinds:
        raise UsageError(out, "--out", f"not an image file name (.{', .'.join(sorted(kinds))})")
    try:
        figure.savefig(out, dpi=120)
    except OSError as exc:
        raise UsageError(out, "--out", exc.strerror or str(exc)) from None
    click.echo(str(out))


@click.command()
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The site's folder.")
@click.option("--set", "run_set", default=None, help="Only this run set.")
@store_option
def report(out: Path, run_set: str | None, store: Path | None) -> None:
    """Write a static site of the runs to browse from disk: an index and a page a run."""
    folder = read_store(store)
    benchkit.recover(folder)
    click.echo(str(benchkit.report(folder, out, run_set=run_set)))
