"""The same pilots one after another, in two worker processes (`--jobs 2`) and as Ray
tasks on a local cluster of two CPUs (`--launcher ray`).

Builds the demo bench's environment and its baseline first (a warm cache for all),
then runs the same 8 demo pilots (four arms, two trials) serially, with `jobs=2`,
and on Ray (started, and its workers warmed, after the first two and before its
clock: "once started"), each into a store of its own, and prints the wall of each
side by side. Targets on a 2-core machine: `--jobs 2` at least 1.7x faster than serial;
Ray within 15% of `--jobs 2`.

    .venv/bin/python benchmarks/parallel.py [--trials N] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import ray

from benchkit.run.cluster import start_local
from benchkit.run.launch import pilot_specs, run_pilots
from benchkit.store.records import Launcher

ARMS = ["human", "noop", "replay:agent-a", "replay:agent-b"]
TARGET = 1.7
RAY_WITHIN = 0.15


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
        ray_start = 0.0
        ways: list[tuple[str, Launcher]] = [
            ("serial", "serial"),
            (f"jobs={args.jobs}", "processes"),
            ("ray", "ray"),
        ]
        for label, launcher in ways:
            if launcher == "ray":  # started, and its workers warmed, before the clock
                started = time.perf_counter()
                start_local(args.jobs)
                warming = pilot_specs("demo", ["noop"], trials=args.jobs)
                run_pilots(warming, store=Path(scratch) / "warm-ray", launcher="ray", jobs=2)
                ray_start = time.perf_counter() - started
            store = Path(scratch) / label
            (store / "baselines").parent.mkdir(parents=True, exist_ok=True)
            os.symlink(warm / "baselines", store / "baselines")  # the same base checks
            started = time.perf_counter()
            runs = run_pilots(specs, store=store, jobs=args.jobs, launcher=launcher)
            walls[label] = time.perf_counter() - started
            assert all(r.status == "ok" for r in runs), [r.failure_detail for r in runs]
        ray.shutdown()
    serial, parallel, on_ray = walls.values()
    print(f"{len(specs)} demo pilots ({', '.join(ARMS)} x {args.trials}), warm cache")
    print(f"(Ray's start and its workers' first pilots, not counted: {ray_start:.2f} s)\n")
    for label, wall in walls.items():
        print(f"{label:<10}{wall:>8.2f} s  {serial / wall:5.2f}x serial")
    speedup = serial / parallel
    verdict = "met" if speedup >= TARGET else "MISSED"
    slower = on_ray / parallel - 1
    ray_verdict = "met" if slower <= RAY_WITHIN else "MISSED"
    print(
        f"\njobs={args.jobs} {speedup:.2f}x serial (target >= {TARGET}x: {verdict}); "
        f"ray {slower:+.0%} of jobs={args.jobs} (target within {RAY_WITHIN:.0%}: {ray_verdict})"
    )


if __name__ == "__main__":
    main()
