"""Reading a store whose runs are not yet compacted: 5,000 runs, one file each.

All the runs are SYNTHETIC (random figures in the store's real schema). Times
`bk.runs()` in a fresh process (import included, and without), and `benchkit runs`
(recovery and the table printed), each the best of 3. Targets on this 2-core machine:
`bk.runs()` under 1 s, `benchkit runs` under 2 s.

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

READ = "import time, benchkit as bk; t = time.perf_counter(); bk.runs({store!r}); "
READ += "print(time.perf_counter() - t)"


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
    with tempfile.TemporaryDirectory(prefix="benchkit-reads-") as scratch:
        store = Path(scratch) / "store"
        runs = synthetic_runs(args.runs)
        for n in range(args.runs):
            write_arrow(store, "runs", f"synthetic-{n:08d}", runs.slice(n, 1))
        python = sys.executable
        subprocess.run([python, "-c", READ.format(store=str(store))], check=True)  # warm
        wall, inside = best([python, "-c", READ.format(store=str(store))])
        cli, _ = best([str(Path(python).with_name("benchkit")), "runs", "--store", str(store)])
    print(f"{args.runs:,} runs, one file each (not compacted)")
    print(f"bk.runs()      {inside:6.2f} s  (target < 1 s; {wall:.2f} s with python and import)")
    print(f"benchkit runs  {cli:6.2f} s  (target < 2 s)")


if __name__ == "__main__":
    main()
