"""How much of a demo pilot is benchkit's own work?

Runs demo pilots in a scratch store and cache and prints, per pilot, the seconds of
benchkit's own work (prepare, score, record and cleanup) beside the seconds spent on
the bench's environment (built by the first pilot, a copy for the others), in the arm
and in the checks. Target: benchkit's own work under 10% of a pilot's wall.
It also prints what the baseline cache saves: the first pilot on the bench runs the
checks at base, the later ones read them from the store.

    .venv/bin/python benchmarks/overhead.py [--arm ARM ...] [--trials N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchkit.run.launch import pilot_specs
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import plan

TARGET = 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arm",
        action="append",
        default=None,
        help="arm to run (repeat); default: the five demo arms",
    )
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()
    arms = args.arm or ["human", "noop", "replay:agent-a", "replay:agent-b", "fake-agent"]

    with tempfile.TemporaryDirectory(prefix="benchkit-overhead-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        store = Path(scratch) / "store"
        started = time.perf_counter()
        plans = plan(pilot_specs("demo", arms, trials=args.trials, max_cost=0.5))
        planning = time.perf_counter() - started  # the mirror is built once per bench

        print(f"planning (mirror built once for the bench): {planning:.2f} s\n")
        header = (
            f"{'arm':<16}{'wall':>7}{'own':>7}{'env':>7}{'arm':>7}{'checks':>8}{'base':>7}"
            f"{'own %':>8}"
        )
        print(header)
        print("-" * len(header))
        totals = {"wall": 0.0, "own": 0.0, "env": 0.0, "arm": 0.0, "checks": 0.0}
        baselines: list[tuple[bool, float]] = []
        for p in plans:
            t0 = time.perf_counter()
            run = execute_plan(p, store)
            wall = time.perf_counter() - t0
            phases = run.phases
            # Whatever the phases do not cover is benchkit's too: record, cleanup, glue.
            own = phases["prepare"] + phases["score"] + (wall - sum(phases.values()))
            env = phases.get("environment", 0.0)  # built once, then a copy per pilot
            arm = phases["execute"]
            checks = phases.get("baseline", 0.0) + phases.get("verify", 0.0)
            spent = {"wall": wall, "own": own, "env": env, "arm": arm, "checks": checks}
            for key, value in spent.items():
                totals[key] += value
            base = phases.get("baseline", 0.0)
            baselines.append((run.baseline_cached, base))
            print(
                f"{p.spec.arm:<16}{wall:>7.2f}{own:>7.2f}{env:>7.2f}{arm:>7.2f}{checks:>8.2f}"
                f"{base:>7.2f}{own / wall:>8.1%}"
            )
        print("-" * len(header))
        share = totals["own"] / totals["wall"]
        print(
            f"{'all':<16}{totals['wall']:>7.2f}{totals['own']:>7.2f}{totals['env']:>7.2f}"
            f"{totals['arm']:>7.2f}{totals['checks']:>8.2f}{'':>7}{share:>8.1%}"
        )
        verdict = "met" if share < TARGET else "MISSED"
        print(f"\nbenchkit's own work: {share:.1%} of wall (target < {TARGET:.0%}: {verdict})")
        ran = [s for cached, s in baselines if not cached]
        read = [s for cached, s in baselines if cached]
        if ran and read:
            mean_read = sum(read) / len(read)
            print(
                f"baseline: run once in {ran[0]:.2f} s, read from the cache in "
                f"{mean_read:.3f} s on average by {len(read)} later pilots: "
                f"{ran[0] - mean_read:.2f} s saved per pilot ({ran[0] / mean_read:.0f}x)"
            )


if __name__ == "__main__":
    main()
