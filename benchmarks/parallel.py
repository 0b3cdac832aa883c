"""The same pilots one after another, in two worker processes (`--jobs 2`), and as
Ray tasks on a cluster that is already running (`--launcher ray --ray-address auto`).

Each way is the real command, `benchkit pilot`, in a process of its own, timed from
its start to its exit. The demo bench's environment and its baseline are built first
(a warm cache for all); then the same 16 demo pilots (four arms, four trials) run
serially, with `--jobs 2`, and on Ray, each into a store of its own sharing the
baseline, in rounds, on a cluster started first (`ray start --head --num-cpus 2`,
timed apart as its `ray stop` is, then one driver that joins and leaves, untimed, so
that no round's is the cluster's first). Each round holds every way, each round in
another order (serial, jobs, Ray; then jobs, Ray, serial; ...): this machine slows by
about a tenth under a few minutes of load and recovers at rest, so a way that always
ran last would be measured on a slower machine. Serial and `--jobs 2` so run beside
the idle cluster, whose daemons' CPU meanwhile is measured and printed; `--no-ray`
runs them on a machine without it. The script prints each round's wall side by side
with the medians. Targets on a quiet 2-core machine: `--jobs 2` at least 1.7x faster
than serial; Ray within 15% of `--jobs 2`, both on the medians. Where Ray spends its
CPU is printed too: the CPU seconds of the whole machine during each way's median
round (`/proc/stat`), beside serial's; and where each way's time goes, from its runs:
when its first pilot began after the command started, its pilots' mean wall, and how
long the command took to exit after its last pilot ended.

    .venv/bin/python benchmarks/parallel.py [--trials N] [--jobs N] [--rounds N] [--no-ray]
        [--sandbox auto]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tally import Tally  # benchmarks/tally.py, beside this script

ARMS = ["human", "noop", "replay:agent-a", "replay:agent-b"]
TARGET = 1.7
RAY_WITHIN = 0.15
TICKS = os.sysconf("SC_CLK_TCK")


def _busy() -> float:
    """The whole machine's CPU seconds so far, busy (not idle, not waiting)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


def _daemons() -> dict[int, int]:
    """This machine's Ray daemons (a job's workers apart): their CPU ticks so far."""
    ticks = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            command = (stat.parent / "cmdline").read_bytes()
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        agent = command.startswith((b"ray::DashboardAgent", b"ray::RuntimeEnvAgent"))
        if agent or (b"/ray/" in command and b"default_worker.py" not in command):
            ticks[int(stat.parent.name)] = int(fields[11]) + int(fields[12])
    return ticks


def _spent(since: dict[int, int]) -> float:
    """The CPU seconds the daemons seen `since` took since."""
    now = _daemons()
    return sum(now[pid] - ticks for pid, ticks in since.items() if pid in now) / TICKS


def _shape(store: Path, started: float, ended: float) -> tuple[float, float, float]:
    """A way's round, from its runs: its first pilot's start after the command's, its
    pilots' mean wall, and the command's exit after its last pilot's end (s)."""
    import benchkit  # read after the round, outside its time

    runs = benchkit.runs(store)
    begun = [stamp.timestamp() for stamp in runs["started_at"]]
    ends = [at + wall for at, wall in zip(begun, runs["wall_s"], strict=True)]
    return min(begun) - started, sum(runs["wall_s"]) / runs.height, ended - max(ends)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true", help="serial and --jobs only")
    parser.add_argument(
        "--sandbox", default="auto", help="the pilots' (none: what a machine without bwrap runs)"
    )
    args = parser.parse_args()
    bin_ = Path(sys.executable).parent
    cli, ray_cli = str(bin_ / "benchkit"), str(bin_ / "ray")
    jobs = f"jobs={args.jobs}"
    ways = {"serial": ["--jobs", "1"], jobs: ["--jobs", str(args.jobs)]}
    if not args.no_ray:
        ways["ray"] = ["--jobs", str(args.jobs), "--launcher", "ray", "--ray-address", "auto"]
    walls: dict[str, list[float]] = {label: [] for label in ways}
    cpu: dict[str, list[float]] = {label: [] for label in ways}
    shapes: dict[str, list[tuple[float, float, float]]] = {label: [] for label in ways}
    print(f"1-minute load at the start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="benchkit-parallel-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        warm = Path(scratch) / "warm"
        pilot = [cli, "pilot", "--bench", "demo", "--quiet", "--sandbox", args.sandbox]
        subprocess.run(
            [*pilot, "--arm", "noop", "--store", str(warm)], check=True, capture_output=True
        )
        matrix = [*pilot, *(f"--arm={arm}" for arm in ARMS), "--trials", str(args.trials)]

        def timed(label: str, round_: int) -> None:
            store = Path(scratch) / f"{label}-{round_}"
            store.mkdir()
            os.symlink(warm / "baselines", store / "baselines")  # the same base checks
            busy, started, clock = _busy(), time.perf_counter(), time.time()
            done = subprocess.run(
                [*matrix, *ways[label], "--store", str(store)], capture_output=True, text=True
            )
            walls[label].append(time.perf_counter() - started)
            cpu[label].append(_busy() - busy)
            if done.returncode not in (0, 1):  # 1: a run that is not ok, as noop's is
                sys.exit(f"{label} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
            shapes[label].append(_shape(store, clock, clock + walls[label][-1]))

        ray_start = ray_stop = 0.0
        beside: list[float] = []  # the idle cluster's CPU-s a second beside each other way
        try:
            if "ray" in ways:
                started = time.perf_counter()
                head = [ray_cli, "start", "--head", f"--num-cpus={args.jobs}"]
                subprocess.run(
                    [*head, "--include-dashboard=false"], check=True, capture_output=True
                )
                ray_start = time.perf_counter() - started
                joined = "import ray; ray.init(address='auto'); ray.shutdown()"
                subprocess.run([sys.executable, "-c", joined], check=True, capture_output=True)
            labels = list(ways)
            for round_ in range(args.rounds):
                for label in labels[round_ % len(labels) :] + labels[: round_ % len(labels)]:
                    idle, since = _daemons(), time.perf_counter()
                    timed(label, round_)
                    if label != "ray" and "ray" in ways:
                        beside.append(_spent(idle) / (time.perf_counter() - since))
        finally:
            if "ray" in ways:  # a cluster whose start failed midway is stopped too
                started = time.perf_counter()
                subprocess.run([ray_cli, "stop", "--force"], capture_output=True)
                ray_stop = time.perf_counter() - started
    middle = {label: statistics.median(each) for label, each in walls.items()}
    spent = {label: statistics.median(each) for label, each in cpu.items()}
    serial, parallel = middle["serial"], middle[jobs]
    print(
        f"{args.trials * len(ARMS)} demo pilots ({', '.join(ARMS)} x {args.trials}), warm cache, "
        f"--sandbox {args.sandbox}"
    )
    print("each way `benchkit pilot` in a process of its own, from its start to its exit\n")
    rounds = "".join(f"{f'round {n + 1}':>10}" for n in range(args.rounds))
    print(f"{'':<10}{rounds}{'median':>10}  vs serial  machine CPU-s")
    for label, each in walls.items():
        cells = "".join(f"{wall:>8.2f} s" for wall in each)
        print(
            f"{label:<10}{cells}{middle[label]:>8.2f} s  {serial / middle[label]:5.2f}x"
            f"  {spent[label]:9.1f}"
        )
    print("\nwhere the median round's time went: the first pilot began, a pilot's mean wall,")
    print("the command's exit after its last pilot ended")
    for label, each in walls.items():
        nearest = min(range(len(each)), key=lambda n: abs(each[n] - middle[label]))
        first, mean, tail = shapes[label][nearest]
        print(f"{label:<10}+{first:.2f} s  {mean:.2f} s  +{tail:.2f} s")
    speedup = serial / parallel
    tally = Tally("parallel")
    verdict = tally.said(speedup >= TARGET, f"{jobs} {speedup:.2f}x serial (>= {TARGET}x)")
    print(f"\n{jobs} {speedup:.2f}x serial (target >= {TARGET}x: {verdict})")
    if "ray" in ways:
        slower = middle["ray"] / parallel - 1
        ray_verdict = tally.said(
            slower <= RAY_WITHIN, f"ray {slower:+.0%} of {jobs} (within {RAY_WITHIN:.0%})"
        )
        print(
            f"ray on a running cluster {slower:+.0%} of {jobs} (target within "
            f"{RAY_WITHIN:.0%}: {ray_verdict}); its CPU {spent['ray'] - spent['serial']:+.1f} s "
            f"over serial's, {jobs}'s {spent[jobs] - spent['serial']:+.1f} s"
        )
        print(
            f"the local cluster, apart: `ray start --head` {ray_start:.2f} s, "
            f"`ray stop` {ray_stop:.2f} s; idle beside the other ways, its daemons took "
            f"{statistics.median(beside):.3f} CPU-s a second "
            f"({statistics.median(beside) / (os.cpu_count() or 1):.1%} of this machine)"
        )
    print(f"1-minute load at the end: {os.getloadavg()[0]:.2f}")
    print(tally.last_line())


if __name__ == "__main__":
    main()
