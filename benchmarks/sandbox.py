"""What the sandbox costs a pilot: the same demo pilots with and without bubblewrap.

Runs each arm `--trials` times with `--sandbox none` and with `--sandbox bwrap`,
interleaved (so a busy machine weighs on both alike), in one scratch cache and store,
and prints the mean seconds of the arm and of the checks after it, and the wall, side
by side with their ratio. The baseline is read from the cache by every pilot but the
first, which is left out.

    .venv/bin/python benchmarks/sandbox.py [--arm ARM ...] [--trials N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from benchkit.run.launch import pilot_specs
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import plan
from benchkit.store.store import Store
from benchkit.workspace.sandbox import bwrap_problem

MODES = ("none", "bwrap")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", action="append", default=None, help="default: human, noop")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem:
        raise SystemExit(f"benchmarks/sandbox.py: {problem}")
    arms = args.arm or ["human", "noop"]
    with tempfile.TemporaryDirectory(prefix="benchkit-sandbox-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        store = Path(scratch) / "store"
        specs = pilot_specs("demo", arms, trials=args.trials)
        plans = {mode: plan(specs, sandbox=mode) for mode in MODES}
        execute_plan(plans["none"][0], Store(store))  # builds the environment and the baseline
        seen: dict[str, dict[str, list[float]]] = {
            m: {"arm": [], "verify": [], "wall": []} for m in MODES
        }
        for n in range(len(specs)):
            for mode in MODES:
                run = execute_plan(plans[mode][n], Store(store))
                assert run.sandbox == mode and run.status == "ok", run.failure_detail
                seen[mode]["arm"].append(run.phases["execute"])
                seen[mode]["verify"].append(run.phases.get("verify", 0.0))
                seen[mode]["wall"].append(run.wall_s)
    print(f"{len(specs)} pilots each ({', '.join(arms)} x {args.trials}), mean seconds\n")
    print(f"{'':<10}{'none':>9}{'bwrap':>9}{'ratio':>8}")
    for part in ("arm", "verify", "wall"):
        none, bwrap = (statistics.mean(seen[m][part]) for m in MODES)
        print(f"{part:<10}{none:>9.3f}{bwrap:>9.3f}{bwrap / none:>8.2f}")


if __name__ == "__main__":
    main()
