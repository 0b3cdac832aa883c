"""The same pilots one after another, in two worker processes (`--jobs 2`) and as Ray
tasks on a local cluster of two CPUs (`--launcher ray`).

Builds the demo bench's environment and its baseline first (a warm cache for all),
then runs the same 8 demo pilots (four arms, two trials) serially, with `jobs=2`,
and on Ray (started, and its workers warmed, before its clock: "once started"), each
into a store of its own, in rounds (serial then jobs, again; then Ray's), and prints
the wall of each round side by side and their medians. Targets on a 2-core machine: `--jobs 2` at
least 1.7x faster than serial; Ray within 15% of `--jobs 2`, both on the medians.

    .venv/bin/python benchmarks/parallel.py [--trials N] [--jobs N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchkit.records import LauncherName
from benchkit.run.cluster import start_local
from benchkit.run.launch import pilot_specs, run_pilots

ARMS = ["human", "noop", "replay:agent-a", "replay:agent-b"]
TARGET = 1.7
RAY_WITHIN = 0.15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ways: dict[str, LauncherName] = {
        "serial": "serial",
        f"jobs={args.jobs}": "processes",
        "ray": "ray",
    }
    walls: dict[str, list[float]] = {label: [] for label in ways}
    with tempfile.TemporaryDirectory(prefix="benchkit-parallel-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        warm = Path(scratch) / "warm"
        run_pilots(pilot_specs("demo", ["noop"]), store=warm)  # environment, mirror
        specs = pilot_specs("demo", ARMS, trials=args.trials)

        def timed(label: str, launcher: LauncherName, round_: int) -> None:
            store = Path(scratch) / f"{label}-{round_}"
            store.mkdir()
            os.symlink(warm / "baselines", store / "baselines")  # the same base checks
            started = time.perf_counter()
            runs = run_pilots(specs, store=store, jobs=args.jobs, launcher=launcher)
            walls[label].append(time.perf_counter() - started)
            assert all(r.status == "ok" for r in runs), [r.failure_detail for r in runs]

        for round_ in range(args.rounds):  # without Ray: its daemons would take a share
            for label, launcher in list(ways.items())[:2]:
                timed(label, launcher, round_)
        import ray  # here: the workers of `--jobs` import what __main__ imports

        started = time.perf_counter()  # Ray, and its workers warmed, before its clock
        start_local(args.jobs)
        warming = pilot_specs("demo", ["noop"], trials=args.jobs)
        run_pilots(warming, store=Path(scratch) / "warm-ray", launcher="ray", jobs=args.jobs)
        ray_start = time.perf_counter() - started
        for round_ in range(args.rounds):
            timed("ray", "ray", round_)
        ray.shutdown()
    middle = {label: statistics.median(each) for label, each in walls.items()}
    serial, parallel, on_ray = middle.values()
    print(f"{len(specs)} demo pilots ({', '.join(ARMS)} x {args.trials}), warm cache")
    print(f"(Ray's start and its workers' first pilots, not counted: {ray_start:.2f} s)\n")
    rounds = "".join(f"{f'round {n + 1}':>10}" for n in range(args.rounds))
    print(f"{'':<10}{rounds}{'median':>10}  vs serial")
    for label, each in walls.items():
        cells = "".join(f"{wall:>8.2f} s" for wall in each)
        print(f"{label:<10}{cells}{middle[label]:>8.2f} s  {serial / middle[label]:5.2f}x")
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
