"""The arm protocol: what runs in the pilot's worktree to make the change.

An arm is an `Arm`: a `name` and `run(context) -> ArmOutcome` of its own (`run` never
raises for the tool's own failures, it says how the arm ended), and the members a
pilot asks of every arm, each with its default: the `executor` it runs as, the
`model` its file names, the `source` file it is made of, the `scratch` files it
writes for itself, whether it is `simulated`, whether it reads `--var` values
(`takes_vars`) and whether its report may count tokens the price table costs
(`priced`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from benchkit.arm_report import NO_REPORT, ArmReport
from benchkit.bench.bench_file import Bench
from benchkit.records import PilotSpec
from benchkit.workspace.repository import Repository
from benchkit.workspace.sandbox import Sandbox


@dataclass(frozen=True, kw_only=True)
class ArmContext:
    bench: Bench
    repository: Repository
    spec: PilotSpec
    worktree: Path
    home: Path  # the arm's own HOME, outside the worktree
    logs: Path
    sandbox: Sandbox | None = None  # where its commands run; None: as they are


@dataclass(frozen=True, kw_only=True)
class ArmOutcome:
    ok: bool
    failure_kind: str | None = None
    detail: str | None = None
    retryable: bool | None = None
    timed_out: bool = False
    exit_code: int | None = None
    report: ArmReport = NO_REPORT


DEFAULT_EXECUTOR = "local"  # the label of a pilot whose arm names no executor


class Arm:
    """The system under test. A subclass gives `name` and `run`, and overrides what it
    knows better than the defaults."""

    name: str
    # whether its run is a moment's work of benchkit's own (a patch applied, or nothing)
    # that runs no tool: the run of the pilot before need not be told before it begins
    # (see `benchkit.run.behind`), only before the checks do
    instant: ClassVar[bool] = False

    @property
    def executor(self) -> str:
        """The executor label a pilot that names none runs it as."""
        return DEFAULT_EXECUTOR

    @property
    def model(self) -> str:
        """The model its file names, when the pilot gives none; empty: none."""
        return ""

    @property
    def source(self) -> Path | None:
        """The file it is made of (an arm file, a patch), whose digest a run set keeps;
        None: it is benchkit's own."""
        return None

    @property
    def made_of(self) -> bytes | None:
        """What its digest is of: its source file's bytes by default."""
        return None if self.source is None else self.source.read_bytes()

    @property
    def scratch(self) -> tuple[str, ...]:
        """What it writes in the worktree for itself (a cache, a history), as git
        patterns: left out of its change."""
        return ()

    @property
    def network(self) -> bool:
        """Whether it may use the network (in a sandbox that can take it away)."""
        return True

    @property
    def takes_vars(self) -> bool:
        """Whether it reads `--var` values (an arm file's `[vars]`)."""
        return False

    @property
    def priced(self) -> bool:
        """Whether its report may give tokens without a cost, which the price table
        costs (an agent's): the table is read once a matrix has such an arm."""
        return False

    @property
    def simulated(self) -> bool:
        """Whether its runs are simulated data, never evidence about a real tool."""
        return False

    def run(self, context: ArmContext) -> ArmOutcome:
        raise NotImplementedError


def is_scratch(path: str, patterns: Sequence[str]) -> bool:
    """Whether a worktree path (a folder as `folder/`) is one of an arm's `scratch`
    patterns, or in one."""
    return any(
        fnmatch.fnmatchcase(path.rstrip("/"), p.strip("/"))
        or fnmatch.fnmatchcase(path, p.strip("/") + "/*")
        for p in patterns
    )


@runtime_checkable
class Secretive(Protocol):
    """An arm holding secret values that must be written nowhere."""

    def secrets(self) -> list[str]: ...

    def secret_names(self) -> list[str]: ...
