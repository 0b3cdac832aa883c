"""How much of a batch of demo pilots is benchkit's own work?

Runs `benchkit pilot` on the demo bench (four arms, two trials: 8 pilots), the real
command in a process of its own, after a warm-up pilot in another store that builds
the environment and the mirror. The batch's time is that process's whole life, from
its start to its exit, measured from outside it.

Inside it, the process times what is the bench's or the arm's, and nothing else:

- every command of the bench or the arm (`benchkit.workspace.proc.run`: the checks,
  the reruns alone, a command arm's steps), bubblewrap's start included;
- an arm's whole run (a replayed patch applied, a command arm's report read);
- an environment built (none here, once warmed).

Everything else is benchkit's own: the interpreter's start and the imports, planning,
the store's reads for recovery and the run set, the claims, the pilot's repository
and worktree, the environment's instance, the base worktree, the snapshot of the
arm's tree, the reports read, the gate, the score, the record, the heartbeats, the
cleanup, the printing, the compaction and the last wait for the trash. The first
pilot of the batch runs the checks at base (the store is new), the others read them
from the baseline cache; what that saves is printed as a share of a pilot's wall.

Target: benchkit's own work under 3% of the batch's wall. Beside it, the floor any
benchkit in Python pays before its first pilot: an interpreter that imports pyarrow
and polars (which writing and reading the store need) and exits, timed from outside.
Of benchkit's own work, the git commands it runs (a worktree checked out, the arm's
tree snapshot, the diffs) are printed apart, each command's whole life: what the
git processes cost, before any of benchkit's own Python.

    .venv/bin/python benchmarks/overhead.py [--arm ARM ...] [--trials N] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET = 0.03
CHILD = "--batch-child"  # the batch's own process: `overhead.py --batch-child OUT ARGS...`
PILOT_PHASES = ("start", "prepare", "environment", "baseline", "execute", "verify")  # and reruns
OWN_PHASES = ("score", "record")


def _child(out: Path, argv: list[str]) -> None:
    """The batch: `benchkit pilot ARGV` in this process, with the bench's and the arm's
    time taken apart by phase, written to `out` as JSON when it ends."""
    import benchkit.arms.builtin
    import benchkit.arms.command
    import benchkit.arms.simulated
    import benchkit.change.probe
    import benchkit.run.launch
    import benchkit.run.pilot
    import benchkit.run.record
    import benchkit.workspace.environment
    import benchkit.workspace.git
    import benchkit.workspace.proc
    from benchkit.cli import main

    phase = ["outside"]  # the phase the pilot at work is in
    inside: dict[str, float] = {}  # the bench's and the arm's seconds, by phase
    depth = [0]  # an arm's commands are the arm's: counted once, in its run
    pilots: list[dict[str, Any]] = []

    def timed(function: Callable[..., Any], command: bool = False) -> Callable[..., Any]:
        """`function`, its time the bench's or the arm's; for a `command`, only the
        command's own life (`Finished.duration_s`: from its start to its exit), not
        what benchkit does around it."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            started = time.perf_counter()
            result = None
            try:
                result = function(*args, **kwargs)
                return result
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    spent = time.perf_counter() - started
                    if command and result is not None:
                        spent = result.duration_s
                    inside[phase[0]] = inside.get(phase[0], 0.0) + spent

        return wrapper

    def wrap(owner: object, name: str, by: Callable[..., Any]) -> None:
        setattr(owner, name, by(getattr(owner, name)))

    git_s = [0.0]  # benchkit's own git commands (an arm's are the arm's), whole lives

    def gitting(function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                if depth[0] == 0:
                    git_s[0] += time.perf_counter() - started

        return wrapper

    for module in (benchkit.workspace.git, benchkit.arms.simulated, benchkit.change.probe):
        wrap(module, "git", gitting)

    wrap(benchkit.workspace.proc, "run", lambda f: timed(f, command=True))
    wrap(benchkit.workspace.environment, "_build", timed)
    wrap(benchkit.workspace.environment, "_build_node", timed)
    for module in (benchkit.arms.builtin, benchkit.arms.command, benchkit.arms.simulated):
        for value in vars(module).values():
            mine = isinstance(value, type) and value.__module__ == module.__name__
            if mine and "run" in vars(value):
                wrap(value, "run", timed)

    def lapping(lap: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
        def lapped(self: Any, name: str) -> None:
            lap(self, name)
            phase[0] = name

        return lapped

    wrap(benchkit.run.record.Clock, "lap", lapping)
    execute = benchkit.run.pilot.execute_plan  # as the launcher calls it

    def executed(*args: Any, **kwargs: Any) -> Any:
        before = dict(inside)
        inside.clear()
        phase[0] = "start"
        started = time.perf_counter()
        run = None
        try:
            run = execute(*args, **kwargs)
            return run
        finally:  # a pilot that raised (its run recorded) is counted too
            spent = time.perf_counter() - started
            mine, phase[0] = dict(inside), "outside"
            inside.clear()
            inside.update(before)
            pilots.append(
                {
                    "arm": run.spec.arm if run else "(raised)",
                    "status": run.status if run else "raised",
                    "wall": spent,
                    "phases": run.phases if run else {},
                    "inside": mine,
                    "cached": run.baseline_cached if run else False,
                }
            )

    setattr(benchkit.run.launch, "execute_plan", executed)  # noqa: B010
    started = time.time()
    code = 0
    try:
        main(argv, prog_name="benchkit", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        out.write_text(
            json.dumps(
                {
                    "started": started,
                    "returned": time.time(),
                    "pilots": pilots,
                    "outside": inside.get("outside", 0.0),
                    "git": git_s[0],
                    "code": code,
                }
            )
        )


def _batch(argv: list[str], out: Path) -> tuple[float, dict[str, Any]]:
    """The batch's process, timed from outside: its wall and what it wrote."""
    started = time.time()
    done = subprocess.run(
        [sys.executable, __file__, CHILD, str(out), *argv],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    said: dict[str, Any] = json.loads(out.read_text())
    said["ended"] = time.time()
    wall = said["ended"] - started
    if done.returncode != 0 or said["code"] not in (0, 1):  # 1: a run that is not ok
        sys.exit(f"the batch failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    said["spawned"] = started
    return wall, said


def _floor(repeat: int = 5) -> float:
    """An interpreter's life that imports what the store needs and exits: the best of
    `repeat`, from outside."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import polars, pyarrow.parquet"], check=True)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arm", action="append", default=None, help="arm to run (repeat); default: four"
    )
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    args = parser.parse_args()
    arms = args.arm or ["human", "noop", "replay:agent-a", "replay:agent-b"]
    cli = str(Path(sys.executable).with_name("benchkit"))

    with tempfile.TemporaryDirectory(prefix="benchkit-overhead-") as scratch:
        root = Path(scratch)
        os.environ["BENCHKIT_CACHE"] = str(root / "cache")
        started = time.perf_counter()
        warm = [cli, "pilot", "--bench", "demo", "--arm", "noop", "--quiet"]
        subprocess.run(
            [*warm, "--store", str(root / "warm"), "--sandbox", args.sandbox],
            check=True,
            capture_output=True,
        )
        warm_up = time.perf_counter() - started
        argv = ["pilot", "--bench", "demo", "--quiet", "--max-cost", "0.5"]
        argv += [f"--arm={arm}" for arm in arms]
        argv += ["--trials", str(args.trials), "--store", str(root / "store")]
        argv += ["--sandbox", args.sandbox]
        wall, said = _batch(argv, root / "batch.json")
    report(wall, said, warm_up, args.sandbox)
    floor = _floor()
    print(
        f"the floor: python importing pyarrow and polars, start to exit, {floor:.3f} s "
        f"({floor / wall:.1%} of the batch) before any pilot; with the git commands, "
        f"{(floor + said['git']) / wall:.1%} before any of benchkit's own Python"
    )


def report(wall: float, said: dict[str, Any], warm_up: float, sandbox: str) -> None:
    pilots: list[dict[str, Any]] = said["pilots"]
    n = len(pilots)
    start_up = said["started"] - said["spawned"]
    bench_arm = sum(sum(p["inside"].values()) for p in pilots) + said["outside"]
    own = wall - bench_arm
    in_pilots = sum(p["wall"] for p in pilots)
    print(f"`benchkit pilot`, {n} demo pilots, --sandbox {sandbox}")
    print(f"warm-up pilot in another store (environment, mirror): {warm_up:.2f} s")
    print(f"the batch's process: {wall:.2f} s from its start to its exit\n")
    header = f"{'arm':<16}{'wall':>7}{'bench+arm':>11}{'own':>7}{'own %':>8}"
    print(header)
    print("-" * len(header))
    for p in pilots:
        theirs = sum(p["inside"].values())
        mine = p["wall"] - theirs
        print(f"{p['arm']:<16}{p['wall']:>7.2f}{theirs:>11.2f}{mine:>7.3f}{mine / p['wall']:>8.1%}")
    print("-" * len(header))
    outside = wall - in_pilots - said["outside"]
    exit_s = said["ended"] - said["returned"]
    print(f"{'outside the pilots':<34}{outside:>7.3f}  (start, imports, plans, reads, end)")
    print(f"  of which the start and the imports {start_up:.3f} s, the exit {exit_s:.3f} s")
    print(f"{'all':<16}{wall:>7.2f}{bench_arm:>11.2f}{own:>7.3f}{own / wall:>8.1%}\n")

    parts: dict[str, float] = {}
    for p in pilots:
        for name, seconds in p["phases"].items():
            parts[name] = parts.get(name, 0.0) + seconds - p["inside"].get(name, 0.0)
        after = p["wall"] - sum(p["phases"].values()) - p["inside"].get("cleanup", 0.0)
        parts["cleanup"] = parts.get("cleanup", 0.0) + after
    order = [*PILOT_PHASES, *OWN_PHASES, "cleanup"]
    shown = ", ".join(f"{k} {parts[k] / n * 1000:.1f}" for k in order if k in parts)
    print(f"benchkit's own work a pilot, by phase (ms): {shown}")
    print(f"  and outside the pilots {outside / n * 1000:.1f} ms a pilot over the batch")
    git_s = said["git"]
    print(
        f"  of all of it, the git commands benchkit runs (their processes' whole lives): "
        f"{git_s / n * 1000:.1f} ms a pilot, {git_s / wall:.1%} of the batch"
    )
    share = own / wall
    verdict = "met" if share < TARGET else "MISSED"
    print(f"\nbenchkit's own work: {share:.1%} of the batch (target < {TARGET:.0%}: {verdict})")
    ran = [p for p in pilots if not p["cached"]]
    read = [p for p in pilots if p["cached"]]
    if ran and read:
        base_ran = ran[0]["phases"].get("baseline", 0.0)
        base_read = sum(p["phases"].get("baseline", 0.0) for p in read) / len(read)
        saved = base_ran - base_read
        pilot_wall = sum(p["wall"] for p in read) / len(read)
        print(
            f"baseline: run once in {base_ran:.2f} s, read from the cache in "
            f"{base_read:.3f} s by {len(read)} later pilots: {saved:.2f} s saved a pilot, "
            f"{saved / (pilot_wall + saved):.0%} of what its wall would be"
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        _child(Path(sys.argv[2]), sys.argv[3:])
    else:
        main()
