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
from benchkit.run.behind import Behind
from benchkit.run.events import Event, Recorded, Sink
from benchkit.run.pilot import execute_plan, git_folders_ahead, spares_for
from benchkit.run.plan import Plan
from benchkit.run.spares import Spares
from benchkit.store.store import Store
from benchkit.workspace.signals import deferred_interrupts


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
    written, `planned` then (to begin on the pilots while the store is read), `launch`
    with the plans the run set needs, and `close` always, last."""

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

    def planned(self, plans: list[Plan]) -> None:
        """Called with the matrix's plans, before the store is read and the run set's
        units claimed: `launch` runs those the set needs, of them."""
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
    _spares: Spares | None = field(default=None, init=False, repr=False)

    def start(self, pilots: int) -> None:
        """What the first pilot's trees need of `git init` learned while the matrix
        is planned (see `git_folders_ahead`)."""
        git_folders_ahead()

    def planned(self, plans: list[Plan]) -> None:
        """The first pilot's trees begun while the store is read (see `spares_for`)."""
        self._spares = spares_for(plans)
        self._spares.make_next(waited=True)

    def launch(self, plans: list[Plan], store: Store, *, keep: bool, events: Sink) -> Launched:
        done = Launched()
        returned: list[str] = []  # the pilots that did not raise, in order
        recorded: dict[str, Run] = {}  # their runs as written, at once or by `behind`

        def told(event: Event) -> None:
            if isinstance(event, Recorded):
                recorded[event.run.run_id] = event.run
            events(event)

        # a pilot's trees made while the one before runs its checks (the first's, as the
        # store was read), and its record written while the one after runs them
        self._spares = spares = self._spares or spares_for(plans)
        spares.expect([p.repository for p in plans])
        behind = Behind(told)
        try:
            for n, p in enumerate(plans, 1):
                behind.holds = n < len(plans)
                try:
                    run = execute_plan(
                        p,
                        store,
                        keep=keep,
                        launcher=self.name,
                        events=told,
                        spares=spares,
                        behind=behind,
                    )
                    returned.append(run.run_id)
                except Exception as exc:  # recorded as its run's failure
                    done.faults.append(exc)
        finally:
            with deferred_interrupts():  # a second Ctrl-C: once the last record is told
                behind.settle()
                self.close()
            done.faults.extend(behind.faults)
        done.runs.extend(recorded[r] for r in returned if r in recorded)  # as written
        return done

    def close(self) -> None:
        if self._spares is not None:  # what is left of them, dropped
            self._spares.drop()
            self._spares = None

    def concurrent(self) -> int:
        return 1
