"""Reading a store whose runs are not yet compacted: 5,000 runs, one file each.

Two such stores, side by side:

- SYNTHETIC runs: random figures in the store's real schema (`analysis.py`'s), where
  most columns a real run fills are left empty;
- REAL-SHAPED runs: the `runs` files of four real demo pilots (human, noop and two
  replayed patches, run first by this script), copied 5,000 times, each copy with
  its own run id: every column a pilot fills, its lists and strings as a pilot
  writes them.

Each figure comes from a fresh process:

- `bk.runs()`, which reads the 5,000 files in one scan and writes nothing (the files
  are the same before and after, or the script stops), and beside it polars' own
  scan of the same files with no benchkit code (`pl.scan_parquet` with the first
  file's schema): the floor the format and the engine set;
- `benchkit runs` (recovery and the table printed), a whole process, beside polars'
  scan in a whole process (python started, polars imported, the files scanned), and
  `bk.scan().collect()`; these four each the best of 3, taken in turns (one of each,
  then again: this machine slows under minutes of load);
- `benchkit compact`, then on the compacted store `benchkit runs` beside `bk.runs()`
  in a process of its own (a process each, its whole life; in turns too).

Targets on this 2-core machine: the first read, `bk.runs()` and `benchkit runs`
alike, within 1.25x of polars' own scan (in a process, for the command); on the
compacted store, `benchkit runs` within 0.2 s of `bk.runs()` in a process.

    .venv/bin/python benchmarks/reads.py [--runs 5000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import turns  # benchmarks/turns.py, beside this script
from analysis import synthetic_runs  # benchmarks/analysis.py, beside this script
from tally import Tally  # benchmarks/tally.py, beside this script

from benchkit.store.layout import all_files
from benchkit.store.parquet import write_arrow
from benchkit.store.reads import read_arrow

READ = """
import time, benchkit.store.query as q
t = time.perf_counter()
{read}
print(f"{{time.perf_counter() - t:.6f}}")
"""
RUNS = "q.runs({store!r})"
SCAN = "q.scan(store={store!r}).collect()"
FLOOR = """
import glob, time, polars as pl
files = sorted(glob.glob({folder!r} + "/*.parquet"))
schema = pl.read_parquet_schema(files[0])
t = time.perf_counter()
pl.scan_parquet(files, schema=schema, missing_columns="insert").collect()
print(f"{{time.perf_counter() - t:.6f}}")
"""
ARMS = ("human", "noop", "replay:agent-a", "replay:agent-b")
WITHIN = 1.25  # a first read next to polars' own scan of the same files
CLI_MORE_S = 0.2  # `benchkit runs` on a compacted store beside `bk.runs()` in a process

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
    [found] = in_turns([argv], repeat)
    return found


def in_turns(commands: list[list[str]], repeat: int = 3) -> list[tuple[float, list[float]]]:
    """Each command's best wall time and the figures its best run printed (its last
    line's numbers), the commands run in turns (see `turns`)."""
    found = []
    for wall, out in turns.bests(commands, repeat):
        last = out.strip().splitlines()[-1].split() if out.strip() else []
        found.append((wall, [float(x) for x in last if x.replace(".", "", 1).isdigit()]))
    return found


def figures(root: Path, rows: Rows, runs: int) -> dict[str, float]:
    python = sys.executable
    cli = str(Path(python).with_name("benchkit"))

    def read(store: Path, how: str = RUNS) -> list[str]:
        return [python, "-c", READ.format(read=how.format(store=str(store)))]

    store = loose_store(root / "store", rows, runs)
    listed = sorted(os.listdir(store / "runs"))
    subprocess.run(read(store), check=True, capture_output=True)  # warm
    floor_read = [python, "-c", FLOOR.format(folder=str(store / "runs"))]
    cli_read = [cli, "runs", "--store", str(store)]
    timed = in_turns([read(store), floor_read, cli_read, read(store, how=SCAN)])
    (wall, (first,)), (floor_process, (floor,)), (cli_runs, _), (_, (scanned,)) = timed
    if sorted(os.listdir(store / "runs")) != listed:
        sys.exit("a read wrote to the store")
    compacted, _ = best([cli, "compact", "--store", str(store)], repeat=1)
    (after_process, (after,)), (cli_after, _) = in_turns([read(store), cli_read])
    return {
        "first": first,
        "python": wall,
        "floor": floor,
        "floor_process": floor_process,
        "cli": cli_runs,
        "after_process": after_process,
        "cli_after": cli_after,
        "lazy": scanned,
        "compact": compacted,
        "after": after,
        "files": float(len(list((store / "runs").glob("*.parquet")))),
        "columns": float(rows(0).width),
        "filled": float(sum(1 for c in rows(0).get_columns() if c.null_count() == 0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5_000)
    args = parser.parse_args()
    print(f"1-minute load at the start: {os.getloadavg()[0]:.2f}")
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
        ("bk.runs()", "first", "a read: nothing written"),
        ("  polars' own scan", "floor", "no benchkit code: the floor"),
        ("benchkit runs", "cli", "a whole process"),
        ("  polars' scan, a process", "floor_process", "python, polars, the scan"),
        ("bk.scan().collect()", "lazy", ""),
        ("benchkit compact", "compact", ""),
        ("bk.runs() compacted", "after", ""),
        ("  the same, a process", "after_process", "python, benchkit, the read"),
        ("benchkit runs compacted", "cli_after", "a whole process"),
    ]
    for label, key, why in lines:
        cells = "".join(f" {f[key]:9.2f} s      " for f in (s, r))
        print(f"{label:26s}{cells}  {'(' + why + ')' if why else ''}".rstrip())
    tally = Tally("reads")
    for kind, f in (("synthetic", s), ("real-shaped", r)):
        ratio, command = f["first"] / f["floor"], f["cli"] / f["floor_process"]
        more = f["cli_after"] - f["after_process"]
        first = tally.said(ratio <= WITHIN, f"{kind} bk.runs() {ratio:.2f}x (<= {WITHIN}x)")
        cli = tally.said(command <= WITHIN, f"{kind} benchkit runs {command:.2f}x (<= {WITHIN}x)")
        after = tally.said(
            more <= CLI_MORE_S, f"{kind} compacted benchkit runs {more:+.2f} s (<= +{CLI_MORE_S} s)"
        )
        print(
            f"{kind}: bk.runs() {ratio:.2f}x polars' own scan (target <= {WITHIN}x: "
            f"{first}); benchkit runs {command:.2f}x polars' scan in a "
            f"process (target <= {WITHIN}x: {cli}); compacted, "
            f"benchkit runs {more:+.2f} s over bk.runs() in a process (target <= "
            f"+{CLI_MORE_S} s: {after})"
        )
    print(
        f"files after compact: {s['files']:.0f} and {r['files']:.0f}; bk.runs() with "
        f"python's start: {s['python']:.2f} s and {r['python']:.2f} s"
    )
    print(f"1-minute load at the end: {os.getloadavg()[0]:.2f}")
    print(tally.last_line())


if __name__ == "__main__":
    main()
