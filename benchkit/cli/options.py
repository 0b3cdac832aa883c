"""What the commands share: their options, the group that turns a user's mistake into
one line and exit 2, and the printing of runs."""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from benchkit.analysis.text import table, tests_block
from benchkit.errors import BenchkitError, UsageError
from benchkit.workspace.sandbox import choices as sandbox_choices
from benchkit.workspace.signals import Terminated, interrupts

if TYPE_CHECKING:
    import polars as pl

    from benchkit.store.query import RunFilter
    from benchkit.store.store import Store

BAD_INPUT = 2
INTERRUPTED = 130

store_option = click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=None,
    help="Store folder [default: $BENCHKIT_STORE or data/runs].",
)


def read_store(store: Path | None) -> Store:
    """The store a reading command reads: it must be there (see `Store.existing`)."""
    from benchkit.store.store import Store

    return Store.at(store).existing()


def none_kept(runs: pl.DataFrame, chosen: RunFilter) -> str:
    """Why a filter kept none of a store's runs, in the flags' words."""
    from benchkit.store.query import KEYS, unmatched

    if runs.is_empty():
        return "no runs"
    flags = {"run_set": "--set"}
    missing = unmatched(runs, chosen)
    if missing:
        column, held = next(iter(missing.items()))
        wanted = getattr(chosen, column)
        shown = wanted if isinstance(wanted, str) else ", ".join(wanted)
        flag = flags.get(column, f"--{column}")
        listed = ", ".join(held[:8]) + (f", ... ({len(held)} in all)" if len(held) > 8 else "")
        return f"no runs: none has {flag} {shown} (the store's: {listed})"
    given = [
        f"{flags.get(c, f'--{c}')} {getattr(chosen, c)}"
        for c in KEYS
        if getattr(chosen, c) is not None
    ]
    return f"no runs: none has {' and '.join(given)} together"


sandbox_option = click.option(
    "--sandbox",
    type=click.Choice(sandbox_choices()),
    default="auto",
    show_default=True,
    help="Run arms and checks in bubblewrap (auto: when it works here).",
)


bench_env_option = click.option(
    "--bench",
    default=None,
    help="Run in this bench's environment [default: the caller's environment as it is].",
)


# A place benchkit cannot write: the machine's state, said in one line, not a fault.
_PLACE_ERRORS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT}


class Benchkit(click.Group):
    """The command group: a user's mistake (any `BenchkitError`) or a place benchkit
    cannot write (a full disk, a read-only mount) is one line on stderr and exit 2,
    here for every command; anything else keeps its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BenchkitError as exc:
            click.echo(f"benchkit: {exc}", err=True)
            ctx.exit(BAD_INPUT)
        except OSError as exc:
            if exc.errno not in _PLACE_ERRORS or not exc.filename:
                raise
            click.echo(f"benchkit: {exc.filename}: {exc.strerror}", err=True)
            ctx.exit(BAD_INPUT)


def print_runs(rows: Sequence[Mapping[str, Any]], every: bool = False) -> None:
    click.echo(table(rows, every))
    block = tests_block(rows)
    if block:
        click.echo("")
        click.echo(block)


def pairs(option: str, values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise UsageError(option, "", f"takes NAME=VALUE, not {value!r}")
        pairs.append((name, text))
    return tuple(pairs)


@contextmanager
def stopped_by_interrupts(said: str | Callable[[], str]) -> Iterator[None]:
    """Ctrl-C or SIGTERM during the block: `said` on stderr (or what it says, asked
    then), and the exit status of the signal (130 for Ctrl-C)."""
    try:
        with interrupts():
            yield
    except KeyboardInterrupt as exc:
        click.echo(f"benchkit: {said if isinstance(said, str) else said()}", err=True)
        sys.exit(exc.exit_code if isinstance(exc, Terminated) else INTERRUPTED)
