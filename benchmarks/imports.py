"""Importing a large CSV file of runs recorded elsewhere: peak memory and time.

Two files of valid runs, 10 MB and 100 MB (or the sizes given), each row a published
table's kind of row: a bench, an arm, a status, a verdict, a check's status, a cost,
a wall time, a trial and a list of flaky files. Each is imported by `benchkit import`
into an empty store, in a fresh process; the figures are that process's own peak
resident memory (from `wait4`) and its wall time, beside the file's size and a
one-row file's import (the floor: Python, polars and pyarrow loaded), and the run
count read back from the store (so a figure is never that of a failed import).

Target on this 2-core machine: a 100 MB file under 1 GB of peak memory (a few times
the file's size).

    .venv/bin/python benchmarks/imports.py [--mb 10 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

HEADER = "bench,arm,status,test_verdict,test_status,cost_usd,wall_s,trial,flaky_files\n"
VERDICTS = ("pass", "fail", "flaky-pass")


def written(path: Path, megabytes: int) -> int:
    """A CSV file of valid runs of about this size; its row count."""
    size, n = megabytes * 1024 * 1024, 0
    with open(path, "w") as file:
        file.write(HEADER)
        written = len(HEADER)
        while written < size:
            flaky = f"tests/test_{n % 13}.py;tests/test_{n % 7}.py" if n % 9 == 0 else ""
            line = (
                f"bench-{n % 50},arm-{n % 7},ok,{VERDICTS[n % 3]},ok,"
                f"{(n % 100) / 1000:.4f},{n % 600 + 0.5},{n % 5 + 1},{flaky}\n"
            )
            file.write(line)
            written += len(line)
            n += 1
    return n


def imported(path: Path, store: Path) -> tuple[int, float, float]:
    """`benchkit import` of the file in a fresh process: its exit code, peak RSS (MB)
    and wall time (s)."""
    cli = str(Path(sys.executable).with_name("benchkit"))
    start = time.perf_counter()
    process = subprocess.Popen(
        [cli, "import", str(path), "--store", str(store)], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss / 1024, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[10, 100])
    sizes = parser.parse_args().mb
    with tempfile.TemporaryDirectory(prefix="bk-imports-") as scratch:
        one = Path(scratch) / "one.csv"
        one.write_text(HEADER + "b,a,ok,pass,ok,0.1,1.5,1,\n")
        code, floor, took = imported(one, Path(scratch) / "store-one")
        if code != 0:
            sys.exit(f"benchkit import of a one-row file failed (exit {code})")
        print(f"one-row CSV: peak RSS {floor:,.0f} MB, {took:.1f} s")
        for megabytes in sizes:
            path = Path(scratch) / f"runs-{megabytes}mb.csv"
            rows = written(path, megabytes)
            store = Path(scratch) / f"store-{megabytes}"
            code, peak, took = imported(path, store)
            if code != 0:
                sys.exit(f"benchkit import of {path.name} failed (exit {code})")
            held = pl.scan_parquet(store / "runs" / "*.parquet").select(pl.len()).collect()
            file_mb = path.stat().st_size / 1024 / 1024
            print(
                f"{file_mb:6.1f} MB CSV, {rows:,} runs: peak RSS {peak:,.0f} MB "
                f"(the floor + {(peak - floor) / file_mb:.1f}x the file), {took:.1f} s, "
                f"{held.item():,} runs in the store"
            )
            path.unlink()


if __name__ == "__main__":
    main()
