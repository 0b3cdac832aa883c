"""The same pilots one after another and in two worker processes (`--jobs 2`).

Builds the demo bench's environment and its baseline first (a warm cache for both),
then runs the same 8 demo pilots (four arms, two trials) serially and with `jobs=2`,
each into a store of its own, and prints the wall of each side by side with the
speed-up. Target on a 2-core machine: `--jobs 2` at least 1.7x faster than serial.
Ray is not a launcher yet: it is not measured here.

    .venv/bin/python benchmarks/parallel.py [--trials N] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchkit.run.launch import pilot_specs, run_pilots

ARMS = ["human", "noop", "replay:agent-a", "replay:agent-b"]
TARGET = 1.7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchkit-parallel-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        warm = Path(scratch) / "warm"
        run_pilots(pilot_specs("demo", ["noop"]), store=warm)  # environment, mirror
        specs = pilot_specs("demo", ARMS, trials=args.trials)
        walls = {}
        for label, jobs in (("serial", 1), (f"jobs={args.jobs}", args.jobs)):
            store = Path(scratch) / label
            (store / "baselines").parent.mkdir(parents=True, exist_ok=True)
            os.symlink(warm / "baselines", store / "baselines")  # the same base checks
            started = time.perf_counter()
            runs = run_pilots(specs, store=store, jobs=jobs)
            walls[label] = time.perf_counter() - started
            assert all(r.status == "ok" for r in runs), [r.failure_detail for r in runs]
    serial, parallel = walls.values()
    print(f"{len(specs)} demo pilots ({', '.join(ARMS)} x {args.trials}), warm cache\n")
    for label, wall in walls.items():
        print(f"{label:<10}{wall:>8.2f} s")
    speedup = serial / parallel
    verdict = "met" if speedup >= TARGET else "MISSED"
    print(f"\nspeed-up {speedup:.2f}x (target >= {TARGET}x on 2 cores: {verdict})")


if __name__ == "__main__":
    main()
