"""The arm protocol: what runs in the pilot's worktree to make the change.

An arm is anything with a `name` and `run(context) -> ArmOutcome`; `run` never raises
for the tool's own failures, it says how the arm ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from benchkit.bench.bench_file import Bench
from benchkit.records import NO_REPORT, ArmReport, PilotSpec
from benchkit.workspace.git import Repository
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


class Arm(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, context: ArmContext) -> ArmOutcome: ...


@runtime_checkable
class Secretive(Protocol):
    """An arm holding secret values that must be written nowhere."""

    def secrets(self) -> list[str]: ...

    def secret_names(self) -> list[str]: ...
