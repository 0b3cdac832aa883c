"""Reading a store whose runs are not yet compacted: 5,000 runs, one file each.

All the runs are SYNTHETIC (random figures in the store's real schema, all its
columns). Each figure comes from a fresh process:

- the first `bk.runs()` on the store of 5,000 files, which reads them in one scan and
  merges the finished runs' files into one part as it goes (the merge's share shown
  beside it, from a read with the merge off);
- a later `bk.runs()` and `benchkit runs` (recovery and the table printed), each the
  best of 3, and `benchkit runs` as the first read of another such store.

Targets on this 2-core machine: `bk.runs()` under 1 s, `benchkit runs` under 2 s.

    .venv/bin/python benchmarks/reads.py [--runs 5000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis import synthetic_runs  # benchmarks/analysis.py, beside this script

from benchkit.store.parquet import write_arrow

READ = """
import time, benchkit.store.query as q  # the modules a read needs, imported first
from benchkit.store.parquet import read_table
t = time.perf_counter()
q.runs({store!r}) if {merge} else read_table(q.store_path({store!r}), "runs", merge=False)
print(time.perf_counter() - t)
"""


def loose_store(folder: Path, runs: int) -> Path:
    """A store of `runs` synthetic runs, one file each, as pilots leave them."""
    rows = synthetic_runs(runs)
    for n in range(runs):
        write_arrow(folder, "runs", f"synthetic-{n:08d}", rows.slice(n, 1))
    return folder


def best(argv: list[str], repeat: int = 3) -> tuple[float, float]:
    """The best wall time of a command, and the best figure it printed (or 0)."""
    walls, said = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - started)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        said.append(float(last) if last.replace(".", "", 1).isdigit() else 0.0)
    return min(walls), min(said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5_000)
    args = parser.parse_args()
    python = sys.executable
    cli = str(Path(python).with_name("benchkit"))

    def read(store: Path, merge: bool = True) -> list[str]:
        return [python, "-c", READ.format(store=str(store), merge=merge)]

    with tempfile.TemporaryDirectory(prefix="benchkit-reads-") as scratch:
        root = Path(scratch)
        first = loose_store(root / "first", args.runs)
        subprocess.run(read(first, merge=False), check=True, capture_output=True)  # warm
        _, scan = best(read(first, merge=False))
        _, merged = best(read(first), repeat=1)  # merges: once only
        parts = len(list((first / "runs").glob("*.parquet")))
        wall, later = best(read(first))
        cli_later, _ = best([cli, "runs", "--store", str(first)])
        second = loose_store(root / "second", args.runs)
        subprocess.run(read(second, merge=False), check=True, capture_output=True)
        cli_first, _ = best([cli, "runs", "--store", str(second)], repeat=1)
    width = synthetic_runs(1).num_columns
    print(f"{args.runs:,} runs, one file each ({width} columns), not compacted")
    print(f"first bk.runs()        {merged:6.2f} s  (the scan {scan:.2f} s, the merge into one")
    print(f"                                  part {merged - scan:.2f} s; {parts} file left)")
    ok = "met" if later < 1 else "MISSED"
    print(f"later bk.runs()        {later:6.2f} s  (target < 1 s: {ok}; {wall:.2f} s with python)")
    ok = "met" if cli_later < 2 else "MISSED"
    print(f"later benchkit runs    {cli_later:6.2f} s  (target < 2 s: {ok})")
    ok = "met" if cli_first < 2 else "MISSED"
    print(f"first benchkit runs    {cli_first:6.2f} s  (target < 2 s: {ok}; it merges too)")
    ok = "met" if scan < 1 else "MISSED"
    print(f"a read of 5,000 files  {scan:6.2f} s  (target < 1 s: {ok}; what the merge saves)")


if __name__ == "__main__":
    main()
