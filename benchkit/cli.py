"""The `benchkit` command: parse, call one library function, print."""

from __future__ import annotations

import errno
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import benchkit
from benchkit.analysis.text import SPEC_COLUMNS, line, table, tests_block
from benchkit.analysis.text import status as status_text
from benchkit.errors import BenchkitError, UsageError
from benchkit.records import DEFAULT_SET, LAUNCHERS, RERUNS, LauncherName
from benchkit.workspace.proc import Terminated, interrupts
from benchkit.workspace.sandbox import choices as sandbox_choices

if TYPE_CHECKING:
    import polars as pl

    from benchkit.records import Run
    from benchkit.store.query import RunFilter

BAD_INPUT = 2
INTERRUPTED = 130

store_option = click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=None,
    help="Store folder [default: $BENCHKIT_STORE or data/runs].",
)


def _read_store(store: Path | None) -> Path:
    """The store a reading command reads: it must be there (see `existing_store`)."""
    from benchkit.store.parquet import existing_store

    return existing_store(store)


def _none_kept(runs: pl.DataFrame, chosen: RunFilter) -> str:
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


class _Benchkit(click.Group):
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


def _print_runs(rows: Sequence[Mapping[str, Any]], every: bool = False) -> None:
    click.echo(table(rows, every))
    block = tests_block(rows)
    if block:
        click.echo("")
        click.echo(block)


def _pairs(option: str, values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise UsageError(option, "", f"takes NAME=VALUE, not {value!r}")
        pairs.append((name, text))
    return tuple(pairs)


@click.group(cls=_Benchkit)
@click.version_option(benchkit.__version__, prog_name="benchkit")
def main() -> None:
    """Rerun AI coding tools on benchmark repositories and keep every figure."""
    warnings.simplefilter("always")
    warnings.formatwarning = lambda message, *_args, **_kw: f"benchkit: warning: {message}\n"


@main.command()
@click.option(
    "--bench",
    "benches",
    multiple=True,
    default=["demo"],
    show_default=True,
    help="Bundled name or path; repeatable.",
)
@click.option(
    "--arm",
    "arms",
    multiple=True,
    default=["noop"],
    show_default=True,
    help="noop, human, replay:<name or path>, an arm file's name or path; repeatable.",
)
@click.option(
    "--executor",
    "executors",
    multiple=True,
    help="Executor label [default: the arm's own]; repeatable.",
)
@click.option("--model", "models", multiple=True, help="Model name handed to the arm; repeatable.")
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
@click.option("--checks", default="", help="Only these checks, comma-separated [default: all].")
@store_option
@click.option("--keep", is_flag=True, help="Keep each pilot's worktree.")
@click.option(
    "--refresh-baseline", is_flag=True, help="Run the checks at base again, not from the cache."
)
@click.option(
    "--set",
    "run_set",
    default=DEFAULT_SET,
    show_default=True,
    help="The run set: units it holds already are not run again.",
)
@click.option("--new-set", is_flag=True, help="Run the matrix in a new set (NAME-2, ...).")
@click.option(
    "--retry-failed", is_flag=True, help="Run again the units whose run failed, retryably."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Pilots at a time, each in a worker process (or Ray CPUs, with --launcher ray).",
)
@click.option(
    "--launcher",
    type=click.Choice(LAUNCHERS),
    default=None,
    help="serial, processes or ray [default: serial, processes with --jobs > 1].",
)
@click.option("--ray-address", default=None, help="The Ray cluster [default: a local one].")
@sandbox_option
@click.option("--quiet", is_flag=True, help="No progress display.")
def pilot(
    benches: tuple[str, ...],
    arms: tuple[str, ...],
    executors: tuple[str, ...],
    models: tuple[str, ...],
    max_cost: float | None,
    trials: int,
    flake_reruns: int,
    arm_vars: tuple[str, ...],
    checks: str,
    store: Path | None,
    keep: bool,
    refresh_baseline: bool,
    run_set: str,
    new_set: bool,
    retry_failed: bool,
    jobs: int,
    launcher: LauncherName | None,
    ray_address: str | None,
    sandbox: str,
    quiet: bool,
) -> None:
    """Run pilots, record them, and print one line per run and a table. Several
    benches, arms, executors and models run as a matrix: every one with every other,
    times --trials, in a run set that runs each unit once."""
    given = {"bench": benches, "executor": executors, "model": models}
    show = [c for c in SPEC_COLUMNS if len(set(given[c])) > 1]  # what tells the runs apart
    _run_matrix(
        dict(
            bench=list(benches),
            arm=list(arms),
            executor=list(executors),
            model=list(models),
            max_cost=max_cost,
            trials=trials,
            flake_reruns=flake_reruns,
            arm_vars=_pairs("--var", arm_vars),
            checks=[c for c in checks.split(",") if c],
            run_set=run_set,
            new_set=new_set,
            retry_failed=retry_failed,
            jobs=jobs,
            launcher=launcher,
            ray_address=ray_address,
            sandbox=sandbox,
            keep=keep,
            refresh_baseline=refresh_baseline,
        ),
        store,
        show,
        quiet,
    )


@main.command(name="run")
@click.argument("experiment", type=click.Path(path_type=Path))
@click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=None,
    help="Store folder [default: the file's `store`, $BENCHKIT_STORE or data/runs].",
)
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="[default: the file's]")
@click.option("--launcher", type=click.Choice(LAUNCHERS), default=None)
@click.option("--ray-address", default=None)
@click.option("--new-set", is_flag=True, help="Run the matrix in a new set (NAME-2, ...).")
@click.option("--retry-failed", is_flag=True, help="Run again the units that failed, retryably.")
@click.option("--keep", is_flag=True, help="Keep each pilot's worktree.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def run_file(
    experiment: Path,
    store: Path | None,
    jobs: int | None,
    launcher: LauncherName | None,
    ray_address: str | None,
    new_set: bool,
    retry_failed: bool,
    keep: bool,
    quiet: bool,
) -> None:
    """Run the matrix of an experiment file (experiment.toml) in its run set: what
    the set holds already is not run again."""
    from benchkit.bench.experiment_file import experiment as load_experiment

    matrix = load_experiment(experiment)
    given = matrix.pop("store")
    for name, value in (("jobs", jobs), ("launcher", launcher), ("ray_address", ray_address)):
        if value is not None:
            matrix[name] = value
    matrix.update(new_set=new_set, retry_failed=retry_failed, keep=keep)
    show = [c for c in SPEC_COLUMNS if len(set(matrix[c])) > 1]
    _run_matrix(matrix, store or (Path(str(given)) if given else None), show, quiet)


@main.command()
@click.argument("run_id")
@click.option(
    "--set",
    "run_set",
    default=RERUNS,
    show_default=True,
    help="The run set the new run belongs to.",
)
@store_option
@sandbox_option
@click.option("--keep", is_flag=True, help="Keep the pilot's worktree.")
def rerun(run_id: str, run_set: str, store: Path | None, sandbox: str, keep: bool) -> None:
    """Run a recorded pilot's spec again, as a new run that names the one it reruns."""
    from benchkit.run.events import Event, Recorded
    from benchkit.run.progress import Terminal

    store = _read_store(store)

    def printer(event: Event) -> None:
        if isinstance(event, Recorded):
            _said(event.run, ())

    terminal = Terminal(sys.stderr, printer)
    try:
        with interrupts():
            run = benchkit.rerun(
                run_id, store=store, run_set=run_set, sandbox=sandbox, keep=keep, events=terminal
            )
    except KeyboardInterrupt as exc:
        click.echo("benchkit: interrupted; the run in progress was recorded", err=True)
        sys.exit(exc.exit_code if isinstance(exc, Terminated) else INTERRUPTED)
    finally:
        terminal.close()
    from benchkit.store.query import pick_runs

    click.echo("")
    _print_runs(pick_runs(benchkit.runs(store), [run_id, run.run_id]).to_dicts())
    if run.status != "ok":
        sys.exit(1)


def _run_matrix(matrix: dict[str, Any], store: Path | None, show: list[str], quiet: bool) -> None:
    """`benchkit.pilot(**matrix)`, with a line per run as it ends, the progress on
    stderr (but with `quiet`), then the table of the matrix's runs: those it ran and
    those its set held already."""
    from benchkit.run.events import Event, Planned, Recorded
    from benchkit.run.progress import Terminal
    from benchkit.store.rows import run_row  # pyarrow: loaded by the commands that write

    held: list[str] = []

    def printer(event: Event) -> None:
        if isinstance(event, Planned):
            held[:] = event.recorded
            if event.recorded or event.running:
                busy = f", {event.running} at work elsewhere" if event.running else ""
                click.echo(
                    f"set {event.run_set}: {len(event.recorded)} of the matrix's pilots "
                    f"recorded already{busy}; {event.pilots} to run",
                    err=True,
                )
        elif isinstance(event, Recorded):
            _said(event.run, show)

    terminal = None if quiet else Terminal(sys.stderr, printer)
    try:
        with interrupts():
            runs = benchkit.pilot(**matrix, store=store, progress=False, events=terminal or printer)
    except KeyboardInterrupt as exc:
        click.echo(
            "benchkit: interrupted; each pilot at work was recorded, as interrupted", err=True
        )
        sys.exit(exc.exit_code if isinstance(exc, Terminated) else INTERRUPTED)
    finally:
        if terminal is not None:
            terminal.close()
    rows = [run_row(r) for r in runs]
    if held:
        from benchkit.store.query import pick_runs

        rows = pick_runs(benchkit.runs(store), held).to_dicts() + rows
    if not rows:
        return
    click.echo("")
    _print_runs(rows)
    if any(r["status"] != "ok" for r in rows):
        sys.exit(1)


def _said(run: Run, show: Sequence[str]) -> None:
    """A finished run: its line on stdout, what went wrong on stderr."""
    from benchkit.store.rows import run_row

    click.echo(line(run_row(run), show))
    if run.worktree:
        click.echo(f"  worktree kept: {run.worktree}", err=True)
    if run.status != "ok":
        logs = Path(run.artifacts, "logs")
        where = f"; logs: {logs}" if logs.is_dir() else ""
        click.echo(f"  {run.failure_detail}{where}", err=True)
    for warning in run.warnings:
        click.echo(f"  warning: {warning}", err=True)
    for check in run.checks:
        if check.phase == "after" and check.status != "ok" and check.note:
            click.echo(f"  {check.check}: {check.note}", err=True)


@main.command()
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
    from benchkit.run.recovery import recovered
    from benchkit.store.query import RunFilter, narrowed

    chosen = RunFilter(
        bench=bench, arm=arm, executor=executor, model=model, origin=origin, run_set=run_set
    )
    every = recovered(_read_store(store))  # the runs table read once
    frame = narrowed(every, chosen)
    if frame.is_empty():
        click.echo(_none_kept(every, chosen), err=True)
        return
    _print_runs(frame.to_dicts(), every=True)


@main.command()
@store_option
@click.option("--set", "run_set", default=None, help="Only this run set.")
def status(store: Path | None, run_set: str | None) -> None:
    """Runs by status, cost so far, the pilots queued and the time left of each matrix
    at work, and what each running pilot is doing now."""
    from dataclasses import asdict
    from datetime import UTC, datetime

    from benchkit.run.progress import read_matrices
    from benchkit.run.recovery import recovered
    from benchkit.store.heartbeat import read_beats
    from benchkit.store.query import RunFilter, narrowed

    folder = _read_store(store)
    every, chosen = recovered(folder), RunFilter(run_set=run_set)
    rows = narrowed(every, chosen).to_dicts()
    beats = {k: asdict(b) for k, b in read_beats(folder).items()}
    matrices = [m for m in read_matrices(folder) if run_set in (None, m["run_set"])]
    if not rows and not matrices:
        click.echo(_none_kept(every, chosen))
        return
    click.echo(status_text(rows, beats, datetime.now(UTC), matrices))


@main.command()
@click.argument("run_ids", nargs=-1)
@click.option("--label", "labels", multiple=True, help="NAME=RUN_ID: a row's label.")
@store_option
def evidence(run_ids: tuple[str, ...], labels: tuple[str, ...], store: Path | None) -> None:
    """Print the pilot table (GitHub markdown) of some runs, for a PR body."""
    from benchkit.store.query import pick_runs

    named = _pairs("--label", labels)
    if not run_ids and not named:
        raise UsageError("RUN_IDS", "", "give at least one run id")
    frame = pick_runs(benchkit.runs(_read_store(store)), [*run_ids, *(i for _, i in named)])
    arms = frame["arm"].head(len(run_ids)).to_list()
    click.echo(str(benchkit.evidence(frame, labels=[*arms, *(name for name, _ in named)])))


@main.command()
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
    frame = benchkit.runs(_read_store(store), bench=bench)
    keys = [k for k in by.split(",") if k]
    click.echo(benchkit.compare(frame, by=keys, metrics=metrics or None, sums=sums).to_markdown())


@main.command()
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
    figure = benchkit.plot(kind, benchkit.runs(_read_store(store), bench=bench), by=keys)
    kinds = figure.canvas.get_supported_filetypes()
    if out.suffix.lstrip(".").lower() not in kinds:
        raise UsageError(out, "--out", f"not an image file name (.{', .'.join(sorted(kinds))})")
    try:
        figure.savefig(out, dpi=120)
    except OSError as exc:
        raise UsageError(out, "--out", exc.strerror or str(exc)) from None
    click.echo(str(out))


@main.command()
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The site's folder.")
@click.option("--set", "run_set", default=None, help="Only this run set.")
@store_option
def report(out: Path, run_set: str | None, store: Path | None) -> None:
    """Write a static site of the runs to browse from disk: an index and a page a run."""
    folder = _read_store(store)
    benchkit.recover(folder)
    click.echo(str(benchkit.report(folder, out, run_set=run_set)))


@main.command(name="import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--map", "maps", multiple=True, help="SOURCE=COLUMN: the file's column SOURCE is COLUMN."
)
@click.option("--ignore", multiple=True, help="A column of the file to leave out.")
@store_option
def import_(file: Path, maps: tuple[str, ...], ignore: tuple[str, ...], store: Path | None) -> None:
    """Add runs recorded elsewhere (a CSV file) to the store, marked imported."""
    from benchkit.store.imports import earlier_imports
    from benchkit.store.parquet import store_path

    again = file.is_file() and bool(earlier_imports(file, store_path(store)))  # replaced
    ids = benchkit.import_runs(file, store, mapping=dict(_pairs("--map", maps)), ignore=ignore)
    said = f"imported {len(ids)} run{'' if len(ids) == 1 else 's'} from {file}"
    click.echo(f"{said}{'; they replace those of its earlier import' if again else ''}")


@main.command(name="ab")
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


@main.command()
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


@main.command()
@store_option
def compact(store: Path | None) -> None:
    """Merge the runs' own files into one file per table, so the store reads fast."""
    merged = benchkit.compact(_read_store(store))
    said = ", ".join(f"{table}: {n} file{'' if n == 1 else 's'}" for table, n in merged.items())
    click.echo(f"merged into one part per table: {said}")


@main.command()
def benches() -> None:
    """List the bundled benches."""
    for bench in benchkit.benches():
        click.echo(f"{bench.name:<12} {bench.folder}  {bench.file.description}")


@main.command()
def arms() -> None:
    """List the built-in arms and the bundled arm files."""
    for name, what in benchkit.list_arms().items():
        click.echo(f"{name:<18} {what}")


@main.group(name="bench")
def bench_group() -> None:
    """Benches: validate one against what its base and human reference really do."""


@bench_group.command(name="validate")
@click.argument("bench", type=str)
@click.option("--reruns", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="The lock file.")
def bench_validate(bench: str, reruns: int, out: Path | None) -> None:
    """Run the checks K times at base and with the human reference; write a lock file."""
    try:
        with interrupts():  # SIGTERM, like Ctrl-C, still removes the worktrees it made
            found = benchkit.validate(bench, reruns=reruns, out=out)
    except KeyboardInterrupt as exc:
        click.echo("benchkit: interrupted; nothing written", err=True)
        sys.exit(exc.exit_code if isinstance(exc, Terminated) else INTERRUPTED)
    click.echo(found.summary())


@main.group()
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
@click.option("--unused-days", type=click.FloatRange(min=0), help="Only those unused so long.")
@click.option("--all", "everything", is_flag=True, help="Every cached environment.")
def env_prune(unused_days: float | None, everything: bool) -> None:
    """Remove cached environments (pilots at work keep their own copies)."""
    from benchkit.workspace.inventory import prune

    if everything == (unused_days is not None):
        raise UsageError("env prune", "", "give one of --all or --unused-days DAYS")
    removed = prune(unused_days=unused_days)
    click.echo(f"removed {len(removed)} environments" + "".join(f"\n  {k}" for k in removed))


if __name__ == "__main__":
    main()
