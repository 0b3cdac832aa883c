"""Launching pilots: a batch of specs, planned together, run one after another.

`pilot` is the API's face of it (`bk.pilot`): it builds the specs of a bench, its
arms and trials, plans them all (a bad input stops the batch before anything is
written), then runs each and records it.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from itertools import product
from pathlib import Path

from benchkit.errors import UsageError
from benchkit.run.pilot import Stage, execute_plan
from benchkit.run.plan import Plan, plan
from benchkit.run.recovery import recover
from benchkit.store.compaction import compact_when_due
from benchkit.store.parquet import writable_store
from benchkit.store.records import PilotSpec, Run
from benchkit.workspace.proc import Terminated, orphaned, worker_started


def _each(value: str | Path | Sequence[str | Path]) -> list[str]:
    """One value or several, as a list; none given is the one empty value."""
    values = [value] if isinstance(value, str | Path) else list(value)
    return [str(v) for v in values] or [""]


def pilot_specs(
    bench: str | Path | Sequence[str | Path],
    arms: list[str],
    *,
    executor: str | Sequence[str] = "",
    model: str | Sequence[str] = "",
    max_cost: float | None = None,
    trials: int = 1,
    flake_reruns: int = 1,
    arm_vars: tuple[tuple[str, str], ...] = (),
    checks: tuple[str, ...] = (),
) -> list[PilotSpec]:
    """The matrix: every bench, arm, executor, model and trial, crossed, in that order."""
    return [
        PilotSpec(
            bench=one_bench,
            arm=arm,
            executor=one_executor,
            model=one_model,
            max_cost=max_cost,
            trial=trial,
            flake_reruns=flake_reruns,
            arm_vars=arm_vars,
            checks=checks,
        )
        for one_bench, arm, one_executor, one_model, trial in product(
            _each(bench), arms, _each(executor), _each(model), range(1, trials + 1)
        )
    ]


def run_pilots(
    specs: list[PilotSpec],
    *,
    store: Path | str | None = None,
    keep: bool = False,
    refresh_baseline: bool = False,
    sandbox: str = "auto",
    jobs: int = 1,
    on_stage: Stage | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Plan every pilot first (a bad input stops them all before anything is written),
    then run them one after another, or `jobs` at a time in worker processes (where
    `on_stage` is not told: only `on_run`, as each run ends). A pilot's own error is
    recorded as its run's, the others go on, and the first is raised at the end."""
    folder = writable_store(store)
    plans = plan(specs, refresh_baseline=refresh_baseline, sandbox=sandbox)
    recover(folder)
    runs: list[Run] = []
    faults: list[Exception] = []
    if jobs > 1 and len(plans) > 1:
        _in_workers(plans, folder, keep, jobs, on_run, runs, faults)
    else:
        for p in plans:
            try:
                runs.append(execute_plan(p, folder, keep=keep, on_stage=on_stage, on_run=on_run))
            except Exception as exc:  # recorded as its run's failure
                faults.append(exc)
    compact_when_due(folder)
    if faults:
        raise faults[0]
    return runs


def _work(p: Plan, store: Path, keep: bool) -> Run:
    """One pilot in a worker process; a worker whose benchkit died ends once its run is
    recorded (nobody is left to hand it another)."""
    try:
        return execute_plan(p, store, keep=keep, launcher="processes")
    except KeyboardInterrupt:
        if orphaned():
            os._exit(Terminated.exit_code)
        raise


def _in_workers(
    plans: list[Plan],
    store: Path,
    keep: bool,
    jobs: int,
    on_run: Callable[[Run], None] | None,
    runs: list[Run],
    faults: list[Exception],
) -> None:
    """The pilots in `jobs` worker processes; their runs into `runs`, in the order of
    `plans`, their errors into `faults`. An interrupt stops the workers (each records
    its run) and is raised again."""
    context = multiprocessing.get_context("spawn")  # no state of the caller's is shared
    done: dict[int, Run] = {}
    pool = ProcessPoolExecutor(
        jobs, mp_context=context, initializer=worker_started, initargs=(os.getpid(),)
    )
    try:
        futures = {pool.submit(_work, p, store, keep): n for n, p in enumerate(plans)}
        for future in as_completed(futures):
            try:
                run = future.result()
            except Exception as exc:  # recorded by the worker as its run's failure
                faults.append(exc)
                continue
            done[futures[future]] = run
            if on_run is not None:
                on_run(run)
    except KeyboardInterrupt:
        for child in multiprocessing.active_children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid or 0, signal.SIGTERM)  # each records its run, then ends
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    runs += [done[n] for n in sorted(done)]


def pilot(
    bench: str | Path | Sequence[str | Path] = "demo",
    arm: str | Sequence[str] = "noop",
    *,
    executor: str | Sequence[str] = "",
    model: str | Sequence[str] = "",
    max_cost: float | None = None,
    trials: int = 1,
    flake_reruns: int = 1,
    arm_vars: Sequence[tuple[str, str]] | Mapping[str, str] = (),
    checks: Sequence[str] = (),
    store: Path | str | None = None,
    keep: bool = False,
    refresh_baseline: bool = False,
    sandbox: str = "auto",
    jobs: int = 1,
    on_stage: Stage | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Run (bench, arm, executor, model, max_cost, trial) pilots, record each, and
    return their records (which `bk.compare` and `bk.evidence` take as they are).
    `bench`, `arm`, `executor` and `model` take one value or a list: the pilots are
    their product, times `trials`.
    `refresh_baseline` runs the checks at base again instead of reading the cache.
    `sandbox`: `bwrap` runs arms and checks in bubblewrap, `none` as they are, `auto`
    (the default) in bubblewrap when it works here, with a warning when it does not.
    `jobs` > 1 runs that many pilots at a time, each in a worker process."""
    for name, value in (("trials", trials), ("flake_reruns", flake_reruns), ("jobs", jobs)):
        if value < 1:
            raise UsageError(name, "", f"must be at least 1, not {value}")
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost >= 0):
        raise UsageError(
            "max_cost", "", f"must be a finite amount of USD, 0 or more, not {max_cost}"
        )
    specs = pilot_specs(
        bench,
        [arm] if isinstance(arm, str) else list(arm),
        executor=executor,
        model=model,
        max_cost=max_cost,
        trials=trials,
        flake_reruns=flake_reruns,
        arm_vars=tuple(dict(arm_vars).items()),
        checks=tuple(checks),
    )
    return run_pilots(
        specs,
        store=store,
        keep=keep,
        refresh_baseline=refresh_baseline,
        sandbox=sandbox,
        jobs=jobs,
        on_stage=on_stage,
        on_run=on_run,
    )
