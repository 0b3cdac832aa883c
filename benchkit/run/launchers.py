"""Every kind of launcher by the name `--launcher` takes (see `benchkit.run.launcher`).
A new kind is one subclass and one entry here: its module and its class, imported when
a launch asks for it (a serial matrix never imports Ray's launcher, nor the workers')."""

from __future__ import annotations

from importlib import import_module

from benchkit.errors import UsageError
from benchkit.records import LAUNCHERS as RECORDED
from benchkit.run.launcher import Launcher

LAUNCHERS: dict[str, str] = {
    "serial": "benchkit.run.launcher:Serial",
    "processes": "benchkit.run.workers:Processes",
    "ray": "benchkit.run.cluster:OnRay",
}
assert tuple(LAUNCHERS) == RECORDED, "a run records its launcher by one of these names"


def launcher_kind(name: str) -> type[Launcher]:
    """The kind of launcher `name` names. Raises `UsageError` naming the kinds there are."""
    where = LAUNCHERS.get(name)
    if where is None:
        raise UsageError("launcher", "", f"is one of {', '.join(LAUNCHERS)}, not {name!r}")
    module, _, kind = where.partition(":")
    found: type[Launcher] = getattr(import_module(module), kind)
    return found


def make_launcher(
    name: str | None,
    *,
    jobs: int = 1,
    address: str | None = None,
    refresh_baseline: bool = False,
    sandbox: str = "none",
) -> Launcher:
    """The launcher `name` names (none: `processes` for more than one job, else
    `serial`), told the Ray cluster's `address` where it takes one. Raises `UsageError`
    naming the kinds there are."""
    kind = launcher_kind(name or ("processes" if jobs > 1 else "serial"))
    made = kind(jobs=jobs, refresh_baseline=refresh_baseline, sandbox=sandbox)
    if hasattr(made, "address"):
        made.address = address
    return made
