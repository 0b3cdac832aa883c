"""Reading a store whose runs are not yet compacted: 5,000 runs, one file each.

Two such stores, side by side:

- SYNTHETIC runs: random figures in the store's real schema (`analysis.py`'s), where
  most columns a real run fills are left empty;
- REAL-SHAPED runs: the `runs` files of four real demo pilots (human, noop and two
  replayed patches, run first by this script), copied 5,000 times, each copy with
  its own run id: every column a pilot fills, its lists and strings as a pilot
  writes them.

Each figure comes from a fresh process:

- the first `bk.runs()`, which reads the 5,000 files in one scan and merges the
  finished runs' files into one part as it goes; the merge is timed apart, inside
  the same read;
- the scan alone (a read with the merge off, the best of 3), and beside it polars'
  own scan of the same files with no benchkit code (`pl.scan_parquet` with the first
  file's schema, the best of 3): the floor the format and the engine set here;
- a later `bk.runs()` and `benchkit runs` (recovery and the table printed), each the
  best of 3, and `benchkit runs` and `bk.scan().collect()` each as the first read of
  another such store;
- `benchkit compact` of another (no target: what a long matrix's end does).

Targets on this 2-core machine: `bk.runs()` under 1 s, `benchkit runs` under 2 s.

    .venv/bin/python benchmarks/reads.py [--runs 5000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
from analysis import synthetic_runs  # benchmarks/analysis.py, beside this script

from benchkit.store.parquet import all_files, read_arrow, write_arrow

READ = """
import time, benchkit.store.query as q, benchkit.store.parquet as p
merges = []
merge = p.merge_read_runs
def timed(*args):
    started = time.perf_counter()
    merged = merge(*args)
    merges.append(time.perf_counter() - started)
    return merged
p.merge_read_runs = timed
t = time.perf_counter()
{read}
print(f"{{time.perf_counter() - t:.6f}} {{sum(merges):.6f}}")
"""
RUNS = "q.runs({store!r})"
SCAN = "q.scan(store={store!r}).collect()"
UNMERGED = "p.read_table(q.store_path({store!r}), 'runs', merge=False)"
FLOOR = """
import glob, time, polars as pl
files = sorted(glob.glob({folder!r} + "/*.parquet"))
schema = pl.read_parquet_schema(files[0])
t = time.perf_counter()
pl.scan_parquet(files, schema=schema, missing_columns="insert").collect()
print(f"{{time.perf_counter() - t:.6f}}")
"""
ARMS = ("human", "noop", "replay:agent-a", "replay:agent-b")

Rows = Callable[[int], pl.DataFrame]  # the nth run's one-row frame


def synthetic(runs: int) -> Rows:
    table = synthetic_runs(runs)
    return lambda n: pl.DataFrame(table.slice(n, 1))


def real_shaped(scratch: Path) -> Rows:
    """Four real demo pilots' own `runs` files, as rows to copy under new ids."""
    cli = str(Path(sys.executable).with_name("benchkit"))
    store = scratch / "pilots"
    argv = [cli, "pilot", "--bench", "demo", "--quiet", "--store", str(store)]
    done = subprocess.run([*argv, *(f"--arm={a}" for a in ARMS)], capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: a run that is not ok, as noop's is
        sys.exit(f"the demo pilots failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    pilots = [pl.DataFrame(read_arrow(f)) for f in all_files(store, "runs")]
    if len(pilots) != len(ARMS):
        sys.exit(f"the demo pilots left {len(pilots)} runs files, not {len(ARMS)}")
    return lambda n: pilots[n % len(pilots)].with_columns(pl.lit(f"copy-{n:08d}").alias("run_id"))


def loose_store(folder: Path, rows: Rows, runs: int) -> Path:
    """A store of `runs` runs, one file each, as pilots leave them: on disk, as a
    store's files are once written (a file not yet written out is removed 5 times
    as fast: a merge's figure would flatter)."""
    for n in range(runs):
        row = rows(n)
        write_arrow(folder, "runs", row["run_id"][0], row.to_arrow())
    os.sync()
    return folder


def best(argv: list[str], repeat: int = 3) -> tuple[float, list[float]]:
    """The best wall time of a command, and the figures its best run printed."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - started
        last = done.stdout.strip().splitlines()[-1].split() if done.stdout.strip() else []
        runs.append((wall, [float(x) for x in last if x.replace(".", "", 1).isdigit()]))
    return min(runs)


def figures(root: Path, rows: Rows, runs: int) -> dict[str, float]:
    python = sys.executable
    cli = str(Path(python).with_name("benchkit"))

    def read(store: Path, merge: bool = True, how: str = RUNS) -> list[str]:
        what = (how if merge else UNMERGED).format(store=str(store))
        return [python, "-c", READ.format(read=what)]

    first = loose_store(root / "first", rows, runs)
    subprocess.run(read(first, merge=False), check=True, capture_output=True)  # warm
    _, (scan, _) = best(read(first, merge=False))
    _, (floor,) = best([python, "-c", FLOOR.format(folder=str(first / "runs"))])
    _, (merged, merge) = best(read(first), repeat=1)  # merges: once only
    parts = len(list((first / "runs").glob("*.parquet")))
    wall, (later, _) = best(read(first))
    cli_later, _ = best([cli, "runs", "--store", str(first)])
    second = loose_store(root / "second", rows, runs)
    subprocess.run(read(second, merge=False), check=True, capture_output=True)
    cli_first, _ = best([cli, "runs", "--store", str(second)], repeat=1)
    third = loose_store(root / "third", rows, runs)
    subprocess.run(read(third, merge=False), check=True, capture_output=True)
    _, (scanned, _) = best(read(third, how=SCAN), repeat=1)
    fourth = loose_store(root / "fourth", rows, runs)
    subprocess.run(read(fourth, merge=False), check=True, capture_output=True)
    compacted, _ = best([cli, "compact", "--store", str(fourth)], repeat=1)
    return {
        "first": merged,
        "merge": merge,
        "files": parts,
        "later": later,
        "later_python": wall,
        "cli_later": cli_later,
        "cli_first": cli_first,
        "scan": scan,
        "floor": floor,
        "lazy": scanned,
        "compact": compacted,
        "columns": float(rows(0).width),
        "filled": float(sum(1 for c in rows(0).get_columns() if c.null_count() == 0)),
    }


def verdict(seconds: float, target: float) -> str:
    return "met" if seconds < target else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchkit-reads-") as scratch:
        root = Path(scratch)
        os.environ.setdefault("BENCHKIT_CACHE", str(root / "cache"))
        kinds = {"synthetic": synthetic(args.runs), "real-shaped": real_shaped(root)}
        seen = {kind: figures(root / kind, rows, args.runs) for kind, rows in kinds.items()}
    s, r = seen["synthetic"], seen["real-shaped"]
    print(f"{args.runs:,} runs, one file each, not compacted")
    print(f"{'':26s} {'synthetic':>16s} {'real-shaped':>16s}")
    print(
        f"{'columns a file (filled)':26s} {s['columns']:9.0f} ({s['filled']:2.0f})   "
        f"{r['columns']:9.0f} ({r['filled']:2.0f})"
    )
    lines = [
        ("first bk.runs()", "first", 1.0, "it merges"),
        ("  of which the merge", "merge", 0.0, ""),
        ("later bk.runs()", "later", 1.0, ""),
        ("later benchkit runs", "cli_later", 2.0, ""),
        ("first benchkit runs", "cli_first", 2.0, "it merges too"),
        ("first bk.scan().collect()", "lazy", 1.0, "it merges too"),
        ("the scan alone", "scan", 1.0, "a read with the merge off"),
        ("  polars' own scan", "floor", 0.0, "no benchkit code: the floor"),
        ("benchkit compact", "compact", 0.0, ""),
    ]
    for label, key, target, why in lines:
        cells = "".join(
            f" {f[key]:6.2f} s {verdict(f[key], target) if target else '':7s}" for f in (s, r)
        )
        said = f"target < {target:.0f} s{'; ' + why if why else ''}" if target else why
        said = f"({said})" if said else ""
        print(f"{label:26s}{cells}  {said}".rstrip())
    print(
        f"files left after the first read: {s['files']:.0f} and {r['files']:.0f}; a later "
        f"bk.runs() with python's start: {s['later_python']:.2f} s and {r['later_python']:.2f} s"
    )


if __name__ == "__main__":
    main()
