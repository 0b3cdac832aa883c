"""Experiment files (`experiment.toml`): a matrix to commit beside the notebook that
reads its runs, run by `benchkit run experiment.toml`.

    set = "upgrade-v2"              # the run set; resumed by running the file again
    bench = ["demo"]                # names or paths (relative to this file)
    arm = ["noop", "replay:agent-a", "arms/my-tool.toml"]
    executor = ["cli"]              # optional, like model
    model = ["small", "large"]
    trials = 3
    max_cost = 0.5
    checks = ["install", "test"]    # optional: all the bench's checks
    store = "runs"                  # optional, relative to this file
    jobs = 2                        # optional: how it runs, never what
    launcher = "processes"

    [vars]                          # an arm file's [vars]
    TOOL_VERSION = "2.1"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from benchkit.bench.files import Strict, validated
from benchkit.bench.names import NAME
from benchkit.errors import UsageError


def _listed(value: object) -> object:
    """One name where a list is asked for (`bench = "demo"`) is a list of one."""
    return (value,) if isinstance(value, str) else value


Names = Annotated[tuple[StrictStr, ...], Field(min_length=1), BeforeValidator(_listed)]
Several = Annotated[tuple[StrictStr, ...], BeforeValidator(_listed)]


class ExperimentFile(Strict):
    set: Annotated[str, Field(pattern=NAME)] = "default"
    bench: Names = ("demo",)
    arm: Names = ("noop",)
    executor: Several = ()
    model: Several = ()
    trials: Annotated[StrictInt, Field(ge=1)] = 1
    max_cost: Annotated[StrictFloat | StrictInt, Field(ge=0, allow_inf_nan=False)] | None = None
    flake_reruns: Annotated[StrictInt, Field(ge=1)] = 1
    checks: Several = ()
    vars: dict[str, StrictStr] = Field(default_factory=dict)
    store: StrictStr | None = None
    jobs: Annotated[StrictInt, Field(ge=1)] = 1
    # a kind of the launchers' and sandboxes' registries, which the flows hold (see
    # `kinds` below): a new kind needs no change here
    launcher: StrictStr | None = None
    ray_address: StrictStr | None = None
    sandbox: StrictStr = "auto"
    refresh_baseline: StrictBool = False


def _beside(folder: Path, value: str) -> str:
    """A path written relative to the file, made absolute; a name as it is."""
    kind, colon, rest = value.partition(":")
    if colon and kind == "replay":
        return f"replay:{_beside(folder, rest)}"
    candidate = folder / value
    return str(candidate.resolve()) if candidate.exists() else value


def _a_path(value: str) -> bool:
    """Whether a bench or an arm is written as a path (a name is looked up)."""
    return "/" in value or value.endswith(".toml") or value.startswith(".")


def _missing(path: Path, field: str, values: tuple[str, ...]) -> None:
    """Raises `UsageError` naming the file and the field of a path that is not there."""
    folder = path.resolve().parent
    for n, value in enumerate(values):
        kind, colon, rest = value.partition(":")
        replayed = colon and kind == "replay"  # a patch file, or one the bench names
        given = rest if replayed else value
        a_path = given.endswith(".patch") if replayed else _a_path(given)
        if a_path and not (folder / Path(given).expanduser()).exists():
            where = f"{field}.{n}" if len(values) > 1 else field
            raise UsageError(path, where, f"{given}: no such file (paths are from this file)")


def experiment(
    path: Path | str, kinds: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """The experiment file as the keyword arguments of `benchkit.pilot`; raises
    `UsageError` naming the file and the field. `kinds` gives what a field such as
    `sandbox` or `launcher` may name (the registries' names); a field it leaves out is
    checked as `benchkit.pilot` runs."""
    path = Path(path)
    file = validated(ExperimentFile, path, UsageError)
    for field, known in (kinds or {}).items():
        value = getattr(file, field)
        if value is not None and value not in known:
            raise UsageError(path, field, f"{value!r} is not one of {', '.join(known)}")
    _missing(path, "bench", file.bench)
    _missing(path, "arm", file.arm)
    folder = path.resolve().parent
    store = None if file.store is None else str(folder / Path(file.store).expanduser())
    return {
        "bench": [_beside(folder, b) for b in file.bench],
        "arm": [_beside(folder, a) for a in file.arm],
        "executor": list(file.executor),
        "model": list(file.model),
        "trials": file.trials,
        "max_cost": None if file.max_cost is None else float(file.max_cost),
        "flake_reruns": file.flake_reruns,
        "checks": list(file.checks),
        "arm_vars": dict(file.vars),
        "store": store,
        "run_set": file.set,
        "jobs": file.jobs,
        "launcher": file.launcher,
        "ray_address": file.ray_address,
        "sandbox": file.sandbox,
        "refresh_baseline": file.refresh_baseline,
    }
