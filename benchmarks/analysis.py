"""How fast does the analysis layer load and compare many runs?

All the runs here are SYNTHETIC: random figures in the store's real schema, made to
time the code, not to say anything about any tool.

1. A store of 1,000,000 run rows (compacted, as `benchkit compact` leaves a store):
   the time of `bk.runs()` and of `bk.compare(runs, by=["arm", "executor"])`.
   Target: compare under 2 s on this 2-core machine.
2. At sizes both can handle, the same work (load every run, then per arm and
   executor the means of the metrics and their 95% bootstrap intervals) done by
   benchkit and by pandas over one JSON file per run, as other harnesses store their
   results; the ratio at each size. Target: benchkit at least 10 times faster.

    .venv/bin/python benchmarks/analysis.py [--rows 1000000] [--sizes 10000 50000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

import benchkit as bk
from benchkit.analysis.stats import bootstrap_mean
from benchkit.store.parquet import write_arrow
from benchkit.store.schema import SCHEMA_VERSION, table_schema

ARMS = ["tool-v1", "tool-v2", "agent", "baseline"]
EXECUTORS = ["cli", "sdk"]
CHECKS = ["install", "typecheck", "lint", "test", "build"]
METRICS = ["coverage", "matched", "unrelated", "cost", "wall", "pass", "flaky"]
PART_ROWS = 100_000


def synthetic_runs(n: int, seed: int = 1) -> pa.Table:
    """n synthetic runs in the `runs` schema."""
    rng = np.random.default_rng(seed)
    total = np.full(n, 51)
    covered = rng.binomial(total, 0.5)
    verdict = rng.choice(["pass", "flaky-pass", "fail"], size=n, p=[0.7, 0.1, 0.2])
    columns: dict[str, Any] = {
        "run_id": [f"synthetic-{i:08d}" for i in range(n)],
        "schema_version": np.full(n, SCHEMA_VERSION, dtype=np.int32),
        "origin": ["synthetic"] * n,
        "bench": rng.choice([f"bench-{b}" for b in range(20)], size=n),
        "arm": rng.choice(ARMS, size=n),
        "executor": rng.choice(EXECUTORS, size=n),
        "model": rng.choice(["small", "large"], size=n),
        "trial": rng.integers(1, 6, size=n, dtype=np.int32),
        "status": np.where(rng.random(n) < 0.95, "ok", "failed"),
        "sites_total": total.astype(np.int32),
        "sites_covered": covered.astype(np.int32),
        "sites_matched": rng.binomial(covered, 0.8).astype(np.int32),
        "sites_unrelated": rng.poisson(1.0, size=n).astype(np.int32),
        "cost_usd": rng.gamma(2.0, 0.4, size=n),
        "wall_s": rng.gamma(3.0, 60.0, size=n),
        "test_verdict": verdict,
    }
    for check in CHECKS:
        columns[f"{check}_status"] = np.where(rng.random(n) < 0.9, "ok", "fail")
        columns[f"{check}_count"] = rng.poisson(0.3, size=n)
    schema = table_schema("runs", CHECKS)
    arrays = {
        name: pa.array(values, type=schema.field(name).type) for name, values in columns.items()
    }
    return pa.table(arrays)


def write_store(store: Path, runs: pa.Table) -> None:
    for start in range(0, runs.num_rows, PART_ROWS):
        write_arrow(store, "runs", f"part-synthetic-{start:08d}", runs.slice(start, PART_ROWS))


def write_json_runs(folder: Path, runs: pa.Table) -> None:
    folder.mkdir(parents=True)
    for row in runs.to_pylist():
        (folder / f"{row['run_id']}.json").write_text(json.dumps(row, default=str))


def _height(store: Path) -> int:
    return bk.runs(store).height


def benchkit_work(store: Path) -> int:
    runs = bk.runs(store)
    bk.compare(runs, by=["arm", "executor"], metrics=METRICS)
    return runs.height


def pandas_work(folder: Path) -> int:
    """The same work over one JSON file per run, with pandas."""
    records = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    df = pd.DataFrame.from_records(records)
    df["coverage"] = df["sites_covered"] / df["sites_total"]
    df["matched"] = df["sites_matched"] / df["sites_total"]
    df["unrelated"] = df["sites_unrelated"]
    df["cost"] = df["cost_usd"]
    df["wall"] = df["wall_s"]
    df["pass"] = ((df["status"] == "ok") & df["test_verdict"].isin(["pass", "flaky-pass"])).astype(
        float
    )
    df["flaky"] = (df["test_verdict"] == "flaky-pass").astype(float)
    for _, group in df.groupby(["arm", "executor"]):
        for metric in METRICS:
            values = group[metric].to_numpy(dtype=float)
            values.mean()
            bootstrap_mean(values)
    return len(df)


def timed(work: Callable[[], int], repeat: int = 1) -> tuple[float, int]:
    """The best of `repeat` runs of the work (the first also pays one-time costs)."""
    best, n = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        n = work()
        best = min(best, time.perf_counter() - started)
    return best, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 50_000])
    args = parser.parse_args()
    print("All runs below are SYNTHETIC (random figures in the runs schema).\n")
    with tempfile.TemporaryDirectory(prefix="benchkit-analysis-") as scratch:
        root = Path(scratch)
        store = root / "million"
        write_store(store, synthetic_runs(args.rows))
        load, n = timed(partial(_height, store), repeat=3)
        runs = bk.runs(store)
        started = time.perf_counter()
        comparison = bk.compare(runs, by=["arm", "executor"], metrics=METRICS)
        compare_s = time.perf_counter() - started
        print(f"{n:,} synthetic runs, {comparison.frame.height} groups (arm x executor)")
        print(f"  bk.runs():    {load:6.2f} s (best of 3)")
        verdict = "met" if compare_s < 2 else "MISSED"
        print(f"  bk.compare(): {compare_s:6.2f} s   (target < 2 s: {verdict})\n")

        print("load and compare, best of 3:")
        print(f"{'runs':>8} {'benchkit s':>11} {'pandas+JSON s':>14} {'ratio':>7}")
        for size in args.sizes:
            table = synthetic_runs(size, seed=size)
            ours, theirs = root / f"store-{size}", root / f"json-{size}"
            write_store(ours, table)
            write_json_runs(theirs, table)
            a, n_a = timed(partial(benchkit_work, ours), repeat=3)
            b, n_b = timed(partial(pandas_work, theirs), repeat=3)
            assert n_a == n_b == size
            ratio = b / a
            print(
                f"{size:>8,} {a:>11.3f} {b:>14.3f} {ratio:>6.1f}x"
                f"   (target >= 10x: {'met' if ratio >= 10 else 'MISSED'})"
            )


if __name__ == "__main__":
    main()
