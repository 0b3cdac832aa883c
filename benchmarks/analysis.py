"""How fast does the analysis layer load and compare many runs, and at what memory?

All the runs here are SYNTHETIC: random figures in the store's real schema, made to
time the code, not to say anything about any tool.

1. A store of 1,000,000 run rows (compacted, as `benchkit compact` leaves a store).
   Each figure comes from a fresh process, so its peak RSS is its own:
   - benchkit: `bk.runs()`, then `bk.compare(runs, by=["arm", "executor"])` and
     `bk.paired(runs, "tool-v1", "tool-v2")`; and the same two on `bk.scan()`, lazily,
     which read only the columns they need;
   - pandas reading the same Parquet files, doing the same work (the metrics, their
     means and 95% intervals per arm and executor), so the figure says what the
     format gives and what benchkit's code adds.
   Targets: compare under 0.5 s, the process's peak RSS under 0.8 GB; and within 1.5x
   of bare polars doing the same work (time and peak RSS). In each process the
   modules are imported first, benchkit's and polars' alike (and pyarrow's Parquet
   reader, which `bk.scan()` reads the files' footers with), and the work is timed.
2. At sizes both can handle, load and compare by benchkit against pandas over one
   JSON file per run, as other harnesses store their results; the ratio at each size.
   Target: benchkit at least 10 times faster.

    .venv/bin/python benchmarks/analysis.py [--rows 1000000] [--sizes 10000 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
from tally import Tally  # benchmarks/tally.py, beside this script

import benchkit as bk
from benchkit.analysis.metrics import NOT_THE_ARMS as STOPPED
from benchkit.analysis.stats import bootstrap_mean
from benchkit.store.parquet import write_arrow
from benchkit.store.schema import SCHEMA_VERSION, arrow_schema

ARMS = ["tool-v1", "tool-v2", "agent", "baseline"]
EXECUTORS = ["cli", "sdk"]
CHECKS = ["install", "typecheck", "lint", "test", "build"]
METRICS = ["coverage", "matched", "unrelated", "cost", "wall", "pass", "flaky"]
PART_ROWS = 100_000


def synthetic_runs(n: int, seed: int = 1) -> pa.Table:
    """n synthetic runs in the `runs` schema, every column of it."""
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
        # a store's runs are written as they finish: a minute or so apart, in order
        "started_at": np.datetime64("2026-01-01T00:00:00", "us")
        + np.cumsum(rng.integers(1, 120_000_000, size=n)).astype("timedelta64[us]"),
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
    schema = arrow_schema("runs", CHECKS)
    arrays = [  # every column a real run has; those not drawn here empty, as in many runs
        pa.array(columns[field.name], type=field.type)
        if field.name in columns
        else pa.nulls(n, type=field.type)
        for field in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def write_store(store: Path, runs: pa.Table) -> None:
    for start in range(0, runs.num_rows, PART_ROWS):
        write_arrow(store, "runs", f"part-synthetic-{start:08d}", runs.slice(start, PART_ROWS))


def pandas_compare(df: pd.DataFrame) -> int:
    """What `bk.compare` computes, in pandas: the metrics, then per arm and executor
    each one's mean and 95% interval (a bootstrap, or its normal limit past 1,000),
    leaving out the runs that did not finish by the lab's doing, as compare does."""
    df = df[~df["status"].isin(STOPPED)]
    total = df["sites_total"].where(df["sites_total"] > 0)
    metrics = pd.DataFrame(
        {
            "arm": df["arm"],
            "executor": df["executor"],
            "coverage": df["sites_covered"] / total,
            "matched": df["sites_matched"] / total,
            "unrelated": df["sites_unrelated"].astype(float),
            "cost": df["cost_usd"],
            "wall": df["wall_s"],
            "pass": ((df["status"] == "ok") & df["test_verdict"].isin(["pass", "flaky-pass"])),
            "flaky": df["test_verdict"] == "flaky-pass",
        }
    )
    groups = 0
    for _, group in metrics.groupby(["arm", "executor"]):
        for metric in METRICS:
            values = group[metric].dropna().to_numpy(dtype=float)
            values.mean()
            bootstrap_mean(values)
        groups += 1
    return groups


def polars_metrics(runs: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """The metrics `bk.compare` computes, as it defines them, written in bare polars
    (the floor: the engine doing the same work, none of benchkit's code), the runs
    that did not finish by the lab's doing left out."""
    total = pl.col("sites_total").cast(pl.Float64)
    verdict, finished = pl.col("test_verdict"), pl.col("status") == "ok"
    flaky_files = pl.col("flaky_files").list.len().fill_null(0) > 0
    judged = verdict.is_not_null() | pl.col("flaky_files").is_not_null()
    return (
        runs.lazy()
        .filter(~pl.col("status").is_in(list(STOPPED)).fill_null(False))
        .select(
            "arm",
            "executor",
            "model",
            "max_cost",
            "bench",
            "trial",
            coverage=pl.when(total > 0).then(pl.col("sites_covered") / total),
            matched=pl.when(total > 0).then(pl.col("sites_matched") / total),
            unrelated=pl.col("sites_unrelated").cast(pl.Float64),
            cost=pl.col("cost_usd"),
            wall=pl.col("wall_s"),
            **{
                "pass": pl.when(finished & verdict.is_null())
                .then(None)
                .otherwise(finished & verdict.is_in(["pass", "flaky-pass"]))
                .cast(pl.Float64)
            },
            flaky=pl.when(judged).then((flaky_files | (verdict == "flaky-pass")).cast(pl.Float64)),
        )
    )


def polars_compare(runs: pl.DataFrame | pl.LazyFrame) -> int:
    """Per arm and executor, what a 95% interval of each metric needs: its count,
    mean and sum, and of a metric not a rate its standard deviation and whether it is
    all 0 or 1 (every group here is past a bootstrap's size)."""
    aggregations = [pl.len()]
    for m in METRICS:
        x = pl.col(m)
        aggregations += [x.count().alias(f"{m}_n"), x.mean().alias(f"{m}_mean")]
        aggregations += [x.sum().alias(f"{m}_sum")]
        if m not in ("pass", "flaky"):
            aggregations += [x.std().alias(f"{m}_std")]
            aggregations += [((x == 0) | (x == 1)).all().alias(f"{m}_binary")]
    grouped = polars_metrics(runs).group_by("arm", "executor").agg(aggregations)
    return grouped.collect().height


def polars_paired(runs: pl.DataFrame | pl.LazyFrame, a: str, b: str) -> int:
    """Arm a against arm b over (bench, trial): each unit's mean coverage and pass
    rate per arm, side by side, the factors that differ inside a unit (executor,
    model, cost cap), and the mean difference with its interval: `bk.paired`'s work."""
    units = (
        polars_metrics(runs)
        .filter(pl.col("arm").is_in([a, b]))
        .group_by("bench", "trial", "arm")
        .agg(
            pl.col("coverage").mean(),
            pl.col("pass").mean(),
            *[pl.col(f).n_unique().alias(f"_{f}") for f in ("executor", "model", "max_cost")],
        )
        .collect()
    )
    left = units.filter(pl.col("arm") == a).drop("arm")
    right = units.filter(pl.col("arm") == b).drop("arm")
    both = left.join(right, on=["bench", "trial"], suffix="_b")
    bootstrap_mean((both["coverage"] - both["coverage_b"]).drop_nulls().to_numpy())
    return both.height


MEASURE = """
import json, sys, time
sys.path.insert(0, {here!r})
started = time.perf_counter()
from pathlib import Path
which, store = {which!r}, Path({store!r})
import analysis
import benchkit as bk
import pandas as pd
import polars as pl
from benchkit.store.layout import all_files, store_path
def hwm():  # this process's peak RSS in MB (ru_maxrss would count the parent's, by fork)
    line = [x for x in open("/proc/self/status") if x.startswith("VmHWM:")][0]
    return int(line.split()[1]) / 1024
bk.compare, bk.paired  # their modules imported, as the floor's are: computing is timed
import pyarrow.parquet  # as are those bk.scan() loads when called (its footers' reader)
base = hwm()
t0 = time.perf_counter()
loaded = base
if which == "lazy":  # compare and paired on the scan: only the columns they need are read
    t1 = time.perf_counter()
    groups = bk.compare(bk.scan(store=store), by=["arm", "executor"], metrics=analysis.METRICS)
    groups = groups.frame.height
    t2 = time.perf_counter()
    bk.paired(bk.scan(store=store), "tool-v1", "tool-v2")
    t3 = time.perf_counter()
elif which == "polars":  # the floor: bare polars, the same work, none of benchkit's code
    import polars as pl
    runs = pl.read_parquet(all_files(store_path(store), "runs"))
    t1 = time.perf_counter()
    loaded = hwm()
    groups = analysis.polars_compare(runs)
    t2 = time.perf_counter()
    analysis.polars_paired(runs, "tool-v1", "tool-v2")
    t3 = time.perf_counter()
elif which == "polars-lazy":
    import polars as pl
    scan = pl.scan_parquet(all_files(store_path(store), "runs"))
    t1 = time.perf_counter()
    groups = analysis.polars_compare(scan)
    t2 = time.perf_counter()
    analysis.polars_paired(scan, "tool-v1", "tool-v2")
    t3 = time.perf_counter()
elif which == "benchkit":
    runs = bk.runs(store)
    t1 = time.perf_counter()
    loaded = hwm()
    groups = bk.compare(runs, by=["arm", "executor"], metrics=analysis.METRICS).frame.height
    t2 = time.perf_counter()
    bk.paired(runs, "tool-v1", "tool-v2")
    t3 = time.perf_counter()
else:
    df = pd.read_parquet(all_files(store_path(store), "runs"))
    t1 = time.perf_counter()
    loaded = hwm()
    groups = analysis.pandas_compare(df)
    t2 = t3 = time.perf_counter()
peak = hwm()
print(json.dumps(dict(load=t1 - t0, compare=t2 - t1, paired=t3 - t2, groups=groups,
                      base_mb=base, loaded_mb=loaded, peak_mb=peak)))
"""


def measured(which: str, store: Path) -> dict[str, float]:
    """One fresh process's figures for `which` ("benchkit" or "pandas") on the store."""
    code = MEASURE.format(here=str(Path(__file__).parent), which=which, store=str(store))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def best_of(which: str, store: Path, repeat: int = 3) -> dict[str, float]:
    """Each figure's best over `repeat` fresh processes (peak RSS: the largest)."""
    runs = [measured(which, store) for _ in range(repeat)]
    best = {k: min(r[k] for r in runs) for k in runs[0]}
    best["peak_mb"] = max(r["peak_mb"] for r in runs)
    return best


def write_json_runs(folder: Path, runs: pa.Table) -> None:
    folder.mkdir(parents=True)
    for row in runs.to_pylist():
        (folder / f"{row['run_id']}.json").write_text(json.dumps(row, default=str))


def benchkit_work(store: Path) -> int:
    runs = bk.runs(store)
    bk.compare(runs, by=["arm", "executor"], metrics=METRICS)
    return runs.height


def pandas_work(folder: Path) -> int:
    """The same work over one JSON file per run, with pandas."""
    records = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    df = pd.DataFrame.from_records(records)
    df = df[~df["status"].isin(STOPPED)].copy()
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
    print(f"1-minute load at the start: {os.getloadavg()[0]:.2f}")
    print("All runs below are SYNTHETIC (random figures in the runs schema).\n")
    tally = Tally("analysis")
    with tempfile.TemporaryDirectory(prefix="benchkit-analysis-") as scratch:
        root = Path(scratch)
        store = root / "million"
        write_store(store, synthetic_runs(args.rows))
        kit, lazy = best_of("benchkit", store), best_of("lazy", store)
        bare, bare_lazy = best_of("polars", store), best_of("polars-lazy", store)
        pan = best_of("pandas", store)
        print(f"{args.rows:,} synthetic runs, {kit['groups']:.0f} groups (arm x executor),")
        print("fresh process each, best of 3 (peak RSS: the largest of 3):\n")
        print(
            f"{'':26} {'bk.runs()':>10} {'bk.scan()':>10} {'polars':>10} {'pl.scan':>10} "
            f"{'pandas':>10}"
        )

        def row(label: str, key: str, unit: str, *sides: dict[str, float] | None) -> None:
            form = "{:>9.2f}s" if unit == "s" else "{:>8.0f}MB"
            cells = [form.format(side[key]) if side else f"{'-':>10}" for side in sides]
            print(f"{label:26} {' '.join(cells)}")

        row("load (every column)", "load", "s", kit, None, bare, None, pan)
        row("compare", "compare", "s", kit, lazy, bare, bare_lazy, pan)
        row("paired", "paired", "s", kit, lazy, bare, bare_lazy, None)
        row("RSS after imports", "base_mb", "MB", kit, lazy, bare, bare_lazy, pan)
        row("peak RSS after the load", "loaded_mb", "MB", kit, None, bare, None, pan)
        row("peak RSS", "peak_mb", "MB", kit, lazy, bare, bare_lazy, pan)
        print("(bk.scan(), pl.scan: the columns needed read inside compare's time)")
        print("\nbenchkit beside bare polars doing the same work (target: within 1.5x):")
        for label, mine, floor in (
            ("compare, loaded", kit["compare"], bare["compare"]),
            ("paired, loaded", kit["paired"], bare["paired"]),
            ("compare, scanned", lazy["compare"], bare_lazy["compare"]),
            ("paired, scanned", lazy["paired"], bare_lazy["paired"]),
        ):
            ratio = mine / floor
            said = tally.said(ratio <= 1.5, f"{label} {ratio:.2f}x bare polars (<= 1.5x)")
            print(f"  {label:18} {mine:6.3f} s vs {floor:6.3f} s: {ratio:4.2f}x ({said})")
        ratio = lazy["peak_mb"] / bare_lazy["peak_mb"]
        said = tally.said(ratio <= 1.5, f"peak RSS, scanned {ratio:.2f}x bare polars (<= 1.5x)")
        print(
            f"  peak RSS, scanned  {lazy['peak_mb']:6.0f} MB vs {bare_lazy['peak_mb']:6.0f} MB: "
            f"{ratio:4.2f}x ({said})"
        )
        own = kit["peak_mb"] - kit["loaded_mb"]
        fast = tally.said(kit["compare"] < 0.5, f"compare {kit['compare']:.2f} s (< 0.5 s)")
        small = tally.said(lazy["peak_mb"] < 800, f"peak RSS {lazy['peak_mb']:.0f} MB (< 800 MB)")
        print(f"\nbk.compare on the loaded runs {kit['compare']:.2f} s, {own:.0f} MB more than")
        print(f"the load (target < 0.5 s: {fast}); on bk.scan() {lazy['compare']:.2f} s read")
        print(f"included, peak RSS {lazy['peak_mb']:.0f} MB (target < 800 MB: {small})\n")

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
            said = tally.said(ratio >= 10, f"{size:,} runs {ratio:.1f}x pandas+JSON (>= 10x)")
            print(f"{size:>8,} {a:>11.3f} {b:>14.3f} {ratio:>6.1f}x   (target >= 10x: {said})")

    print(f"1-minute load at the end: {os.getloadavg()[0]:.2f}")
    print(tally.last_line())


if __name__ == "__main__":
    main()
