"""benchkit: rerun AI coding tools on benchmark repositories, measure them against the
change a human made, and keep every figure in Parquet.

    import benchkit as bk
    runs = bk.pilot("demo", arm="replay:agent-a", trials=3)
    bk.runs()            # polars DataFrame; .to_pandas() for pandas
"""

from __future__ import annotations

__version__ = "0.1.0"

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from benchkit.ab import AbResult
from benchkit.ab import ab as run_ab
from benchkit.analysis import Comparison, Paired, compare, flips, paired
from benchkit.benches import bundled, find_bench
from benchkit.command_arm import bundled_arms_dir
from benchkit.evidence import Markdown, pick_runs, pilot_table
from benchkit.imports import import_csv
from benchkit.pilot import Stage, pilot_specs, run_pilots
from benchkit.probe import ProbeResult
from benchkit.probe import probe as run_probe
from benchkit.records import TABLES, PilotSpec, Run
from benchkit.recovery import recover as recover_runs
from benchkit.spec import Bench, BenchError, load_arm
from benchkit.store import compact as compact_store
from benchkit.store import read_table, scan_table, store_path


def pilot(
    bench: str | Path = "demo",
    arm: str | Sequence[str] = "noop",
    *,
    executor: str = "",
    model: str = "",
    max_cost: float | None = None,
    trials: int = 1,
    flake_reruns: int = 1,
    arm_vars: Sequence[tuple[str, str]] | Mapping[str, str] = (),
    checks: Sequence[str] = (),
    store: Path | str | None = None,
    keep: bool = False,
    on_stage: Stage | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Run (bench, arm, executor, model, max_cost, trial) pilots, record each, return them."""
    arms = [arm] if isinstance(arm, str) else list(arm)
    if flake_reruns < 1:
        raise ValueError(f"flake_reruns must be at least 1: {flake_reruns}")
    specs = pilot_specs(
        str(bench),
        arms,
        executor=executor,
        model=model,
        max_cost=max_cost,
        trials=trials,
        flake_reruns=flake_reruns,
        arm_vars=tuple(dict(arm_vars).items()),
        checks=tuple(checks),
    )
    return run_pilots(specs, store=store, keep=keep, on_stage=on_stage, on_run=on_run)


def scan(
    name: str = "runs",
    store: Path | str | None = None,
    *,
    bench: str | Sequence[str] | None = None,
    arm: str | Sequence[str] | None = None,
    executor: str | Sequence[str] | None = None,
    model: str | Sequence[str] | None = None,
    since: datetime | date | None = None,
    until: datetime | date | None = None,
) -> pl.LazyFrame:
    """A table of the store as a lazy polars frame, filtered. The run filters apply to
    `runs` and, through their run ids, to every other table."""
    if name not in TABLES:
        raise ValueError(f"no table {name!r} (tables: {', '.join(TABLES)})")
    conditions = []
    for column, wanted in (
        ("bench", bench),
        ("arm", arm),
        ("executor", executor),
        ("model", model),
    ):
        if wanted is not None:
            values = [wanted] if isinstance(wanted, str) else list(wanted)
            conditions.append(pl.col(column).is_in(values))
    for bound, after in ((since, True), (until, False)):
        if bound is not None:
            moment = bound if isinstance(bound, datetime) else datetime.combine(bound, time())
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            started = pl.col("started_at")
            conditions.append(started >= moment if after else started < moment)
    rows = scan_table(store_path(store), name)
    if not conditions:
        return rows
    chosen = scan_table(store_path(store), "runs").filter(*conditions)
    if name == "runs":
        return chosen
    return rows.join(chosen.select("run_id"), on="run_id", how="semi")


def runs(store: Path | str | None = None, **filters: Any) -> pl.DataFrame:
    """The `runs` table of a store, oldest first, as a polars DataFrame; the filters of
    `scan` (bench, arm, executor, model, since, until) narrow it."""
    frame = (
        read_table(store_path(store), "runs")
        if not filters
        else (scan("runs", store, **filters).collect())
    )
    return frame.sort("started_at", nulls_last=False)


def table(name: str, store: Path | str | None = None, **filters: Any) -> pl.DataFrame:
    """Any table of a store (`runs`, `checks`, `tests`, `sites`, `sessions`) as a polars
    DataFrame; the filters of `scan` narrow it to some runs."""
    if name not in TABLES:
        raise ValueError(f"no table {name!r} (tables: {', '.join(TABLES)})")
    if filters:
        return scan(name, store, **filters).collect()
    return read_table(store_path(store), name)


def evidence(
    run_ids: Sequence[str] | pl.DataFrame,
    *,
    labels: Sequence[str] | Mapping[str, str] | None = None,
    store: Path | str | None = None,
) -> Markdown:
    """The pilot table for PR bodies: one row per run (by id, or the rows given),
    labelled with `labels` (a list, or a mapping of run id to label; default: the arm)."""
    frame = run_ids if isinstance(run_ids, pl.DataFrame) else pick_runs(runs(store), run_ids)
    rows = frame.to_dicts()
    if labels is None:
        names = [str(r["arm"]) for r in rows]
    elif isinstance(labels, Mapping):
        names = [labels.get(str(r["run_id"]), str(r["arm"])) for r in rows]
    else:
        names = list(labels)
    return pilot_table(rows, names)


def plot(kind: str, runs_frame: pl.DataFrame) -> Figure:
    """One of the plots (`coverage-cost`, `wall`, `checks`, `flaky`) as a Figure."""
    from benchkit.plots import PLOTS  # matplotlib loads only when a plot is asked for

    if kind not in PLOTS:
        raise ValueError(f"no plot {kind!r} (plots: {', '.join(PLOTS)})")
    return PLOTS[kind](runs_frame)


def import_runs(path: Path | str, store: Path | str | None = None) -> list[str]:
    """Add runs recorded elsewhere (a CSV file) to the store, marked imported."""
    return import_csv(Path(path), store_path(store))


def benches() -> list[Bench]:
    """The bundled benches."""
    return [find_bench(path) for path in bundled()]


def arms() -> dict[str, str]:
    """The built-in arms and the bundled arm files, each with what it is."""
    found = {
        "noop": "nothing: the base as it is",
        "human": "applies the human reference (the oracle)",
        "replay:NAME|PATH": "applies a recorded patch",
        "simulated-agent": "SIMULATED data for demos: makes each human change by chance",
    }
    for path in sorted(bundled_arms_dir().glob("*.toml")):
        found[path.stem] = load_arm(path).file.description or str(path)
    return found


def ab(
    base: str,
    head: str,
    command: Sequence[str],
    *,
    repeat: int = 1,
    repo: Path | str = ".",
    store: Path | str | None = None,
) -> AbResult:
    """The identical test command at `base` and at `head`, each in a fresh worktree."""
    return run_ab(Path(repo), base, head, command, repeat=repeat, store=store_path(store))


def probe(
    base: str,
    head: str,
    command: Sequence[str] | None = None,
    *,
    revert: Sequence[str] | None = None,
    each: bool = False,
    repo: Path | str = ".",
    store: Path | str | None = None,
) -> ProbeResult:
    """Restore source files to base in a worktree at head, keep the tests, judge them."""
    return run_probe(
        Path(repo), base, head, command=command, revert=revert, each=each, store=store_path(store)
    )


def compact(store: Path | str | None = None) -> dict[str, int]:
    """Merge the store's per-run files into one per table (reads get fast); the number
    of files merged per table. `benchkit pilot` does it past 64 runs' own files."""
    return compact_store(store_path(store))


def recover(store: Path | str | None = None) -> list[str]:
    """Mark the runs a killed benchkit left `running` as `crashed`; their ids."""
    return recover_runs(store_path(store))


__all__ = [
    "AbResult",
    "Bench",
    "BenchError",
    "Comparison",
    "Markdown",
    "Paired",
    "PilotSpec",
    "ProbeResult",
    "Run",
    "__version__",
    "ab",
    "arms",
    "benches",
    "compact",
    "compare",
    "evidence",
    "flips",
    "import_runs",
    "paired",
    "pilot",
    "plot",
    "probe",
    "recover",
    "runs",
    "scan",
    "table",
]
