"""The `benchkit` command: parse, call one library function, print. One module a
command group; the group itself, and what its commands share, in `options`."""

from __future__ import annotations

import warnings

import click

import benchkit
from benchkit.cli import analysis, benches, change, env, matrix, runs, swebench
from benchkit.cli.options import Benchkit
from benchkit.workspace.processes import exits_quickly


@click.group(cls=Benchkit)
@click.version_option(benchkit.__version__, prog_name="benchkit")
def main() -> None:
    """Rerun AI coding tools on benchmark repositories and keep every figure."""
    exits_quickly()
    warnings.simplefilter("always")
    warnings.formatwarning = lambda message, *_args, **_kw: f"benchkit: warning: {message}\n"


for command in (
    matrix.pilot,
    matrix.run_file,
    matrix.rerun,
    runs.runs,
    runs.status,
    runs.import_,
    runs.compact,
    analysis.evidence,
    analysis.compare,
    analysis.budget,
    analysis.plot,
    analysis.report,
    change.ab_,
    change.probe,
    benches.benches,
    benches.arms,
    benches.prices,
    benches.bench_group,
    swebench.swebench_group,
    env.env,
):
    main.add_command(command)
