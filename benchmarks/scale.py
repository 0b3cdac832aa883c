"""Figures a lab meets at scale: planning a large matrix, and `status` on a large store.

1. A matrix of 2,700 units: 300 benches (SYNTHETIC SWE-bench instances of one
   repository, `swebench_plan.py`'s) x 3 arms (`noop`, `human`, a predictions file)
   x 3 trials, planned as `benchkit pilot` plans it (every input checked: each bench
   file, the mirror, base and the human reference resolved, each environment's
   recipe, the predictions read). Target: under 5 s.
2. `benchkit status` (a process of its own, as a user types it) on a store of 10,000
   SYNTHETIC runs (`analysis.py`'s, compacted as `benchkit compact` leaves a store),
   beside the floor of a process that imports benchkit and reads the same runs with
   `bk.runs()`. Target: under 1 s.

Each figure is the best of 3, with the 1-minute load beside it.

    .venv/bin/python benchmarks/scale.py [--benches 300] [--runs 10000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis import synthetic_runs  # benchmarks/analysis.py, beside this script
from swebench_plan import task_set  # benchmarks/swebench_plan.py, beside this script

from benchkit.run.launch import pilot_specs
from benchkit.run.plan import plan
from benchkit.store.parquet import write_arrow
from benchkit.swebench import benches

PLAN_TARGET_S = 5.0
STATUS_TARGET_S = 1.0
FLOOR = "import benchkit as bk, sys; bk.runs(sys.argv[1])"


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def best(action: object, times: int = 3) -> float:
    took = []
    for _ in range(times):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        took.append(time.perf_counter() - start)
    return min(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benches", type=int, default=300)
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    print(f"1-minute load at the start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="benchkit-scale-") as tmp:
        folder = Path(tmp)
        os.environ["BENCHKIT_CACHE"] = str(folder / "cache")
        os.environ["BENCHKIT_STORE"] = str(folder / "store")
        repo, instances, preds, environments = task_set(folder, args.benches)
        written = benches(
            instances,
            repos={"acme/many": str(repo)},
            environments=environments,
            out=folder / "benches",
        )
        arms = ["noop", "human", f"prediction:{preds}"]
        specs = pilot_specs([str(b) for b in written], arms, trials=3)
        plan(specs[:1])  # the mirror made once, as any first pilot makes it
        planned = best(lambda: plan(specs))
        verdict = "met" if planned < PLAN_TARGET_S else "MISSED"
        print(
            f"planning {len(specs):,} units ({len(written)} benches x {len(arms)} arms x 3 "
            f"trials): {planned:.2f} s (target < {PLAN_TARGET_S:g} s: {verdict}), "
            f"load {load()}"
        )

        store = folder / "runs-store"
        write_arrow(store, "runs", "part-synthetic", synthetic_runs(args.runs))
        cli = str(Path(sys.executable).with_name("benchkit"))

        def status() -> None:
            subprocess.run([cli, "status", "--store", str(store)], check=True, capture_output=True)

        def floor() -> None:
            subprocess.run([sys.executable, "-c", FLOOR, str(store)], check=True)

        shown, least = best(status), best(floor)
        verdict = "met" if shown < STATUS_TARGET_S else "MISSED"
        print(
            f"benchkit status on {args.runs:,} runs: {shown:.2f} s (target < "
            f"{STATUS_TARGET_S:g} s: {verdict}); floor, a process reading them with "
            f"bk.runs(): {least:.2f} s ({shown / least:.2f}x), load {load()}"
        )

    print(f"1-minute load at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
