"""What verifying on a clean tree costs a pilot: the same demo pilots with the checks
after the arm on a clean tree (benchkit's way) and in the arm's own worktree (the way
before it, which an arm could game), side by side.

The second way is rebuilt here, for the comparison only: no clean tree is made before
the arm (`benchkit.run.verify.prepare_clean_tree` does nothing), and the verify stage is
handed the arm's worktree, its instance of the environment and its sandbox instead
(`benchkit.run.verify.clean_tree` replaced for those pilots). Each arm runs
`--trials` times each way, interleaved (so a busy machine weighs on both alike), in
one scratch cache and store; the first pilot, which builds the environment and the
baseline, is left out. Prints the mean seconds of the verify stage and of the wall,
and their ratio. Target: the wall within 10%.

    .venv/bin/python benchmarks/verify_cost.py [--arm ARM ...] [--trials N] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import benchkit.run.verify as verify
from benchkit.run.launch import pilot_specs
from benchkit.run.pilot import execute_plan
from benchkit.run.plan import plan
from benchkit.run.record import PilotState
from benchkit.store.store import Store
from benchkit.workspace.environment import Instance
from benchkit.workspace.sandbox import Sandbox

MODES = ("worktree", "clean")
CLEAN, PREPARE = verify.clean_tree, verify.prepare_clean_tree


def no_clean_tree(pilot: PilotState, log: Path) -> None:
    """Before the arm: nothing made for the checks after it."""


def in_the_worktree(pilot: PilotState) -> tuple[Instance, Sandbox] | None:
    """The checks after the arm where the arm left them: its worktree, its instance."""
    assert pilot.instance is not None
    return pilot.instance, pilot.sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", action="append", default=None, help="default: human, noop")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    arms = args.arm or ["human", "noop"]
    with tempfile.TemporaryDirectory(prefix="benchkit-verify-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        store = Store(Path(scratch) / "store")
        specs = pilot_specs("demo", arms, trials=args.trials)
        plans = plan(specs, sandbox=args.sandbox)
        execute_plan(plans[0], store)  # builds the environment and the baseline
        seen: dict[str, dict[str, list[float]]] = {m: {"verify": [], "wall": []} for m in MODES}
        figures: dict[str, set[tuple[object, ...]]] = {m: set() for m in MODES}
        for p in plans:
            for mode in MODES:
                verify.clean_tree = CLEAN if mode == "clean" else in_the_worktree
                verify.prepare_clean_tree = PREPARE if mode == "clean" else no_clean_tree
                run = execute_plan(p, store)
                assert run.status == "ok", run.failure_detail
                seen[mode]["verify"].append(run.phases.get("verify", 0.0))
                seen[mode]["wall"].append(run.wall_s)
                verdict = run.gate.verdict if run.gate else None
                figures[mode].add((run.spec.arm, verdict, run.sites_covered, run.sites_matched))
        verify.clean_tree, verify.prepare_clean_tree = CLEAN, PREPARE
    sandbox = run.sandbox
    print(
        f"{len(plans)} pilots each way ({', '.join(arms)} x {args.trials}, sandbox {sandbox}), "
        "mean seconds\n"
    )
    print(f"{'':<10}{'worktree':>10}{'clean':>9}{'ratio':>8}")
    for part in ("verify", "wall"):
        worktree, clean = (statistics.mean(seen[m][part]) for m in MODES)
        print(f"{part:<10}{worktree:>10.3f}{clean:>9.3f}{clean / worktree:>8.2f}")
    same = "the same" if figures["worktree"] == figures["clean"] else "NOT the same"
    print(f"\nfigures (arm, gate, covered, matched) both ways: {same}")


if __name__ == "__main__":
    main()
