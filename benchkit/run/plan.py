"""Planning pilots: every input checked before anything runs or is written.

A bench that does not load, a ref that names no commit, an arm that names nothing,
a missing `--var`: each is a `BenchkitError` raised here, before the first stage of
the first pilot, so a bad input writes nothing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from benchkit.arms.protocol import Arm
from benchkit.arms.registry import arm_digest, resolve_arm
from benchkit.bench.bench_file import Bench
from benchkit.bench.find import find_bench
from benchkit.bench.lock import bench_digest, lock_path, read_lock
from benchkit.bench.price_file import NO_PRICES, PriceTable, price_table
from benchkit.errors import ArmError, BenchError
from benchkit.records import PilotSpec
from benchkit.workspace.environment import recipe
from benchkit.workspace.recipe import Recipe
from benchkit.workspace.repository import Repository, prepare_repository
from benchkit.workspace.sandbox import choose, probe_ahead

Unit = tuple[str, str, str, str, float | None, int]


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A pilot whose inputs have all been checked."""

    spec: PilotSpec
    bench: Bench
    arm: Arm
    repository: Repository
    recipe: Recipe  # what the bench's checks run with
    refresh_baseline: bool = False  # run the checks at base again, whatever is cached
    known_flaky: frozenset[tuple[str, str]] = frozenset()  # (file, id), from the lock file
    sandbox: str = "none"  # the kind its arm and checks run in (see `SANDBOXES`)
    bench_digest: str = ""  # of the bench file as planned
    arm_digest: str | None = None  # of the arm's file and vars (see `arm_digest`)
    prices: PriceTable = NO_PRICES  # what a cost from tokens is computed with

    @property
    def unit(self) -> Unit:
        """What its run set counts once: (bench, arm, executor, model, max_cost, trial),
        as its run records them."""
        s = self.spec
        return self.bench.name, s.arm, s.executor, s.model, s.max_cost, s.trial


def plan(
    specs: list[PilotSpec], *, refresh_baseline: bool = False, sandbox: str = "none"
) -> list[Plan]:
    """Check every input of the pilots; raises a `BenchkitError`, writes nothing. With
    `refresh_baseline`, the first pilot of each bench runs its checks at base again;
    `sandbox` is `auto`, `bwrap` or `none` (see `benchkit.workspace.sandbox.choose`)."""
    named = None if sandbox == "auto" else choose(sandbox)  # refused before any bench is read
    if named is None:
        probe_ahead()  # beside the benches made ready
    ready = _ready(list(dict.fromkeys(spec.bench for spec in specs)))
    confined = named or choose(sandbox)
    prices: PriceTable | None = None  # read once, for the first arm whose tool may count tokens
    plans = []
    seen: set[str] = set()
    for spec in specs:
        first = spec.bench not in seen
        seen.add(spec.bench)
        bench, repository, env_recipe, flaky = ready[spec.bench]
        bench = only_checks(bench, spec.checks)
        arm = resolve_arm(bench, spec)
        if prices is None and arm.priced:
            prices = price_table()
        if not spec.executor:
            spec = replace(spec, executor=arm.executor)
        if not spec.model:  # the model an arm file names, recorded as the run's
            spec = replace(spec, model=arm.model)
        plans.append(
            Plan(
                spec=spec,
                bench=bench,
                arm=arm,
                repository=repository,
                recipe=env_recipe,
                refresh_baseline=refresh_baseline and first,
                known_flaky=flaky,
                sandbox=confined,
                bench_digest=bench_digest(bench),
                arm_digest=arm_digest(arm, spec),
                prices=prices or NO_PRICES,
            )
        )
    _vars_taken(plans)
    _predictions_match(plans)
    return plans


Ready = tuple[Bench, Repository, Recipe, frozenset[tuple[str, str]]]
PREPARING = 4  # benches made ready at once: git's processes, mostly waited on


def _ready(names: list[str]) -> dict[str, Ready]:
    """Each bench found, its repository prepared (each mirror fetched once), its
    environment's recipe and the tests its lock file found flaky: a few benches at a
    time (a task set of hundreds commits two patches each). The first bench in order
    whose input is bad raises its error."""
    benches = [find_bench(name) for name in names]
    fetched: dict[str, Path] = {}  # a repository's mirror, fetched once a planning

    def made(bench: Bench) -> Ready:
        repository = prepare_repository(bench, fetched)
        env_recipe = recipe(bench, repository)
        return bench, repository, env_recipe, known_flaky(bench, repository, env_recipe)

    if len(benches) == 1:
        return {names[0]: made(benches[0])}
    with ThreadPoolExecutor(PREPARING, thread_name_prefix="benchkit-plan") as pool:
        return dict(zip(names, pool.map(made, benches), strict=True))


def _vars_taken(plans: list[Plan]) -> None:
    """Raises `ArmError` when `--var` values are given and no arm of the matrix takes
    variables (only built-in arms): a value no arm reads is a mistake, not a no-op.
    Each arm file checks the names it is given itself."""
    given = sorted({name for p in plans for name, _ in p.spec.arm_vars})
    if given and not any(p.arm.takes_vars for p in plans):
        arms = ", ".join(sorted({p.spec.arm for p in plans}))
        raise ArmError(arms, "--var", f"no arm here takes variables (given: {given[0]})")


def _predictions_match(plans: list[Plan]) -> None:
    """Raises `ArmError` for a `prediction:FILE` arm with a prediction for none of the
    matrix's benches (their ids and the file's do not meet: a mistake, not a result)."""
    if not any(p.spec.arm.startswith("prediction:") for p in plans):
        return  # the kind's module not even loaded
    from benchkit.arms.prediction import Predicted

    arms: dict[str, list[Predicted]] = {}
    for p in plans:
        if isinstance(p.arm, Predicted):
            arms.setdefault(p.spec.arm, []).append(p.arm)
    for name, predicted in arms.items():
        if all(a.prediction is None for a in predicted):
            wanted = sorted({a.instance_id for a in predicted})
            raise ArmError(
                name,
                "",
                f"no prediction for any of the benches' instances ({', '.join(wanted[:3])}"
                f"{', ...' if len(wanted) > 3 else ''})",
            )


def known_flaky(bench: Bench, repo: Repository, made: Recipe) -> frozenset[tuple[str, str]]:
    """The tests the bench's lock file found flaky at base, while the lock is current."""
    lock = read_lock(lock_path(bench))
    if lock is None or not lock.current(
        bench_digest(bench), repo.base_sha, repo.human_sha, made.key
    ):
        return frozenset()
    return lock.flaky_at_base()


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
