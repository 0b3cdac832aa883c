"""Every kind of launcher by the name `--launcher` takes (see `benchkit.run.launcher`).
A new kind is one subclass and one entry here."""

from __future__ import annotations

from benchkit.errors import UsageError
from benchkit.records import LAUNCHERS as RECORDED
from benchkit.run.cluster import OnRay
from benchkit.run.launcher import Launcher, Serial
from benchkit.run.workers import Processes

LAUNCHERS: dict[str, type[Launcher]] = {"serial": Serial, "processes": Processes, "ray": OnRay}
assert tuple(LAUNCHERS) == RECORDED, "a run records its launcher by one of these names"


def make_launcher(
    name: str | None,
    *,
    jobs: int = 1,
    address: str | None = None,
    refresh_baseline: bool = False,
    sandbox: str = "none",
) -> Launcher:
    """The launcher `name` names (none: `processes` for more than one job, else
    `serial`). Raises `UsageError` naming the kinds there are."""
    chosen = name or ("processes" if jobs > 1 else "serial")
    kind = LAUNCHERS.get(chosen)
    if kind is None:
        raise UsageError("launcher", "", f"is one of {', '.join(LAUNCHERS)}, not {chosen!r}")
    made = kind(jobs=jobs, refresh_baseline=refresh_baseline, sandbox=sandbox)
    if isinstance(made, OnRay):
        made.address = address
    return made
