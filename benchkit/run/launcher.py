"""The launcher: what runs a matrix's planned pilots, and hands back their runs.

A kind of launcher is a subclass named in `benchkit.run.launchers.LAUNCHERS`: serial
(this process, one after another), processes (worker processes, `--jobs`) and ray
(Ray tasks). Each runs every plan it is given with `execute_plan`, which records the
run in the store whatever happens, and returns the runs in the order of the plans
with the errors of the pilots that raised one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from benchkit.records import LauncherName, Run
from benchkit.run.events import Sink
from benchkit.run.pilot import execute_plan, spares_for
from benchkit.run.plan import Plan
from benchkit.store.store import Store


class LaunchWarning(UserWarning):
    """What a launch says and goes on: more pilots at a time than this machine has
    cores, a local cluster started again after a failed start."""


@dataclass(frozen=True, kw_only=True)
class Launched:
    """What a launcher hands back: the runs, in the order of their plans, and the
    errors of the pilots that raised one (each recorded as its run's failure)."""

    runs: list[Run] = field(default_factory=list)
    faults: list[Exception] = field(default_factory=list)


@dataclass(kw_only=True)
class Launcher(ABC):
    """Runs planned pilots. `start` is called before the matrix is planned (to start
    workers meanwhile), `check` once every input is checked and before anything is
    written, `launch` with the plans the run set needs, and `close` always, last."""

    name: ClassVar[LauncherName]
    jobs: int = 1  # pilots at a time
    refresh_baseline: bool = False  # with a launcher that plans again where it runs
    sandbox: str = "none"  # likewise

    def start(self, pilots: int) -> None:
        """Called before planning the matrix's `pilots`."""
        return None

    def check(self) -> None:
        """Raises a `BenchkitError` when the launcher cannot run here."""
        return None

    @abstractmethod
    def launch(self, plans: list[Plan], store: Store, *, keep: bool, events: Sink) -> Launched:
        """Each plan run and recorded; an interrupt stops them (each records its run)
        and is raised again."""

    def close(self) -> None:
        """What the launcher started, ended."""
        return None

    def concurrent(self) -> int:
        """How many pilots it runs at a time."""
        return self.jobs


@dataclass(kw_only=True)
class Serial(Launcher):
    """One pilot after another, in this process."""

    name: ClassVar[LauncherName] = "serial"

    def launch(self, plans: list[Plan], store: Store, *, keep: bool, events: Sink) -> Launched:
        done = Launched()
        spares = spares_for(plans)  # a pilot's trees made while the one before runs its checks
        try:
            for p in plans:
                try:
                    run = execute_plan(
                        p, store, keep=keep, launcher=self.name, events=events, spares=spares
                    )
                    done.runs.append(run)
                except Exception as exc:  # recorded as its run's failure
                    done.faults.append(exc)
        finally:
            spares.drop()
        return done

    def concurrent(self) -> int:
        return 1
