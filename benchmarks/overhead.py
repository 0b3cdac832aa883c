"""How much of a demo pilot is benchkit's own work?

Runs a batch of demo pilots (four arms, two trials: 8) in a scratch store and cache,
after one warm-up pilot that builds the environment and the base checks, and prints
per pilot the seconds of benchkit's own work beside the seconds of the bench's
environment copy, of the arm and of the checks. benchkit's own work is every phase
that is not the bench's or the arm's: `start` (the pilot's folder, first heartbeat,
first row), `prepare` (clone, worktree), `score`, `record`, and everything outside
`wall_s` (the cleanup, the glue between pilots), plus the batch's share of the
process start-up and planning. The folders a pilot is done with are removed by a
thread while the next pilot works; the wait for the last of them at the end is
counted too. The base worktree made for the base checks and the
arm's diff are timed inside `baseline` and `execute`, counted as the bench's and the
arm's: the figure is a floor. Target: under 3% of the batch's wall.

It also prints what the baseline cache saves, as a share of a pilot's wall time: the
first pilot on the bench runs the checks at base, the later ones read them.

    .venv/bin/python benchmarks/overhead.py [--arm ARM ...] [--trials N] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

STARTED = time.perf_counter()

from benchkit.run.launch import pilot_specs  # noqa: E402
from benchkit.run.pilot import execute_plan  # noqa: E402
from benchkit.run.plan import plan  # noqa: E402
from benchkit.workspace.cache import trash_emptied  # noqa: E402

TARGET = 0.03
OWN = ("start", "prepare", "score", "record")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arm",
        action="append",
        default=None,
        help="arm to run (repeat); default: the five demo arms",
    )
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    args = parser.parse_args()
    arms = args.arm or ["human", "noop", "replay:agent-a", "replay:agent-b"]
    imported = time.perf_counter() - STARTED

    with tempfile.TemporaryDirectory(prefix="benchkit-overhead-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        store = Path(scratch) / "store"
        started = time.perf_counter()
        warm = plan(pilot_specs("demo", ["noop"]), sandbox=args.sandbox)[0]
        execute_plan(warm, Path(scratch) / "warm")
        warm_up = time.perf_counter() - started  # environment, mirror, base checks: cached
        started = time.perf_counter()
        specs = pilot_specs("demo", arms, trials=args.trials, max_cost=0.5)
        plans = plan(specs, sandbox=args.sandbox)
        planning = time.perf_counter() - started
        shared = (imported + planning) / len(plans)  # the batch's start-up, a pilot's share

        print(f"sandbox: {plans[0].sandbox} (--sandbox {args.sandbox}, as `benchkit pilot`)")
        print(f"warm-up pilot (environment, mirror, base checks): {warm_up:.2f} s")
        print(f"start-up of this process {imported:.2f} s, planning {planning:.2f} s: ")
        print(f"  {shared:.3f} s a pilot over a batch of {len(plans)}\n")
        header = (
            f"{'arm':<16}{'wall':>7}{'own':>7}{'env':>7}{'arm':>7}{'checks':>8}{'base':>7}"
            f"{'own %':>8}"
        )
        print(header)
        print("-" * len(header))
        totals = {"wall": 0.0, "own": 0.0, "env": 0.0, "arm": 0.0, "checks": 0.0}
        baselines: list[tuple[bool, float]] = []
        parts = dict.fromkeys((*OWN, "outside"), 0.0)  # benchkit's own work, by where it goes
        for p in plans:
            t0 = time.perf_counter()
            run = execute_plan(p, store)
            wall = time.perf_counter() - t0 + shared
            phases = run.phases
            # Whatever the phases do not cover is benchkit's too: cleanup, glue, start-up.
            own = sum(phases.get(k, 0.0) for k in OWN) + (wall - sum(phases.values()))
            for key in OWN:
                parts[key] += phases.get(key, 0.0)
            parts["outside"] += wall - shared - sum(phases.values())
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
        started = time.perf_counter()
        trash_emptied()  # the folders removed meanwhile by a thread: the last one waited for
        waited = time.perf_counter() - started
        totals["own"] += waited
        totals["wall"] += waited
        print("-" * len(header))
        print(f"{'trash, waited at the end':<44}{waited:>8.2f}")
        share = totals["own"] / totals["wall"]
        print(
            f"{'all':<16}{totals['wall']:>7.2f}{totals['own']:>7.2f}{totals['env']:>7.2f}"
            f"{totals['arm']:>7.2f}{totals['checks']:>8.2f}{'':>7}{share:>8.1%}"
        )
        mean = {k: v / len(plans) for k, v in parts.items()}
        print(
            "own work a pilot: start-up "
            f"{shared:.3f}, "
            + ", ".join(f"{k} {v:.3f}" for k, v in mean.items())
            + " s (outside: cleanup and the glue between pilots)"
        )
        verdict = "met" if share < TARGET else "MISSED"
        print(f"\nbenchkit's own work: {share:.1%} of wall (target < {TARGET:.0%}: {verdict})")
        ran = [s for cached, s in baselines if not cached]
        read = [s for cached, s in baselines if cached]
        pilot_wall = totals["wall"] / len(plans)
        if ran and read:
            mean_read = sum(read) / len(read)
            saved = ran[0] - mean_read
            print(
                f"baseline: run once in {ran[0]:.2f} s, read from the cache in "
                f"{mean_read:.3f} s by {len(read)} later pilots: {saved:.2f} s saved a "
                f"pilot, {saved / (pilot_wall + saved):.0%} of what its wall would be"
            )


if __name__ == "__main__":
    main()
