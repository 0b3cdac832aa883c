"""Launching pilots: a matrix of specs, planned together, narrowed to what its run set
still needs, and run by a launcher: one after another (`serial`), in worker processes
(`processes`, `--jobs`) or as Ray tasks (`ray`, see `benchkit.run.cluster`).

`pilot` is the API's face of it (`bk.pilot`): it builds the specs of the matrix, plans
them all (a bad input stops the matrix before anything is written), then runs each
and records it.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import product
from pathlib import Path

import polars as pl

from benchkit.bench.names import NAME, NAME_RULE
from benchkit.errors import SetError, UsageError
from benchkit.records import DEFAULT_SET, LAUNCHERS, RERUNS, LauncherName, PilotSpec, Run
from benchkit.run.claims import claim, release
from benchkit.run.events import Event, Planned, Recorded, Sink, ignore
from benchkit.run.launcher import Launched, LaunchWarning
from benchkit.run.launchers import make_launcher
from benchkit.run.plan import Plan, plan
from benchkit.run.progress import Ledger, fan, read_matrices, shown
from benchkit.run.record import benchkit_version
from benchkit.run.recovery import recover_then_read
from benchkit.run.sets import Needed, changed, fresh_name, needed
from benchkit.store.compaction import runs_to_next_look
from benchkit.store.query import pick_runs
from benchkit.store.store import Store
from benchkit.workspace.cache import empty_trash, trash_emptied


def _each(value: str | Path | Sequence[str | Path]) -> list[str]:
    """One value or several, as a list; none given is the one empty value."""
    values = [value] if isinstance(value, str | Path) else list(value)
    return [str(v) for v in values] or [""]


MOST_PILOTS = 100_000
"""The largest matrix one command plans: past it, the plan alone would fill memory."""


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
    run_set: str = DEFAULT_SET,
) -> list[PilotSpec]:
    """The matrix: every bench, arm, executor, model and trial, crossed, in that order.
    Raises `UsageError` for a matrix larger than `MOST_PILOTS`, before it is made."""
    sizes = [len(_each(bench)), len(arms), len(_each(executor)), len(_each(model)), trials]
    if math.prod(sizes) > MOST_PILOTS:
        raise UsageError(
            "trials" if trials > MOST_PILOTS else "matrix",
            "",
            f"{' x '.join(map(str, sizes))} pilots (benches, arms, executors, models, trials) "
            f"is more than one matrix may hold ({MOST_PILOTS:,}): split it into sets",
        )
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
            run_set=run_set,
        )
        for one_bench, arm, one_executor, one_model, trial in product(
            _each(bench), arms, _each(executor), _each(model), range(1, trials + 1)
        )
    ]


def _jobs(jobs: int, pilots: int) -> int:
    """The pilots at a time: never more than the matrix holds (a worker for each), and
    said when more than this machine's cores (they share them, each pilot several
    processes)."""
    jobs = max(1, min(jobs, pilots))
    cores = os.cpu_count() or 1
    if jobs > cores:
        warnings.warn(
            f"{jobs} pilots at a time on {cores} cores: they share them, each one slower",
            LaunchWarning,
            stacklevel=3,
        )
    return jobs


def run_pilots(
    specs: list[PilotSpec],
    *,
    store: Store | Path | str | None = None,
    keep: bool = False,
    refresh_baseline: bool = False,
    sandbox: str = "auto",
    jobs: int = 1,
    launcher: LauncherName | None = None,
    ray_address: str | None = None,
    new_set: bool = False,
    retry_failed: bool = False,
    events: Sink = ignore,
) -> list[Run]:
    """Plan every pilot first (a bad input stops them all before anything is written),
    keep those their run set still needs (see `benchkit.run.sets`), then run them by
    the `launcher`: `serial` (the default for one job), `processes` (`jobs` worker
    processes, the default for more) or `ray` (Ray tasks, on the cluster at
    `ray_address` or a local one of `jobs` CPUs). A pilot's own error is recorded as
    its run's, the others go on, and the first is raised at the end."""
    for name in {spec.run_set for spec in specs}:
        if not re.fullmatch(NAME, name):
            raise UsageError("run_set", "", f"is {NAME_RULE}, not {name!r}")
    folder = Store.at(store).writable()
    jobs = _jobs(jobs, len(specs))
    chosen = make_launcher(
        launcher, jobs=jobs, address=ray_address, refresh_baseline=refresh_baseline, sandbox=sandbox
    )
    launched = Launched()
    try:
        chosen.start(len(specs))  # workers start first and import benchkit while this plans
        plans = plan(specs, refresh_baseline=refresh_baseline, sandbox=sandbox)
        chosen.check()
        chosen.planned(plans)  # its first pilot's trees, say, begun while the store is read
        folder.make()  # every input checked: the store may be made
        known = recover_then_read(folder)  # the runs table, read once for both
        empty_trash()  # what a killed benchkit left to remove
        read_matrices(folder, forget=True)  # and its matrix's ledger
        need = _needed(plans, folder, new_set=new_set, retry_failed=retry_failed, runs=known)
        run_set = need.plans[0].spec.run_set if need.plans else specs[0].run_set
        claimed, held = claim(folder, need.plans)
        ledger = Ledger(folder)
        events = fan(ledger, events, _compacting(folder))
        try:
            # What another benchkit recorded between the first look and the claims is
            # not run again; what it claims is its own.
            mine = _needed(claimed, folder, new_set=False, retry_failed=retry_failed).plans
            events(
                Planned(
                    run_set=run_set,
                    pilots=len(mine),
                    recorded=need.recorded,
                    running=need.running + len(need.plans) - len(claimed),
                    jobs=chosen.concurrent(),
                )
            )
            launched = chosen.launch(mine, folder, keep=keep, events=events)
        finally:
            release(held)
            ledger.close()
    except KeyboardInterrupt:  # the workers are stopped: what they left, removed now
        chosen.close()
        empty_trash()
        trash_emptied()
        raise
    finally:
        chosen.close()
    folder.compact_when_due()
    if launched.faults:
        raise launched.faults[0]
    return launched.runs


def _compacting(store: Store) -> Sink:
    """A sink that compacts the store as the matrix goes, once enough files to merge
    have piled up: a long matrix never leaves thousands of files, and one compacting
    meanwhile is passed, not waited for. The store's folders are looked at as the
    first run is recorded, then as `runs_to_next_look` says: not at every run (nine
    folders listed, a millisecond of each pilot)."""
    left = 1  # runs recorded until the next look

    def tell(event: Event) -> None:
        nonlocal left
        if isinstance(event, Recorded):
            left -= 1
            if left <= 0:
                left = runs_to_next_look(store.compact_when_due())

    return tell


def _needed(
    plans: list[Plan],
    store: Store,
    *,
    new_set: bool,
    retry_failed: bool,
    runs: pl.DataFrame | None = None,
) -> Needed:
    """The plans the set still needs; with `new_set`, all of them, in a set no run holds
    yet. Raises `SetError` when a unit's spec changed under the set."""
    if not plans:
        return Needed(plans=[], recorded=(), running=0)
    name = plans[0].spec.run_set
    runs = store.read("runs") if runs is None else runs
    held = runs.filter(pl.col("run_set") == name)
    if new_set and not held.is_empty():
        name = fresh_name(name, set(runs["run_set"].drop_nulls().to_list()))
        plans = [replace(p, spec=replace(p.spec, run_set=name)) for p in plans]
        held = held.clear()
    rows = held.to_dicts()
    what = changed(plans, rows, benchkit_version())
    if what:
        raise SetError(
            f"set {name}", "", f"{what}; --new-set runs the matrix in a new set, kept apart"
        )
    return needed(plans, rows, retry_failed=retry_failed)


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
    store: Store | Path | str | None = None,
    run_set: str = DEFAULT_SET,
    new_set: bool = False,
    retry_failed: bool = False,
    keep: bool = False,
    refresh_baseline: bool = False,
    sandbox: str = "auto",
    jobs: int = 1,
    launcher: LauncherName | None = None,
    ray_address: str | None = None,
    progress: bool | None = None,
    events: Sink | None = None,
) -> list[Run]:
    """Run the (bench, arm, executor, model, max_cost, trial) pilots that the run set
    `run_set` does not hold yet, record each, and return their records (which
    `bk.compare` and `bk.evidence` take as they are). `bench`, `arm`, `executor` and
    `model` take one value or a list: the pilots are their product, times `trials`
    (trials in all: trials 1 and 2 recorded, `trials=3` runs trial 3).
    `new_set` runs the matrix in a new set (`<run_set>-2`, ...) when `run_set` holds
    runs; `retry_failed` runs again the units whose last attempt failed for a reason
    worth retrying. `refresh_baseline` runs the checks at base again instead of
    reading the cache. `sandbox`: `bwrap` runs arms and checks in bubblewrap, `none`
    as they are, `auto` (the default) in bubblewrap when it works here, with a
    warning when it does not. `jobs` > 1 runs that many pilots at a time, each in a
    worker process (`launcher="processes"`), or with `launcher="ray"` as Ray tasks
    (on the cluster at `ray_address`, or a local one of `jobs` CPUs).
    `progress` shows a progress display (in a notebook, or on a terminal), by default
    in a notebook; `events` takes every event of the matrix (`benchkit.run.events`)."""
    for name, value in (("trials", trials), ("flake_reruns", flake_reruns), ("jobs", jobs)):
        if value < 1:
            raise UsageError(name, "", f"must be at least 1, not {value}")
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost >= 0):
        raise UsageError(
            "max_cost", "", f"must be a finite amount of USD, 0 or more, not {max_cost}"
        )
    if launcher is not None and launcher not in LAUNCHERS:  # before anything is planned
        make_launcher(launcher)
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
        run_set=run_set,
    )
    with shown(progress, events) as sink:
        return run_pilots(
            specs,
            store=store,
            keep=keep,
            refresh_baseline=refresh_baseline,
            sandbox=sandbox,
            jobs=jobs,
            launcher=launcher,
            ray_address=ray_address,
            new_set=new_set,
            retry_failed=retry_failed,
            events=sink,
        )


def rerun_spec(row: Mapping[str, object], run_set: str) -> PilotSpec:
    """The spec of a recorded run (a `runs` row), to run again in `run_set`."""
    given = row.get("arm_vars") or []
    pairs = [str(v).partition("=") for v in given] if isinstance(given, list) else []
    checks = row.get("only_checks") or []
    cost = row.get("max_cost")
    return PilotSpec(
        bench=str(row["bench_path"]),
        arm=str(row["arm"]),
        executor=str(row["executor"] or ""),
        model=str(row["model"] or ""),
        max_cost=float(cost) if isinstance(cost, int | float) else None,
        trial=int(str(row["trial"] or 1)),
        flake_reruns=int(str(row["flake_reruns"] or 1)),
        arm_vars=tuple((name, value) for name, _, value in pairs),
        checks=tuple(str(c) for c in checks) if isinstance(checks, list) else (),
        run_set=run_set,
        rerun_of=str(row["run_id"]),
    )


def rerun(
    run_id: str,
    *,
    store: Store | Path | str | None = None,
    run_set: str = RERUNS,
    keep: bool = False,
    sandbox: str = "auto",
    launcher: LauncherName | None = None,
    ray_address: str | None = None,
    progress: bool | None = None,
    events: Sink | None = None,
) -> Run:
    """Run a recorded pilot's spec again (its bench's path, arm, executor, model,
    budget, trial, flake reruns, vars and checks, as they are now) as a new run in the
    set `run_set` that names the run it reruns (`rerun_of`). Its attempt follows the
    reruns of the same unit already in that set; its digests tell whether the bench or
    the arm changed since."""
    [row] = pick_runs(Store.at(store).writable().read("runs"), [run_id]).to_dicts()
    if row["origin"] != "pilot" or not row["bench_path"]:
        raise UsageError(run_id, "", f"a run of origin {row['origin']} cannot be run again here")
    with shown(progress, events) as sink:
        ran = run_pilots(
            [rerun_spec(row, run_set)],
            store=store,
            keep=keep,
            sandbox=sandbox,
            launcher=launcher,
            ray_address=ray_address,
            events=sink,
        )
    if not ran:
        raise UsageError(run_id, "", f"another benchkit is running it again in set {run_set}")
    return ran[0]
