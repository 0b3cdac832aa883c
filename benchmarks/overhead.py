"""How much of a batch of pilots is benchkit's own work, next to the floor that any
Python tool doing the same pays?

Runs `benchkit pilot`, each time the real command in a process of its own, timed
from outside (its whole life, from its start to its exit), after a warm-up pilot in
another store that builds the environment and the mirror:

- batches of 8 demo pilots (four arms, two trials), seven by default (`--batches`),
  each in a store of its own: the first pilot runs the checks at base, the others
  read them from the baseline cache. A batch's share moves by a point or two from
  one to the next on a machine this size (git's commands, the file system), so the
  verdict is the median batch's, and each batch is printed with the parts that move
  (the start, the pilots' own work, git on their path and git's CPU in threads);
- a batch of 8 pilots of a command arm that works (sleeps) 30 s each (`--long-s`),
  where benchkit's own work is to be under 1% of the batch.

Inside the process, what is the bench's or the arm's is timed, and nothing else:
every command of the bench or the arm (`benchkit.workspace.proc.run`: the checks, the
reruns alone, a command arm's steps; bubblewrap's start included), an arm's whole run
(a replayed patch applied, a command arm's report read), an environment built (none
here, once warmed). Everything else is benchkit's own work: the interpreter's start
and the imports, planning, the store's reads, the claims, the worktrees, the
snapshot of the arm's tree, the reports read, the gate, the score, the record, the
heartbeats, the cleanup, the printing, the compaction and the exit (a record written
by a thread of benchkit's beside the next pilot counts as long as that pilot waits
for it, and on the path where it is written at once: the last pilot's).

The floor, measured in the same run: an interpreter that imports polars and pyarrow (the
libraries a Parquet store's writer and reader take; a pilot writes and reads its store
by polars alone, and imports no pyarrow) and exits, timed from outside (7 runs taken in
turns with the command's imports: beside a batch, which starts once, their median;
beside the command's best start, their best; its starts taken between the batches, each
right after a batch's exit, are printed, not judged). Plus the git commands the batch
ran, timed inside it: on the pilot's path (the main thread), each one's whole life; in a
thread of benchkit's (the first pilot's trees made while the store is read, the next
pilot's while the checks run), each one's CPU time, which the checks running beside it
do not stretch as they stretch its life (both are printed; and beside the verdict, the
share over a floor of the git commands on the path alone, where what benchkit's threads
run beside the checks counts nothing, as it costs the path nothing). What a Python tool
that records runs and makes worktrees cannot go under. Targets: benchkit's own share of
the demo batch at most 1 point above the floor's; its own work in a pilot (wall less the
bench's and the arm's, the median of the batches) under 0.2 s; a heartbeat's stage beat
under 1 ms on the pilot's path (its wall, less any time its thread waited on the run
queue for a core, as the kernel's schedstat says: the scheduler's doing, which no beat
can prevent; the wall is printed beside it), and, with both cores kept busy by processes
that spin (`--load-beats` beats of a real heartbeat in a scratch store, the path's own
work and a sleep between them: the load under which 1% of the beats that woke a thread
took up to 5 ms), at most 2 in 1,000 over 1 ms; a command's start (python importing what
`benchkit pilot` imports before its first pilot, set up first as `benchkit.__main__`
sets it up) within 1.3x of the import floor; and under 1% of the long batch. Beside the
command's imports, those of the libraries it needs (polars, click, pydantic) alone: what
is left is benchkit's own modules.

    .venv/bin/python benchmarks/overhead.py [--arm ARM ...] [--trials N] [--batches N]
        [--long-s S] [--load-beats N] [--sandbox auto]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tally import Tally  # benchmarks/tally.py, beside this script

# What only the benchmark's own side needs (argparse, statistics, turns, tally) is
# imported where it is used: the batch's process (`--batch-child`) imports none of
# it, as its start is counted as benchkit's own (7 ms of them, else).

POINTS_OVER_FLOOR = 0.01  # the demo batch: own share at most the floor's + 1 point
PILOT_OWN_S = 0.2  # own work in a pilot of a batch
BEAT_S = 0.001  # a stage's heartbeat, on the pilot's path
SLOW_BEATS = 0.002  # of them, with both cores busy: at most this share over BEAT_S
# (a beat that woke a thread: 1%; one that wakes none is still preempted, now and then,
# by the processes that spin)
START_RATIO = 1.3  # a command's imports next to python + polars + pyarrow
LONG_SHARE = 0.01  # own work in the batch of long pilots
CHILD = "--batch-child"  # the batch's own process: `overhead.py --batch-child OUT ARGS...`
PILOT_PHASES = ("start", "prepare", "environment", "baseline", "execute", "verify")  # and reruns
OWN_PHASES = ("score", "record")
COMMAND_IMPORTS = (  # as the `benchkit` command starts (`benchkit.__main__`)
    "from benchkit.workspace.processes import as_command; as_command(); "
    "import benchkit.cli, benchkit.run.launch, benchkit.run.pilot, benchkit.run.launchers"
)
FLOOR_IMPORTS = "import polars, pyarrow.parquet"
# the libraries a pilot command needs: pydantic's models, not only its lazy package
LIBRARY_IMPORTS = "import polars, click; from pydantic import BaseModel"


def _child(out: Path, argv: list[str]) -> None:
    """The batch: `benchkit pilot ARGV` in this process, with the bench's and the arm's
    time taken apart by phase, written to `out` as JSON when it ends."""
    from benchkit.workspace.processes import as_command, command_ended

    as_command()  # first, as the `benchkit` command starts
    import benchkit.arms.builtin
    import benchkit.run.launcher
    import benchkit.run.launchers
    import benchkit.run.pilot
    import benchkit.run.record
    import benchkit.store.heartbeat
    import benchkit.workspace.caller
    import benchkit.workspace.environment
    import benchkit.workspace.git
    import benchkit.workspace.node
    import benchkit.workspace.proc
    import benchkit.workspace.venv
    from benchkit.arms.protocol import Arm
    from benchkit.cli import main
    from benchkit.workspace.recipe import Backend

    phase = ["outside"]  # the phase the pilot at work is in
    inside: dict[str, float] = {}  # the bench's and the arm's seconds, by phase
    depth = threading.local()  # each thread's: an arm's commands are the arm's, counted once

    def deep() -> int:
        return int(getattr(depth, "n", 0))

    pilots: list[dict[str, Any]] = []
    beats: list[tuple[float, float]] = []  # each beat's wall, and that less its wait for a core

    def timed(function: Callable[..., Any], command: bool = False) -> Callable[..., Any]:
        """`function`, its time the bench's or the arm's; for a `command`, only the
        command's own life (`Finished.duration_s`: from its start to its exit), not
        what benchkit does around it."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth.n = deep() + 1
            started = time.perf_counter()
            result = None
            try:
                result = function(*args, **kwargs)
                return result
            finally:
                depth.n -= 1
                if depth.n == 0:
                    spent = time.perf_counter() - started
                    if command and result is not None:
                        spent = result.duration_s
                    inside[phase[0]] = inside.get(phase[0], 0.0) + spent

        return wrapper

    def everywhere(original: Callable[..., Any], by: Callable[..., Any]) -> None:
        """`original` replaced by `by` in every benchkit module that holds it (by
        `from ... import`), its own included: a module imported later takes `by`."""
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("benchkit"):
                for name, value in list(vars(module).items()):
                    if value is original:
                        setattr(module, name, by)

    def every_subclass(base: type) -> list[type]:
        found: list[type] = []
        todo: list[type] = [base]
        while todo:
            subclasses: list[type] = todo.pop().__subclasses__()
            for sub in subclasses:
                found.append(sub)
                todo.append(sub)
        return found

    git_path = [0.0]  # benchkit's own git commands (an arm's are the arm's) on the path
    git_phases: dict[str, float] = {}  # and the same, by the phase of the pilot at work
    git_off = [0.0, 0.0, 0]  # and in its threads: their CPU time, their whole lives, how many
    reaped = threading.local()  # the CPU time of the child a thread reaped last
    waitpid = os.waitpid

    def wait4(pid: int, options: int) -> tuple[int, int]:
        """`os.waitpid`, as `subprocess` calls it, with the child's CPU time kept."""
        if not hasattr(os, "wait4"):
            return waitpid(pid, options)
        got, status, usage = os.wait4(pid, options)
        if got:
            reaped.cpu = usage.ru_utime + usage.ru_stime
        return got, status

    os.waitpid = wait4

    def gitting(function: Callable[..., Any]) -> Callable[..., Any]:
        """`capture`, the time of a git command counted: on the pilot's path (this
        thread), its whole life; in a thread (a worktree made ahead, a diff read
        while the checks run), its CPU time, which the checks beside it do not
        stretch as they stretch its life."""

        def wrapper(argv: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            reaped.cpu = 0.0
            try:
                return function(argv, *args, **kwargs)
            finally:
                if argv and argv[0] == "git" and deep() == 0:
                    spent = time.perf_counter() - started
                    if threading.current_thread() is threading.main_thread():
                        git_path[0] += spent
                        git_phases[phase[0]] = git_phases.get(phase[0], 0.0) + spent
                    else:
                        git_off[0] += min(reaped.cpu, spent)
                        git_off[1] += spent
                        git_off[2] += 1

        return wrapper

    capture = benchkit.workspace.proc.capture
    everywhere(capture, gitting(capture))
    run = benchkit.workspace.proc.run
    everywhere(run, timed(run, command=True))
    for kind in every_subclass(Backend):
        if "build" in vars(kind):
            kind.build = timed(kind.build)  # type: ignore[attr-defined]

    def arm_kind(kind: type, /, **kwargs: Any) -> None:
        """An arm kind's `run` timed: those imported now, and those a pilot imports
        later (an arm file's) as their class is made."""
        if "run" in vars(kind):
            kind.run = timed(vars(kind)["run"])  # type: ignore[attr-defined]

    for kind in every_subclass(Arm):
        arm_kind(kind)
    Arm.__init_subclass__ = classmethod(arm_kind)  # type: ignore[assignment,method-assign]
    stage = benchkit.store.heartbeat.Heartbeat.stage

    def queued() -> float:
        """This thread's seconds so far waiting for a core (the kernel's schedstat):
        the scheduler's doing, not the thread's."""
        try:
            with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as said:
                return int(said.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return 0.0

    def beat(self: Any, name: str) -> None:
        waited = queued()
        started = time.perf_counter()
        stage(self, name)
        took = time.perf_counter() - started
        beats.append((took, max(0.0, took - (queued() - waited))))

    benchkit.store.heartbeat.Heartbeat.stage = beat  # type: ignore[method-assign]

    def lapping(lap: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
        def lapped(self: Any, name: str) -> None:
            lap(self, name)
            phase[0] = name

        return lapped

    lap = benchkit.run.record.Clock.lap
    benchkit.run.record.Clock.lap = lapping(lap)  # type: ignore[method-assign,assignment]
    execute = benchkit.run.pilot.execute_plan  # as the launchers call it

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

    everywhere(execute, executed)
    started = time.time()
    code = 0
    try:  # not standalone, click hands back the status a command's `ctx.exit` gave
        returned = main(argv, prog_name="benchkit", standalone_mode=False)
        code = returned if isinstance(returned, int) else 0
    except SystemExit as exc:  # as Python reads it
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        out.write_text(
            json.dumps(
                {
                    "started": started,
                    "returned": time.time(),
                    "pilots": pilots,
                    "outside": inside.get("outside", 0.0),
                    "git": git_path[0],
                    "git_phases": git_phases,
                    "git_off": git_off,
                    "beats": beats,
                    "code": code,
                }
            )
        )
    command_ended(code)  # and it ends as the command ends


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


def _lives(*codes: str, repeat: int = 7) -> list[list[float]]:
    """Each an interpreter's life that runs that code and exits, from outside: its
    `repeat` runs, sorted, taken in turns (see `turns`)."""
    import turns  # benchmarks/turns.py, beside this script

    commands = [[sys.executable, "-c", code] for code in codes]
    return [sorted(wall for wall, _ in taken) for taken in turns.all_runs(commands, repeat)]


def _life(code: str) -> float:
    """An interpreter's life that runs `code` and exits, from outside."""
    import turns  # benchmarks/turns.py, beside this script

    [[(wall, _)]] = turns.all_runs([[sys.executable, "-c", code]], 1)
    return wall


def _long_arm(folder: Path, seconds: float) -> Path:
    """A command arm that works `seconds` and changes nothing."""
    arm = folder / "long.toml"
    arm.write_text(
        'name = "long"\ndescription = "works a while, changes nothing"\n'
        f'command = ["sleep", "{seconds:g}"]\ntimeout = {int(seconds * 4) + 60}\n'
    )
    return arm


def main() -> None:
    import argparse
    import statistics

    from tally import Tally

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arm", action="append", default=None, help="arm to run (repeat); default: four"
    )
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument(
        "--batches",
        type=lambda text: max(1, int(text)),
        default=7,
        help="demo batches (at least 1), judged by the median one",
    )
    parser.add_argument("--long-s", type=float, default=30.0, help="0: no long batch")
    parser.add_argument(
        "--load-beats", type=int, default=1000, help="beats with both cores busy; 0: none"
    )
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    args = parser.parse_args()
    arms = args.arm or ["human", "noop", "replay:agent-a", "replay:agent-b"]
    cli = str(Path(sys.executable).with_name("benchkit"))
    print(f"1-minute load at the start: {os.getloadavg()[0]:.2f}")
    print(_sandbox_said(args.sandbox))

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
        common = ["pilot", "--bench", "demo", "--quiet", "--sandbox", args.sandbox]
        argv = [*common, "--max-cost", "0.5", *[f"--arm={arm}" for arm in arms]]
        argv += ["--trials", str(args.trials)]
        batches = []  # each in a store of its own: the first pilot runs the baseline
        between = []  # the floor's start, before each batch and after the last
        for n in range(args.batches):
            between.append(_life(FLOOR_IMPORTS))
            store = ["--store", str(root / f"store-{n}")]
            batches.append(_batch([*argv, *store], root / f"batch-{n}.json"))
        between.append(_life(FLOOR_IMPORTS))
        lives = _lives(FLOOR_IMPORTS, COMMAND_IMPORTS, LIBRARY_IMPORTS)
        long_said: tuple[float, dict[str, Any]] | None = None
        if args.long_s > 0:
            long_argv = [*common, f"--arm={_long_arm(root, args.long_s)}"]
            long_argv += ["--trials", "8", "--store", str(root / "long")]
            long_said = _batch(long_argv, root / "long.json")
    print(f"warm-up pilot in another store (environment, mirror): {warm_up:.2f} s\n")
    tally = Tally("overhead")
    floor_lives, (command, *_), (libraries, *_) = lives
    floor_best = floor_lives[0]  # beside the command's best, for its start
    report(batches, between, floor_lives, args.sandbox, tally)
    pilot_own = statistics.median(_own(p) for _, said in batches for p in said["pilots"])
    met = tally.said(
        pilot_own < PILOT_OWN_S, f"own work in a pilot {pilot_own:.3f} s (< {PILOT_OWN_S} s)"
    )
    print(
        f"benchkit's own work in a pilot of the batches, the median: {pilot_own:.3f} s "
        f"(target < {PILOT_OWN_S} s: {met})"
    )
    beats = [beat for _, said in batches for beat in said["beats"]]
    walls = [wall for wall, _ in beats]
    slowest = max((mine for _, mine in beats), default=0.0)
    met = tally.said(
        slowest < BEAT_S, f"slowest beat {slowest * 1000:.3f} ms (< {BEAT_S * 1000:.0f} ms)"
    )
    print(
        f"a stage's heartbeat on the pilot's path: {len(beats)} beats, the slowest "
        f"{slowest * 1000:.3f} ms, less any time its thread waited for a core (target < "
        f"{BEAT_S * 1000:.0f} ms: {met}); of their wall, the slowest "
        f"{max(walls, default=0.0) * 1000:.3f} ms, {sum(w >= BEAT_S for w in walls)} over "
        f"{BEAT_S * 1000:.0f} ms"
    )
    start = command / floor_best
    met = tally.said(start <= START_RATIO, f"a command's start {start:.2f}x (<= {START_RATIO}x)")
    print(
        f"a command's start: python importing what `benchkit pilot` imports {command:.3f} s, "
        f"the floor (python importing polars and pyarrow) {floor_best:.3f} s: "
        f"{start:.2f}x (target <= {START_RATIO}x: {met})"
    )
    print(
        f"  the libraries it needs (polars, click, pydantic) {libraries:.3f} s, "
        f"{libraries / floor_best:.2f}x; benchkit's own modules the rest, "
        f"{command - libraries:.3f} s"
    )
    if long_said is not None:
        long_wall, long_run = long_said
        pilots: list[dict[str, Any]] = long_run["pilots"]
        own = long_wall - _theirs(long_run)
        share = own / long_wall
        met = tally.said(share < LONG_SHARE, f"the long batch {share:.2%} (< {LONG_SHARE:.0%})")
        print(
            f"\n`benchkit pilot`, {len(pilots)} pilots of a command arm working "
            f"{args.long_s:g} s each: the process {long_wall:.1f} s, benchkit's own work "
            f"{own:.2f} s, {share:.2%} of the batch (target < {LONG_SHARE:.0%}: {met})"
        )
    if args.load_beats > 0:
        loaded = _beats_under_load(args.load_beats)
        slow = sum(beat >= BEAT_S for beat in loaded)
        met = tally.said(
            slow <= SLOW_BEATS * len(loaded),
            f"{slow} of {len(loaded)} beats with both cores busy over {BEAT_S * 1000:.0f} ms",
        )
        print(
            f"\na stage's heartbeat with both cores busy ({os.cpu_count()} processes "
            f"spinning): {len(loaded)} beats, {slow} over {BEAT_S * 1000:.0f} ms, the slowest "
            f"{max(loaded) * 1000:.3f} ms (target: at most {SLOW_BEATS * 1000:g} in 1,000 over "
            f"{BEAT_S * 1000:.0f} ms: {met})"
        )
    print(f"\n1-minute load at the end: {os.getloadavg()[0]:.2f}")
    print(tally.last_line())


def _beats_under_load(beats: int) -> list[float]:
    """Each stage's beat of a real heartbeat (in a scratch store), timed on the path,
    while processes that spin keep every core busy: between two beats, the path's own
    work (1 to 5 ms of Python) and a command (a sleep of 0 to 6 ms)."""
    from datetime import UTC, datetime

    from benchkit.store.heartbeat import Beat, Heartbeat

    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(os.cpu_count() or 2)]
    took: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="benchkit-beats-") as store:
            now = datetime.now(UTC).isoformat()
            beat = Beat(
                run_id="load",
                stage="start",
                host="here",
                pid=os.getpid(),
                started_at=now,
                updated_at=now,
            )
            heart = Heartbeat(Path(store), beat)
            heart.first_written()
            for n in range(beats):
                until = time.perf_counter() + 0.001 * (1 + n % 5)
                while time.perf_counter() < until:  # the path's own work
                    pass
                time.sleep(0.001 * (n % 7))  # a command
                started = time.perf_counter()
                heart.stage(f"stage-{n}")
                took.append(time.perf_counter() - started)
            heart.stop()
    finally:
        for process in busy:
            process.kill()
            process.wait()
    return took


def _sandbox_said(choice: str) -> str:
    """The sandbox the pilots run in, and, where `auto` finds none that works here, why
    and what that costs them: a copy of the environment a tree, and the cached one read
    whole as each pilot ends (its bytes: what a copy sharing its files could rewrite)."""
    from benchkit.workspace.sandbox import auto_choice

    if choice != "auto":
        return f"sandbox: {choice}"
    name, problems = auto_choice()
    if name != "none":
        return f"sandbox: auto, {name}"
    return (
        f"sandbox: auto, none ({'; '.join(problems)}; see tools/bubblewrap.sh): each pilot "
        "copies the environment for its two trees and reads the cached one whole as it "
        "ends, benchkit's own work that a sandbox does not need"
    )


def _theirs(said: dict[str, Any]) -> float:
    """The bench's and the arm's seconds in a batch."""
    pilots: list[dict[str, Any]] = said["pilots"]
    return float(sum(sum(p["inside"].values()) for p in pilots) + said["outside"])


def _own(pilot: dict[str, Any]) -> float:
    return float(pilot["wall"] - sum(pilot["inside"].values()))


def figures(wall: float, said: dict[str, Any], floor: float) -> dict[str, float]:
    """A demo batch's own work and floor, in seconds and as shares of its wall."""
    git_path, (git_cpu, git_lives, git_off) = said["git"], said["git_off"]
    own = wall - _theirs(said)
    floor_s = floor + git_path + git_cpu
    return {
        "wall": wall,
        "own": own,
        "start": said["started"] - said["spawned"],
        "pilots": sum(_own(p) for p in said["pilots"]),
        "floor": floor_s,
        "git_path": git_path,
        "git_cpu": git_cpu,
        "git_lives": git_lives,
        "git_off": git_off,
        "over": (own - floor_s) / wall,
        "over_path": (own - floor - git_path) / wall,  # the floor's git on the path alone
    }


def report(
    batches: list[tuple[float, dict[str, Any]]],
    between: list[float],
    floor_lives: list[float],
    sandbox: str,
    tally: Tally,
) -> None:
    """Each demo batch's share against its floor, the median one's table, and the
    verdict on the median batch (told to `tally`). A batch starts its interpreter
    once, so the floor's start is the median of those taken in turns with the
    command's imports (`floor_lives`, sorted), not their best: the best of 7 starts
    beside one start would charge benchkit with the difference between a lucky start
    and a usual one. Those taken between the batches (`between`: one before each, one
    after the last, each right after a batch's exit) are printed beside it, not
    judged: a start that follows a batch's exit is slower."""
    import statistics

    floor = statistics.median(floor_lives)
    every = [figures(wall, said, floor) for wall, said in batches]
    print(f"`benchkit pilot`, {len(batches)} batches of demo pilots, --sandbox {sandbox}")
    for n, f in enumerate(every, 1):
        print(
            f"  batch {n}: {f['wall']:.2f} s, own work {f['own'] / f['wall']:.1%}, the floor "
            f"{f['floor'] / f['wall']:.1%}: {f['over'] * 100:+.1f} points  (own: the start "
            f"{f['start']:.3f} s, the pilots {f['pilots']:.3f} s; of the own work, git on the "
            f"path {f['git_path']:.3f} s; the floor's git in threads {f['git_cpu']:.3f} s of CPU)"
        )
    middle = sorted(range(len(every)), key=lambda n: every[n]["over"])[len(every) // 2]
    wall, said = batches[middle]
    chosen = every[middle]
    pilots: list[dict[str, Any]] = said["pilots"]
    n = len(pilots)
    start_up = said["started"] - said["spawned"]
    own = chosen["own"]
    in_pilots = sum(p["wall"] for p in pilots)
    print(f"\nthe median batch ({middle + 1}): {wall:.2f} s from its start to its exit\n")
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
    print(f"{'all':<16}{wall:>7.2f}{wall - own:>11.2f}{own:>7.3f}{own / wall:>8.1%}\n")

    parts: dict[str, float] = {}
    for p in pilots:
        for name, seconds in p["phases"].items():
            parts[name] = parts.get(name, 0.0) + seconds - p["inside"].get(name, 0.0)
        after = p["wall"] - sum(p["phases"].values()) - p["inside"].get("cleanup", 0.0)
        parts["cleanup"] = parts.get("cleanup", 0.0) + after
    order = [*PILOT_PHASES, *OWN_PHASES, "cleanup"]
    shown = ", ".join(f"{k} {parts[k] / n * 1000:.1f}" for k in order if k in parts)
    print(f"benchkit's own work a pilot, by phase (ms): {shown}")
    gits = said["git_phases"]
    shown = ", ".join(f"{k} {gits[k] / n * 1000:.1f}" for k in order if k in gits)
    print(f"  of it, git on the path (ms): {shown}")
    print(f"  and outside the pilots {outside / n * 1000:.1f} ms a pilot over the batch")
    ran = [p for p in pilots if not p["cached"]]
    read = [p for p in pilots if p["cached"]]
    if ran and read:
        base_ran = ran[0]["phases"].get("baseline", 0.0)
        base_read = sum(p["phases"].get("baseline", 0.0) for p in read) / len(read)
        print(
            f"baseline: run once in {base_ran:.2f} s, read from the cache in "
            f"{base_read:.3f} s by {len(read)} later pilots"
        )
    verdict = tally.said(
        chosen["over"] <= POINTS_OVER_FLOOR,
        f"the demo batch {chosen['over'] * 100:+.1f} points (<= +{POINTS_OVER_FLOOR * 100:.0f})",
    )
    print(
        f"\nthe floor: python importing polars and pyarrow, start to exit, {floor:.3f} s "
        f"(the median of {len(floor_lives)} starts taken in turns with the command's imports, "
        f"as a batch's start is one; their best {floor_lives[0]:.3f} s), and the git commands "
        f"benchkit ran, "
        f"{chosen['floor'] - floor:.3f} s: {chosen['floor'] / wall:.1%} of the batch"
    )
    at_best = sorted(figures(w, said, floor_lives[0])["over"] for w, said in batches)
    print(
        f"  with the floor's start at its best of {len(floor_lives)} instead: the median "
        f"batch {at_best[len(at_best) // 2] * 100:+.1f} points"
    )
    after = statistics.median(between)
    at_after = sorted(figures(w, said, after)["over"] for w, said in batches)
    print(
        f"  the floor's start taken between the batches, each right after a batch's exit: "
        f"the median of {len(between)} {after:.3f} s; with it, the median batch "
        f"{at_after[len(at_after) // 2] * 100:+.1f} points (not judged)"
    )
    print(
        f"  git on the pilots' path {chosen['git_path']:.3f} s (their whole lives); in "
        f"benchkit's threads {chosen['git_off']:.0f} commands, {chosen['git_cpu']:.3f} s of CPU "
        f"(their lives {chosen['git_lives']:.3f} s, beside the checks)"
    )
    print(
        f"  with the floor's git on the pilots' path alone (what benchkit's threads run "
        f"beside the checks costs the path nothing, and counts nothing): "
        f"{chosen['over_path'] * 100:+.1f} points"
    )
    print(
        f"benchkit's own work: {own / wall:.1%} of the batch, {chosen['over'] * 100:+.1f} "
        f"points over the floor, the median of {len(batches)} batches "
        f"(target <= +{POINTS_OVER_FLOOR * 100:.0f}: {verdict})"
    )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        _child(Path(sys.argv[2]), sys.argv[3:])
    else:
        main()
