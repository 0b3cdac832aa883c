"""The SWE-bench commands: `swebench benches` (instances as benches) and `swebench
report` (SWE-bench's report files of a run set)."""

from __future__ import annotations

from pathlib import Path

import click

from benchkit.cli.options import read_store, store_option
from benchkit.records import DEFAULT_SET


@click.group(name="swebench")
def swebench_group() -> None:
    """SWE-bench task sets in, SWE-bench grades out."""


@swebench_group.command(name="benches")
@click.argument("instances", type=click.Path(path_type=Path))
@click.option(
    "--repo",
    "repos",
    multiple=True,
    required=True,
    metavar="OWNER/NAME=MIRROR_OR_URL",
    help="Where an instance's repository is: a local mirror or clone URL (repeatable).",
)
@click.option(
    "--environments",
    type=click.Path(path_type=Path),
    required=True,
    help="What each (repository, version) runs with: a TOML or JSON file.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("swebench-benches"),
    show_default=True,
    help="The folder the bench folders go in, one per instance.",
)
@click.option("--hints", is_flag=True, help="Add each instance's hints_text to its instruction.")
def benches(
    instances: Path, repos: tuple[str, ...], environments: Path, out: Path, hints: bool
) -> None:
    """Turn the task instances of INSTANCES (JSON, JSON Lines or Parquet) into benches."""
    from benchkit.swebench import benches as made

    written = made(instances, repos=repos, environments=environments, out=out, hints=hints)
    click.echo(f"{len(written)} bench(es) in {out}: run them with --bench {out}/<instance>")


@swebench_group.command(name="report")
@click.option("--set", "run_set", default=DEFAULT_SET, show_default=True, help="The run set.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("swebench-report"),
    show_default=True,
    help="The folder of the report files.",
)
@store_option
def report(run_set: str, out: Path, store: Path | None) -> None:
    """Write SWE-bench's report files of a run set: a run summary per model and a
    report.json per instance it completed."""
    from benchkit.swebench import report as written_by

    for line in written_by(run_set, out=out, store=read_store(store)).lines():
        click.echo(line)
