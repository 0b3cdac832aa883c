"""The commands that read and keep the store: `runs`, `status`, `import`, `compact`."""

from __future__ import annotations

from pathlib import Path

import click

import benchkit
from benchkit.analysis.text import status as status_text
from benchkit.cli.options import none_kept, pairs, read_store, store_option


@click.command()
@store_option
@click.option("--bench", default=None, help="Only this bench.")
@click.option("--arm", default=None, help="Only this arm.")
@click.option("--executor", default=None, help="Only this executor.")
@click.option("--model", default=None, help="Only this model.")
@click.option("--origin", default=None, help="Only runs of this origin (pilot, imported, ...).")
@click.option("--set", "run_set", default=None, help="Only this run set.")
def runs(
    store: Path | None,
    bench: str | None,
    arm: str | None,
    executor: str | None,
    model: str | None,
    origin: str | None,
    run_set: str | None,
) -> None:
    """List the runs in the store (marking those a killed benchkit left as crashed)."""
    from benchkit.analysis.listing import runs_listing
    from benchkit.run.recovery import recover_then_read
    from benchkit.store.query import RunFilter, narrowed

    chosen = RunFilter(
        bench=bench, arm=arm, executor=executor, model=model, origin=origin, run_set=run_set
    )
    every = recover_then_read(read_store(store))  # the runs table read once
    frame = narrowed(every, chosen)
    if frame.is_empty():
        click.echo(none_kept(every, chosen), err=True)
        return
    click.echo(runs_listing(frame, every=True))


@click.command()
@store_option
@click.option("--set", "run_set", default=None, help="Only this run set.")
def status(store: Path | None, run_set: str | None) -> None:
    """Runs by status, cost so far, the pilots queued and the time left of each matrix
    at work, and what each running pilot is doing now."""
    from dataclasses import asdict
    from datetime import UTC, datetime

    from benchkit.run.progress import read_matrices
    from benchkit.run.recovery import recover_then_read
    from benchkit.store.query import RunFilter, narrowed

    folder = read_store(store)
    every, chosen = recover_then_read(folder), RunFilter(run_set=run_set)
    rows = narrowed(every, chosen).to_dicts()
    beats = {k: asdict(b) for k, b in folder.beats().items()}
    matrices = [m for m in read_matrices(folder) if run_set in (None, m["run_set"])]
    if not rows and not matrices:
        click.echo(none_kept(every, chosen))
        return
    click.echo(status_text(rows, beats, datetime.now(UTC), matrices))


@click.command(name="import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--map", "maps", multiple=True, help="SOURCE=COLUMN: the file's column SOURCE is COLUMN."
)
@click.option("--ignore", multiple=True, help="A column of the file to leave out.")
@click.option(
    "--const",
    "consts",
    multiple=True,
    help="COLUMN=VALUE: every run has VALUE in COLUMN (one the file lacks: bench=dms-saas).",
)
@store_option
def import_(
    file: Path,
    maps: tuple[str, ...],
    ignore: tuple[str, ...],
    consts: tuple[str, ...],
    store: Path | None,
) -> None:
    """Add runs recorded elsewhere (a CSV file) to the store, marked imported. A
    published table is kept as it is: `--const` gives a column it lacks, `--map` names
    its columns as the store's; its `ci` and `outcome` words are kept, and read as a
    status where they can be (the summary says how)."""
    ids = benchkit.import_runs(
        file,
        store,
        mapping=dict(pairs("--map", maps)),
        ignore=ignore,
        consts=dict(pairs("--const", consts)),
    )
    said = f"imported {len(ids)} run{'' if len(ids) == 1 else 's'} from {file}"
    click.echo(f"{said}{'; they replace those of its earlier import' if ids.replaced else ''}")
    for note in ids.notes:
        click.echo(f"  {note}")


@click.command()
@store_option
def compact(store: Path | None) -> None:
    """Merge the runs' own files into one file per table, so the store reads fast."""
    merged = benchkit.compact(read_store(store))
    said = ", ".join(f"{table}: {n} file{'' if n == 1 else 's'}" for table, n in merged.items())
    click.echo(f"merged into one part per table: {said}")
