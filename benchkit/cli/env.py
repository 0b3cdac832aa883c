"""The cache of bench environments: `env list`, `env prune`."""

from __future__ import annotations

import click

from benchkit.errors import UsageError


@click.group()
def env() -> None:
    """The cache of bench environments (virtualenvs built per bench and reused)."""


@env.command(name="list")
def env_list() -> None:
    """List the cached environments: key, Python or node, packages, size, when built and used."""
    from benchkit.workspace.inventory import cached
    from benchkit.workspace.recipe import envs_dir

    found = cached()
    if not found:
        click.echo(f"no environments in {envs_dir()}", err=True)
    for e in found:
        used = f"{e.last_used:%Y-%m-%d %H:%M}" if e.last_used else "never"
        click.echo(
            f"{e.key}  {e.runtime}  {e.packages:>3} packages  {e.megabytes:>7.1f} MB  "
            f"built {e.built_at}  used {used}"
        )


@env.command(name="prune")
@click.option("--unused-days", type=float, help="Only those unused so long (days, 0 or more).")
@click.option("--all", "everything", is_flag=True, help="Every cached environment.")
def env_prune(unused_days: float | None, everything: bool) -> None:
    """Remove cached environments (pilots at work keep their own copies)."""
    from benchkit.workspace.inventory import prune

    if everything == (unused_days is not None):
        raise UsageError("env prune", "", "give one of --all or --unused-days DAYS")
    removed = prune(unused_days=unused_days)
    click.echo(f"removed {len(removed)} environments" + "".join(f"\n  {k}" for k in removed))
