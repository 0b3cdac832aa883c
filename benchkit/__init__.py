"""benchkit: rerun AI coding tools on benchmark repositories, measure them against the
change a human made, and keep every figure in Parquet.

    import benchkit as bk
    runs = bk.pilot("demo", arm="replay:agent-a", trials=3)
    bk.runs()            # polars DataFrame; .to_pandas() for pandas
"""

from __future__ import annotations

__version__ = "0.1.0"

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import polars as pl

from benchkit.benches import bundled, find_bench
from benchkit.command_arm import bundled_arms_dir
from benchkit.pilot import Stage, pilot_specs, run_pilots
from benchkit.pilot import recover as recover_runs
from benchkit.records import TABLES, PilotSpec, Run
from benchkit.spec import Bench, BenchError, load_arm
from benchkit.store import read_table, store_path


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
    )
    return run_pilots(specs, store=store, keep=keep, on_stage=on_stage, on_run=on_run)


def runs(store: Path | str | None = None) -> pl.DataFrame:
    """The `runs` table of a store, oldest first, as a polars DataFrame."""
    frame = read_table(store_path(store), "runs")
    return frame.sort("started_at") if "started_at" in frame.columns else frame


def table(name: str, store: Path | str | None = None) -> pl.DataFrame:
    """Any table of a store (`runs`, `checks`, `tests`, `sites`, `sessions`) as a polars
    DataFrame."""
    if name not in TABLES:
        raise ValueError(f"no table {name!r} (tables: {', '.join(TABLES)})")
    return read_table(store_path(store), name)


def benches() -> list[Bench]:
    """The bundled benches."""
    return [find_bench(path) for path in bundled()]


def arms() -> dict[str, str]:
    """The built-in arms and the bundled arm files, each with what it is."""
    found = {
        "noop": "nothing: the base as it is",
        "human": "applies the human reference (the oracle)",
        "replay:NAME|PATH": "applies a recorded patch",
    }
    for path in sorted(bundled_arms_dir().glob("*.toml")):
        found[path.stem] = load_arm(path).file.description or str(path)
    return found


def recover(store: Path | str | None = None) -> list[str]:
    """Mark the runs a killed benchkit left `running` as `crashed`; their ids."""
    return recover_runs(store_path(store))


__all__ = [
    "Bench",
    "BenchError",
    "PilotSpec",
    "Run",
    "__version__",
    "arms",
    "benches",
    "pilot",
    "recover",
    "runs",
    "table",
]
