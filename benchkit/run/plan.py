"""Planning pilots: every input checked before anything runs or is written.

A bench that does not load, a ref that names no commit, an arm that names nothing,
a missing `--var`: each is a `BenchkitError` raised here, before the first stage of
the first pilot, so a bad input writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from benchkit.arms.protocol import Arm
from benchkit.arms.registry import resolve_arm
from benchkit.bench.bench_file import Bench
from benchkit.bench.find import find_bench
from benchkit.errors import BenchError
from benchkit.store.records import PilotSpec
from benchkit.workspace.environment import Recipe, recipe
from benchkit.workspace.git import Repository, prepare_repository

DEFAULT_EXECUTOR = "local"  # the label of a pilot whose arm names no executor


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A pilot whose inputs have all been checked."""

    spec: PilotSpec
    bench: Bench
    arm: Arm
    repository: Repository
    recipe: Recipe  # what the bench's checks run with


def plan(specs: list[PilotSpec]) -> list[Plan]:
    """Check every input of the pilots; raises a `BenchkitError`, writes nothing."""
    ready: dict[str, tuple[Bench, Repository, Recipe]] = {}
    plans = []
    for spec in specs:
        if spec.bench not in ready:
            bench = find_bench(spec.bench)
            repository = prepare_repository(bench)
            ready[spec.bench] = bench, repository, recipe(bench, repository)
        bench, repository, env_recipe = ready[spec.bench]
        bench = only_checks(bench, spec.checks)
        arm = resolve_arm(bench, spec)
        if not spec.executor:
            spec = replace(spec, executor=getattr(arm, "executor", DEFAULT_EXECUTOR))
        plans.append(
            Plan(spec=spec, bench=bench, arm=arm, repository=repository, recipe=env_recipe)
        )
    return plans


def only_checks(bench: Bench, names: tuple[str, ...]) -> Bench:
    """The bench with only the named checks (all when none are named)."""
    if not names:
        return bench
    known = [c.name for c in bench.file.checks]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BenchError(
            bench.path, "checks", f"no check named {unknown[0]!r} (checks: {', '.join(known)})"
        )
    tests = bench.file.tests if bench.file.tests and bench.file.tests.check in names else None
    checks = [c for c in bench.file.checks if c.name in names]
    return bench.model_copy(
        update={"file": bench.file.model_copy(update={"checks": checks, "tests": tests})}
    )
